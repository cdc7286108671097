"""Usage preferences in a crawl: ``rep9309_content_usage``, REP9309_REQUIRE_USAGE,
REP9309_EXTRA_USER_AGENTS, their stats, reports and start-up warnings (README "Usage
preferences")."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.closing import expiring_as_the_spider_closes
from tests.crawl import CrawlResult, ours_class, run_crawl
from tests.servers import Reply, ServerPool, hang, redirect, rules

META = "rep9309_content_usage"

#: draft-ietf-aipref-attach-05's example with a Content-Signal line: training refused but
#: under /ai-ok/, search allowed everywhere by the signal; ai-input has no label.
PREFERENCES = """\
User-agent: *
Content-Signal: search=yes, ai-input=no
Disallow: /private/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y
"""

PURPOSE_GROUPS = """\
User-agent: *
Disallow: /private/

User-agent: Google-Extended
Disallow: /no-ai/
"""


def page(content_usage: str) -> list[Reply]:
    """An HTML page answered with a ``Content-Usage`` response header."""
    headers = {"Content-Type": "text/html", "Content-Usage": content_usage}
    return [Reply(body=b"<html><body>page</body></html>", headers=headers)]


def usage_by_url(result: CrawlResult) -> dict[str, Any]:
    """Each downloaded response's ``rep9309_content_usage`` (``"absent"`` if none)."""
    return {seen.url: seen.request.meta.get(META, "absent") for seen in result.responses}


def debug_lines(result: CrawlResult, start: str) -> list[str]:
    return [
        line for line in result.messages(logging.DEBUG, "scrapy_rep9309") if line.startswith(start)
    ]


# --- rep9309_content_usage ---------------------------------------------------------------


@deferred_f_from_coro_f
async def test_robots_txt_preferences_reach_the_response(servers: ServerPool) -> None:
    stating = servers.add(rules(PREFERENCES))
    silent = servers.add(rules("User-agent: *\nDisallow: /private/\n"))
    missing = servers.add()  # a 404 robots.txt: no rules, no preferences
    plan = [
        *stating.urls(["/news/1", "/ai-ok/1", "/private/1"]),
        silent.url("/news/1"),
        missing.url("/news/1"),
    ]

    result = await run_crawl(plan)

    assert usage_by_url(result) == {
        stating.url("/news/1"): {"train-ai": "n", "search": "y"},
        stating.url("/ai-ok/1"): {"train-ai": "y", "search": "y"},
        silent.url("/news/1"): {},
        missing.url("/news/1"): {},
    }
    assert result.forbidden_urls == {stating.url("/private/1")}


@deferred_f_from_coro_f
async def test_content_usage_header_alone(servers: ServerPool) -> None:
    site = servers.add(
        routes={
            "/refusing": page("train-ai=n, search=y"),
            "/invalid": page("Train-AI=n"),  # not an RFC 9651 Dictionary: states nothing
        }
    )

    result = await run_crawl(site.urls(["/refusing", "/invalid", "/plain"]))

    assert usage_by_url(result) == {
        site.url("/refusing"): {"train-ai": "n", "search": "y"},
        site.url("/invalid"): {},
        site.url("/plain"): {},
    }


@deferred_f_from_coro_f
async def test_robots_txt_and_header_combine_the_most_restrictive_way(
    servers: ServerPool,
) -> None:
    allowing = servers.add(
        rules("User-agent: *\nContent-Usage: train-ai=y, search=y\n"),
        routes={"/header-n": page("train-ai=n"), "/header-y": page("search=y")},
    )
    refusing = servers.add(
        rules("User-agent: *\nContent-Usage: train-ai=n\n"),
        routes={"/header-y": page("train-ai=y, search=n")},
    )

    result = await run_crawl(
        [*allowing.urls(["/header-n", "/header-y"]), refusing.url("/header-y")]
    )

    assert usage_by_url(result) == {
        allowing.url("/header-n"): {"train-ai": "n", "search": "y"},
        allowing.url("/header-y"): {"train-ai": "y", "search": "y"},
        refusing.url("/header-y"): {"train-ai": "n", "search": "n"},
    }


@deferred_f_from_coro_f
async def test_a_redirect_target_gets_its_own_preferences(servers: ServerPool) -> None:
    site = servers.add(rules(PREFERENCES), routes={"/moved": [redirect("/ai-ok/1")]})

    result = await run_crawl([site.url("/moved")])

    assert usage_by_url(result) == {site.url("/ai-ok/1"): {"train-ai": "y", "search": "y"}}


