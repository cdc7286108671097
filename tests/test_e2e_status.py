"""What each robots.txt status means: rules, allow all, or wait and retry."""

from __future__ import annotations

import itertools
import logging

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import BUILTIN_ENABLED, run_crawl
from tests.servers import Reply, ServerPool, rules

PRIVATE_RULES = "# shop\nUser-agent: *\nDisallow: /private\nAllow: /\n"
PERMISSIVE = "User-agent: *\nAllow: /\n"
PUBLIC = [f"/public/{n}" for n in range(5)]
PRIVATE = [f"/private/{n}" for n in range(3)]


def _gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


@deferred_f_from_coro_f
async def test_200_rules_drop_disallowed_requests(servers: ServerPool) -> None:
    site = servers.add(rules(PRIVATE_RULES))
    public, private = site.url("/public/1"), site.url("/private/1")

    result = await run_crawl([public, private])

    assert result.urls == {public}
    failure = result.failure_for(private)
    assert isinstance(failure.exception, IgnoreRequest)
    assert failure.message == "Forbidden by robots.txt"
    expected_log = (
        f"Forbidden by robots.txt: <GET {private}> "
        f"(Disallow: /private, line 3 of {site.url('/robots.txt')})"
    )
    assert expected_log in result.messages(logging.DEBUG)
    assert result.stat("robotstxt/forbidden") == 1
    assert result.stat("robotstxt/response_status_count/200") == 1
    assert site.crawled_paths() == {"/public/1"}


@pytest.mark.parametrize("status", [200, 204])
@deferred_f_from_coro_f
async def test_an_empty_robots_txt_allows_everything(servers: ServerPool, status: int) -> None:
    """An empty 2xx body is a robots.txt without rules (RFC 9309 2.2.2: no rule, allowed)."""
    site = servers.add(rules("", status=status))
    pages = site.urls(["/", "/private/1", "/page/2"])

    result = await run_crawl(pages)

    assert result.urls == set(pages)
    assert result.failures == []
    assert result.stat("robotstxt/forbidden") == 0
    assert result.stat("robotstxt/unavailable") == 0
    assert result.stat(f"robotstxt/response_status_count/{status}") == 1
    assert site.crawled_paths() == {"/", "/private/1", "/page/2"}


@pytest.mark.parametrize("status", [404, 403, 410])
@deferred_f_from_coro_f
async def test_client_error_allows_everything(servers: ServerPool, status: int) -> None:
    """An error page is not rules, even when its body reads ``Disallow: /``."""
    site = servers.add(rules("User-agent: *\nDisallow: /\n", status=status))
    pages = site.urls(["/", "/private/1", "/page/2"])

    result = await run_crawl(pages)

    assert result.urls == set(pages)
    assert result.failures == []
    assert len(site.robots_fetches) == 1
    assert result.stat("robotstxt/unavailable") == 1
    assert result.stat(f"robotstxt/response_status_count/{status}") == 1


@pytest.mark.parametrize("status", [429, 500, 503])
@deferred_f_from_coro_f
async def test_server_error_defers_then_expires(servers: ServerPool, status: int) -> None:
    """Unreachable means complete disallow: nothing crawled, retried, then expired."""
    site = servers.add(rules(PERMISSIVE, status=status))
    pages = site.urls(PUBLIC)

    result = await run_crawl(pages, {"REP9309_DEFER_TIMEOUT": 1.5})

    assert site.crawled_paths() == set()
    assert result.urls == set()
    assert result.ignored_urls == set(pages)
    assert all(isinstance(f.exception, IgnoreRequest) for f in result.failures)
    assert len(site.robots_fetches) >= 2
    assert result.stat("robotstxt/deferred/expired") == len(pages)
    assert result.stat("robotstxt/deferred") >= len(pages)
    assert result.stat("robotstxt/unreachable") >= 1
    assert result.stat(f"robotstxt/response_status_count/{status}") >= 2
    # Expired at the deadline, then the spider closed at once.
    # (Upper bounds are loose for loaded machines, far below the CLOSESPIDER_TIMEOUT net.)
    assert 1.3 < max(f.time for f in result.failures) - result.started < 8
    assert result.duration < 12


@deferred_f_from_coro_f
async def test_503_twice_then_200_releases_deferred_requests(servers: ServerPool) -> None:
    site = servers.add(
        [Reply(503, "busy"), Reply(503, "busy"), rules(PRIVATE_RULES)],
    )
    public, private = site.urls(PUBLIC), site.urls(PRIVATE)

    result = await run_crawl(public + private)

    assert len(site.robots_fetches) == 3
    assert result.urls == set(public)
    assert result.forbidden_urls == set(private)
    assert len(result.responses) + len(result.failures) == len(public) + len(private)
    assert site.crawled_paths() == set(PUBLIC)
    assert result.stat("robotstxt/deferred/released") >= len(public)
    assert result.stat("robotstxt/deferred/expired") == 0
    # No page was downloaded before robots.txt finally answered.
    answered = site.robots_fetches[-1].answered
    assert answered is not None
    assert min(entry.received for entry in site.page_requests) >= answered


@pytest.mark.parametrize(
    ("status", "headers", "min_gap", "max_gap"),
    [
        (503, {"Retry-After": "1"}, 0.9, 2.5),
        (429, {"Retry-After": "1"}, 0.9, 2.5),
        (503, {}, 0.1, 0.8),
    ],
    ids=["503-retry-after", "429-retry-after", "no-retry-after"],
)
@deferred_f_from_coro_f
async def test_retry_after_sets_the_refetch_time(
    servers: ServerPool, status: int, headers: dict[str, str], min_gap: float, max_gap: float
) -> None:
    site = servers.add([Reply(status, "busy", headers), rules(PERMISSIVE)])
    page = site.url("/page/1")

    result = await run_crawl([page], {"REP9309_RETRY_DELAY": 0.2})

    first, second = (entry.received for entry in site.robots_fetches)
    assert min_gap <= second - first <= max_gap
    assert result.urls == {page}


@deferred_f_from_coro_f
async def test_unreachable_backoff_doubles_up_to_the_cap(servers: ServerPool) -> None:
    site = servers.add(Reply(503, "busy"))

    await run_crawl(
        [site.url("/page/1")],
        {"REP9309_RETRY_DELAY": 0.2, "REP9309_RETRY_MAX_DELAY": 0.8, "REP9309_DEFER_TIMEOUT": 3},
    )

    gaps = _gaps([entry.received for entry in site.robots_fetches])
    assert len(gaps) >= 3, gaps
    assert gaps[0] == pytest.approx(0.2, abs=0.15)
    assert gaps[1] == pytest.approx(0.4, abs=0.15)
    assert all(gap <= 0.8 + 0.15 for gap in gaps), gaps
    assert gaps[2] == pytest.approx(0.8, abs=0.15)


@pytest.mark.parametrize(
    ("robots", "crawled"),
    [(rules("User-agent: *\nDisallow: /\n", status=404), False), (Reply(503, PERMISSIVE), True)],
    ids=["404-page-read-as-rules", "503-crawled-anyway"],
)
@deferred_f_from_coro_f
async def test_builtin_reads_error_pages_as_rules(
    servers: ServerPool, robots: Reply, crawled: bool
) -> None:
    """Documented contrast: what Scrapy's middleware does with the same answers.

    One request only: see test_e2e_origins for what the built-in does to the
    others that arrive while robots.txt is on its way.
    """
    site = servers.add(robots)
    page = site.url("/public/1")

    result = await run_crawl([page], enable=BUILTIN_ENABLED)

    assert result.urls == ({page} if crawled else set())
