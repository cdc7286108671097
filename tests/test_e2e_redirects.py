"""Redirected robots.txt: up to 5 hops across hosts apply; more, or a loop, allow all."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import run_crawl
from tests.servers import Reply, ScriptedOrigin, ServerPool, redirect, rules

FINAL_RULES = "User-agent: *\nDisallow: /private\n"
STATUSES = (301, 302, 307, 308, 301, 302, 307)


def _chain(servers: ServerPool, hops: int) -> tuple[ScriptedOrigin, list[ScriptedOrigin]]:
    """The crawled origin, whose robots.txt redirects ``hops`` times across hosts.

    The last host serves rules; every other host only redirects (at /hop-N).
    """
    final = servers.add(routes={"/final-robots.txt": [rules(FINAL_RULES)]})
    target = final.url("/final-robots.txt")
    middle: list[ScriptedOrigin] = [final]
    for hop in range(hops - 1, 0, -1):
        host = servers.add(routes={f"/hop-{hop}": [redirect(target, STATUSES[hop])]})
        target = host.url(f"/hop-{hop}")
        middle.insert(0, host)
    crawled = servers.add(redirect(target, STATUSES[0]))
    return crawled, middle


@pytest.mark.parametrize("hops", [3, 5])
@deferred_f_from_coro_f
async def test_redirect_chain_rules_apply_to_the_original_origin(
    servers: ServerPool, hops: int
) -> None:
    crawled, chain = _chain(servers, hops)
    public, private = crawled.url("/public/1"), crawled.url("/private/1")

    result = await run_crawl([public, private])

    assert result.urls == {public}
    assert result.forbidden_urls == {private}
    assert len(crawled.robots_fetches) == 1
    assert [len(host.log) for host in chain] == [1] * hops
    assert all(host.page_requests == [] for host in chain)
    assert result.stat("robotstxt/redirects") >= 1


@deferred_f_from_coro_f
async def test_six_redirects_mean_unavailable(servers: ServerPool) -> None:
    crawled, chain = _chain(servers, 6)
    pages = crawled.urls(["/public/1", "/private/1"])

    result = await run_crawl(pages)

    assert result.urls == set(pages)
    assert result.failures == []
    final = chain[-1]
    assert final.requests_for("/final-robots.txt") == []
    assert result.stat("robotstxt/unavailable") == 1


@deferred_f_from_coro_f
async def test_redirect_loop_means_unavailable(servers: ServerPool) -> None:
    crawled = servers.add()
    other = servers.add(routes={"/loop": [redirect(crawled.url("/robots.txt"), 302)]})
    crawled.script("/robots.txt", [redirect(other.url("/loop"), 302)])
    pages = crawled.urls(["/public/1", "/private/1"])

    result = await run_crawl(pages)

    assert result.urls == set(pages)
    assert result.failures == []
    assert 1 <= len(crawled.robots_fetches) <= 6
    assert result.stat("robotstxt/unavailable") == 1


@pytest.mark.parametrize(
    "location",
    ["http://[::1/robots.txt", "http://files.test:99999/robots.txt", "ftp://files.test/robots.txt"],
)
@deferred_f_from_coro_f
async def test_a_redirect_that_cannot_be_followed_means_unavailable(
    servers: ServerPool, location: str
) -> None:
    """A Location that is no URL (or no http(s) one) is a redirect that cannot be
    followed (RFC 9309 2.3.1.2): unavailable, allow all; no error logged, no retry."""
    crawled = servers.add()
    crawled.script("/robots.txt", [redirect(location, 301)])
    pages = crawled.urls(["/public/1", "/private/1"])

    result = await run_crawl(pages)

    assert result.urls == set(pages)
    assert result.stat("robotstxt/unavailable") == 1
    assert len(crawled.robots_fetches) == 1
    assert [r.getMessage() for r in result.logs if r.levelname == "ERROR"] == []


@deferred_f_from_coro_f
async def test_a_page_redirected_to_a_disallowed_url_is_not_downloaded(
    servers: ServerPool,
) -> None:
    """Scrapy's RedirectMiddleware schedules the target as a new request: it is decided
    like any other, by its own origin's robots.txt, here one fetched for the redirect."""
    home = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    other = servers.add(rules("User-agent: *\nDisallow: /secret\n"))
    home.script("/moved", [redirect(home.url("/private/1"))])
    home.script("/away", [redirect(other.url("/secret/1"))])

    result = await run_crawl(home.urls(["/moved", "/away"]))

    assert result.urls == set()
    assert result.forbidden_urls == {home.url("/private/1"), other.url("/secret/1")}
    assert home.requests_for("/private/1") == [] and other.page_requests == []
    assert len(other.robots_fetches) == 1


@pytest.mark.parametrize("location", [None, "", "   "])
@deferred_f_from_coro_f
async def test_a_redirect_without_a_location_means_unreachable(
    servers: ServerPool, location: str | None
) -> None:
    """A 3xx with no target (no ``Location``, or an empty one) is no redirect but a status
    with no rules: unreachable, complete disallow, retried, then the requests expire.
    (An empty ``Location`` joined to the robots.txt URL would read as a loop back to it:
    unavailable, allow all.)"""
    headers = {} if location is None else {"Location": location}
    crawled = servers.add([Reply(status=302, headers=headers)])
    pages = crawled.urls(["/public/1", "/private/1"])

    result = await run_crawl(pages, {"REP9309_DEFER_TIMEOUT": 1.5})

    assert crawled.page_requests == []
    assert result.ignored_urls == set(pages)
    assert result.stat("robotstxt/unavailable") == 0
    assert result.stat("robotstxt/unreachable") >= 1
    assert result.stat("robotstxt/deferred/expired") == len(pages)
