"""The close WARNING when robots.txt refused every request of an origin, or of the crawl:
such a crawl would otherwise look like a crawl of empty sites (Scrapy PR #6164)."""

from __future__ import annotations

import logging

from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_rep9309.policy.report import OriginReport, all_forbidden_warnings
from tests.crawl import CrawlResult, ours_class, run_crawl
from tests.servers import ServerPool, rules

CLOSED_RULES = "# nobody\nUser-agent: *\nDisallow: /\n"
OPEN_RULES = "User-agent: *\nDisallow: /private\n"


def _warnings(result: CrawlResult) -> list[str]:
    return result.messages(logging.WARNING, "scrapy_rep9309")


def _reports(result: CrawlResult) -> dict[str, OriginReport]:
    middleware = result.middleware(ours_class())
    return {report.origin: report for report in middleware.origin_reports()}


@deferred_f_from_coro_f
async def test_warning_names_the_origin_whose_every_request_was_forbidden(
    servers: ServerPool,
) -> None:
    closed = servers.add(rules(CLOSED_RULES))
    mixed = servers.add(rules(OPEN_RULES))
    plan = [*closed.urls(["/", "/a", "/b"]), mixed.url("/a"), mixed.url("/private/1")]

    result = await run_crawl(plan)

    assert closed.page_requests == []
    (warning,) = _warnings(result)
    assert warning == (
        f"robots.txt forbade every request of 1 origin: {closed.base} (3 requests, first by "
        "Disallow: / (line 3, User-agent: *))"
    )
    assert mixed.base not in warning
    reports = _reports(result)
    assert reports[closed.base].all_forbidden == "Disallow: / (line 3, User-agent: *)"
    assert (reports[closed.base].forbidden, reports[closed.base].allowed) == (3, 0)
    assert reports[mixed.base].all_forbidden is None
    assert (reports[mixed.base].forbidden, reports[mixed.base].allowed) == (1, 1)


@deferred_f_from_coro_f
async def test_a_crawl_whose_every_request_was_forbidden_says_so(servers: ServerPool) -> None:
    everyone = servers.add(rules(CLOSED_RULES))
    us = servers.add(rules("User-agent: *\nAllow: /\n\nUser-agent: scrapy\nDisallow: /\n"))

    result = await run_crawl([everyone.url("/a"), us.url("/a"), us.url("/b")])

    assert everyone.page_requests == [] and us.page_requests == []
    crawl_wide, per_origin = _warnings(result)
    assert crawl_wide.startswith(
        "robots.txt let no request of this crawl through: 3 requests forbidden or "
        "usage-refused, none allowed"
    )
    # The most refused origin first; the group is the one the crawl's token matched.
    assert per_origin == (
        f"robots.txt forbade every request of 2 origins: {us.base} (2 requests, first by "
        f"Disallow: / (line 5, User-agent: scrapy)); {everyone.base} (1 request, first by "
        "Disallow: / (line 3, User-agent: *))"
    )


@deferred_f_from_coro_f
async def test_opt_in_close_reason_when_nothing_was_allowed(servers: ServerPool) -> None:
    closed = servers.add(rules(CLOSED_RULES))
    opened = servers.add(rules(OPEN_RULES))
    opt_in = {"REP9309_ALL_FORBIDDEN_CLOSE_REASON": "robotstxt_forbidden"}

    blocked = await run_crawl(closed.urls(["/a", "/b"]), opt_in)
    mixed = await run_crawl([closed.url("/c"), opened.url("/a")], opt_in)
    default = await run_crawl([closed.url("/d")])

    assert blocked.close_reason == "robotstxt_forbidden"
    assert blocked.stat("finish_reason") == "robotstxt_forbidden"
    assert mixed.close_reason == "finished"
    assert default.close_reason == "finished"
    assert closed.page_requests == []


@deferred_f_from_coro_f
async def test_usage_refused_everywhere_counts_as_forbidden(servers: ServerPool) -> None:
    site = servers.add(rules("User-agent: *\nContent-Usage: train-ai=n\n"))

    result = await run_crawl([site.url("/a")], {"REP9309_REQUIRE_USAGE": "train-ai"})

    crawl_wide, per_origin = _warnings(result)
    assert "let no request of this crawl through" in crawl_wide
    assert per_origin == (
        f"robots.txt forbade every request of 1 origin: {site.base} (1 request, first by "
        "Content-Usage: train-ai=n (line 2, User-agent: *; REP9309_REQUIRE_USAGE))"
    )


@deferred_f_from_coro_f
async def test_no_warning_when_something_was_allowed(servers: ServerPool) -> None:
    site = servers.add(rules(OPEN_RULES))
    missing = servers.add()  # 404: allow all

    result = await run_crawl([site.url("/a"), site.url("/private/1"), missing.url("/a")])

    assert _warnings(result) == []
    assert all(report.all_forbidden is None for report in _reports(result).values())


def test_many_origins_are_named_up_to_a_bound() -> None:
    reports = [
        OriginReport(f"http://o{i:02}.example", forbidden=1, first_refusal="Disallow: /")
        for i in range(14)
    ]
    reports.append(OriginReport("http://open.example", allowed=5))

    (line,) = all_forbidden_warnings(reports, named=10)

    assert line.startswith("robots.txt forbade every request of 14 origins: http://o00.example")
    assert "http://o09.example" in line and "http://o10.example" not in line
    assert line.endswith("; and 4 more origins")


def test_an_origin_without_decided_requests_is_not_all_forbidden() -> None:
    assert OriginReport("http://a.example").all_forbidden is None
    assert OriginReport("http://a.example", deferred=2, expired=2).all_forbidden is None
    assert all_forbidden_warnings([OriginReport("http://a.example", deferred=1)]) == []