@deferred_f_from_coro_f
async def test_requests_not_obeying_robots_txt_carry_no_preferences(servers: ServerPool) -> None:
    site = servers.add(rules(PREFERENCES), routes={"/header": page("train-ai=n")})
    skipped = Request(site.url("/header"), meta={"dont_obey_robotstxt": True})

    result = await run_crawl([skipped])

    assert usage_by_url(result) == {site.url("/header"): "absent"}
    assert not any(name.startswith("robotstxt/content_usage/") for name in result.stats)


@deferred_f_from_coro_f
async def test_a_skipped_request_with_another_requests_meta_carries_none_of_its_preferences(
    servers: ServerPool,
) -> None:
    """A request made with another's meta (``meta=response.meta``, a common idiom) and
    ``dont_obey_robotstxt`` is not decided: it used to carry the other page's
    preferences, and a pipeline read them as its own (suspected by a second reviewer)."""
    site = servers.add(rules(PREFERENCES), routes={"/header": page("train-ai=y")})
    copied = {META: {"train-ai": "n", "search": "y"}, "dont_obey_robotstxt": True}
    skipped = Request(site.url("/header"), meta=copied)

    result = await run_crawl([skipped])

    assert usage_by_url(result) == {site.url("/header"): "absent"}


@deferred_f_from_coro_f
async def test_a_refused_or_forbidden_request_carries_none_of_another_requests_preferences(
    servers: ServerPool,
) -> None:
    """Requests made with another page's meta (``meta=response.meta``) that robots.txt
    then refuses (``REP9309_REQUIRE_USAGE``) or forbids reached their errback with the
    other page's preferences: ``train-ai=y`` on a request refused for ``train-ai=n``
    (found by a second reviewer). Only a request let through carries the key."""
    site = servers.add(rules(PREFERENCES))
    copied = {META: {"train-ai": "y", "search": "y"}}  # what /ai-ok/1's response said
    refused = Request(site.url("/news/1"), meta=dict(copied))
    forbidden = Request(site.url("/private/1"), meta=dict(copied))

    result = await run_crawl([refused, forbidden], {"REP9309_REQUIRE_USAGE": "train-ai"})

    refusal = result.failure_for(site.url("/news/1"))
    assert refusal.message == "Usage refused by robots.txt: train-ai=n"
    assert META not in refusal.request.meta
    assert result.forbidden_urls == {site.url("/private/1")}
    assert META not in result.failure_for(site.url("/private/1")).request.meta


@deferred_f_from_coro_f
async def test_a_request_ended_at_close_carries_none_of_another_requests_preferences(
    servers: ServerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests made with another page's meta, held, and ended at the close (one closed
    with its robots.txt still unknown, one whose wait ran out as the spider closed)
    reached their errback with that page's preferences (found by a second reviewer):
    the errbacks the middleware calls itself skipped the pop ``process_request`` does."""
    failing, unheld, settings = expiring_as_the_spider_closes(servers, monkeypatch)
    silent = servers.add(hang())
    copied = {META: {"train-ai": "y", "search": "y"}}
    plan = [
        unheld,
        Request(silent.url("/page/1"), meta=dict(copied)),
        Request(failing.url("/page/1"), meta=dict(copied)),
    ]

    result = await run_crawl(plan, settings)

    expired = result.failure_for(failing.url("/page/1"))
    assert "still unknown" in expired.message
    assert META not in expired.request.meta
    closed = result.failure_for(silent.url("/page/1"))
    assert META not in closed.request.meta


# --- REP9309_REQUIRE_USAGE ---------------------------------------------------------------


@deferred_f_from_coro_f
async def test_required_usage_refused_by_robots_txt_is_not_downloaded(
    servers: ServerPool,
) -> None:
    site = servers.add(rules(PREFERENCES), routes={"/ai-ok/header": page("train-ai=n")})
    refused, allowed = site.url("/news/1"), site.url("/ai-ok/1")

    result = await run_crawl(
        [refused, allowed, site.url("/ai-ok/header")], {"REP9309_REQUIRE_USAGE": "train-ai"}
    )

    failure = result.failure_for(refused)
    assert isinstance(failure.exception, IgnoreRequest)
    assert failure.message == "Usage refused by robots.txt: train-ai=n"
    assert "/news/1" not in site.crawled_paths()
    # Only robots.txt refuses before the download; the header's n reaches the meta.
    assert usage_by_url(result) == {
        allowed: {"train-ai": "y", "search": "y"},
        site.url("/ai-ok/header"): {"train-ai": "n", "search": "y"},
    }
    assert result.stat("robotstxt/usage_refused") == 1
    assert result.stat("robotstxt/forbidden") == 0
    (line,) = debug_lines(result, "Usage refused by robots.txt")
    assert line == (
        f"Usage refused by robots.txt: <GET {refused}> (train-ai=n by Content-Usage: "
        f"train-ai=n, line 4 of {site.url('/robots.txt')}; REP9309_REQUIRE_USAGE requires "
        "train-ai)"
    )


@deferred_f_from_coro_f
async def test_a_content_signal_refusal_names_its_line(servers: ServerPool) -> None:
    site = servers.add(rules("User-agent: *\nAllow: /\nContent-Signal: ai-train=no, search=yes\n"))
    url = site.url("/news/1")

    result = await run_crawl([url], {"REP9309_REQUIRE_USAGE": ["search", "train-ai"]})

    assert result.failure_for(url).message == "Usage refused by robots.txt: train-ai=n"
    (line,) = debug_lines(result, "Usage refused by robots.txt")
    assert "train-ai=n by Content-Signal: ai-train=no, search=yes, line 3 of" in line


@deferred_f_from_coro_f
async def test_a_spiders_own_robots_txt_request_states_no_usage_preferences(
    servers: ServerPool,
) -> None:
    """/robots.txt itself is always allowed and its own ``Content-Usage`` rules do not
    apply to it; a group's ``Content-Signal`` does not either. It refused a SitemapSpider's
    own robots.txt request under REP9309_REQUIRE_USAGE, where ``scrapy robots`` said
    allowed (found by a second reviewer)."""
    site = servers.add(rules("User-agent: *\nAllow: /\nContent-Signal: ai-train=no\n"))
    robots_url = site.url("/robots.txt")

    result = await run_crawl([robots_url, site.url("/a")], {"REP9309_REQUIRE_USAGE": "train-ai"})

    assert result.urls == {robots_url}
    assert result.failure_for(site.url("/a")).message == "Usage refused by robots.txt: train-ai=n"
    assert len(site.robots_fetches) == 1  # answered from the copy


# --- REP9309_EXTRA_USER_AGENTS -----------------------------------------------------------


@deferred_f_from_coro_f
async def test_extra_user_agents_groups_must_allow_too(servers: ServerPool) -> None:
    site = servers.add(rules(PURPOSE_GROUPS))
    no_ai, private, public = site.urls(["/no-ai/1", "/private/1", "/public/1"])

    without = await run_crawl([no_ai, private, public])
    with_extra = await run_crawl(
        [no_ai, private, public], {"REP9309_EXTRA_USER_AGENTS": "Google-Extended"}
    )

    assert without.forbidden_urls == {private}
    assert with_extra.forbidden_urls == {no_ai, private}
    assert with_extra.urls == {public}
    assert with_extra.stat("robotstxt/forbidden") == 2
    lines = debug_lines(with_extra, "Forbidden by robots.txt")
    robots_url = site.url("/robots.txt")
    assert (
        f"Forbidden by robots.txt: <GET {no_ai}> "
        f"(Disallow: /no-ai/, line 5 of {robots_url}, for Google-Extended)"
    ) in lines
    # The crawl's own user agent is named too, as the request sends it.
    assert any(
        line.startswith(f"Forbidden by robots.txt: <GET {private}> (Disallow: /private/, line 2")
        and f"{robots_url}, for Scrapy/" in line
        for line in lines
    ), lines
    # Without extra user agents the line keeps its usual form.
    (plain,) = debug_lines(without, "Forbidden by robots.txt")
    assert plain.endswith(f"(Disallow: /private/, line 2 of {robots_url})")


@deferred_f_from_coro_f
async def test_preferences_of_extra_user_agents_groups_combine(servers: ServerPool) -> None:
    site = servers.add(
        rules(
            "User-agent: *\nContent-Usage: train-ai=y, search=y\n\n"
            "User-agent: Google-Extended\nContent-Usage: train-ai=n\n"
        )
    )
    url = site.url("/news/1")

    result = await run_crawl([url], {"REP9309_EXTRA_USER_AGENTS": ["Google-Extended"]})

    assert usage_by_url(result) == {url: {"train-ai": "n", "search": "y"}}


# --- stats, reports, the close summary ---------------------------------------------------


@deferred_f_from_coro_f
async def test_stats_count_preferences_per_downloaded_response(servers: ServerPool) -> None:
    stating = servers.add(rules(PREFERENCES))
    headers_only = servers.add(routes={"/h": page("search=n")})
    silent = servers.add(rules("User-agent: *\nAllow: /\n"))
    plan = [
        *stating.urls(["/news/1", "/news/2", "/ai-ok/1", "/private/1"]),
        headers_only.url("/h"),
        silent.url("/news/1"),
    ]

    result = await run_crawl(plan, {"REP9309_REQUIRE_USAGE": "search"})

    usage_stats = {
        name: value
        for name, value in result.stats.items()
        if name.startswith("robotstxt/content_usage/")
    }
    assert usage_stats == {
        "robotstxt/content_usage/train-ai/n": 2,
        "robotstxt/content_usage/train-ai/y": 1,
        "robotstxt/content_usage/search/y": 3,
        "robotstxt/content_usage/search/n": 1,
    }
    assert undocumented_stats(set(result.stats)) == set()
    reports = {report.origin: report for report in result.middleware(ours_class()).origin_reports()}
    assert reports[stating.base].usage == ("train-ai=n", "train-ai=y", "search=y")
    assert reports[headers_only.base].usage == ("search=n",)
    assert reports[silent.base].usage == ()
    summary = result.close_summary()
    assert "3 origins (" in summary and "), 2 stating usage preferences;" in summary
    assert "usage_refused 0" in summary


@deferred_f_from_coro_f
async def test_an_origin_whose_requests_are_all_refused_still_states_preferences(
    servers: ServerPool,
) -> None:
    site = servers.add(rules(PREFERENCES))

    result = await run_crawl([site.url("/news/1")], {"REP9309_REQUIRE_USAGE": "train-ai"})

    (report,) = result.middleware(ours_class()).origin_reports()
    assert (report.usage_refused, report.usage) == (1, ("train-ai=n", "search=y"))
    assert not any(name.startswith("robotstxt/content_usage/") for name in result.stats)


# --- start-up warnings about user agents no group can name -------------------------------


def _warnings(result: CrawlResult) -> list[str]:
    return result.messages(logging.WARNING, "scrapy_rep9309")


@pytest.mark.parametrize(
    ("settings", "setting", "token"),
    [
        ({"USER_AGENT": "MJ12bot/1.0 (+https://mj12.example)"}, "USER_AGENT", "MJ12bot"),
        ({"ROBOTSTXT_USER_AGENT": "Bot2000"}, "ROBOTSTXT_USER_AGENT", "Bot2000"),
        (
            {"DEFAULT_REQUEST_HEADERS": {"User-Agent": "Crawler9/2"}},
            "DEFAULT_REQUEST_HEADERS",
            "Crawler9",
        ),
        (
            {"REP9309_EXTRA_USER_AGENTS": ["Google-Extended", "GPTBot2"]},
            "REP9309_EXTRA_USER_AGENTS",
            "GPTBot2",
        ),
    ],
    ids=["USER_AGENT", "ROBOTSTXT_USER_AGENT", "DEFAULT_REQUEST_HEADERS", "extra"],
)
@deferred_f_from_coro_f
async def test_an_invalid_product_token_is_warned_about_once(
    servers: ServerPool, settings: dict[str, Any], setting: str, token: str
) -> None:
    site = servers.add()

    result = await run_crawl(site.urls(["/a", "/b"]), settings)

    (warning,) = _warnings(result)
    assert warning.startswith(f"scrapy-rep9309: {setting}: the product token {token!r}")
    assert "only 'User-agent: *' groups do" in warning


@deferred_f_from_coro_f
async def test_valid_user_agents_get_no_warning(servers: ServerPool) -> None:
    site = servers.add()

    result = await run_crawl(
        [site.url("/a")], {"REP9309_EXTRA_USER_AGENTS": "Google-Extended, Applebot-Extended"}
    )

    assert _warnings(result) == []
    assert result.urls == {site.url("/a")}
