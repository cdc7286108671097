"""A small REP9309_CACHE_SIZE never makes a failing server's robots.txt be asked sooner.

The record of an unreachable origin carries its backoff (failures, next retry
time): evicting it would restart the backoff, or refetch at once.
"""

from __future__ import annotations

import logging
from itertools import pairwise

from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.crawl import Wait, ours_class, run_crawl
from tests.servers import LoggedRequest, Reply, ServerPool, rules


def _gaps(fetches: list[LoggedRequest]) -> list[float]:
    times = [entry.received for entry in fetches]
    return [later - earlier for earlier, later in pairwise(times)]


@deferred_f_from_coro_f
async def test_backoff_keeps_doubling_while_other_origins_fill_the_cache(
    servers: ServerPool,
) -> None:
    failing = servers.add(Reply(503, "busy"))
    other = servers.add()  # 404: allow all
    plan = [failing.url("/page/0")]
    for n in range(14):  # a new origin record every 0.2 s would evict the failing one
        plan += [Wait(0.2), other.url(f"/page/{n}")]
    settings = {
        "REP9309_CACHE_SIZE": 1,
        "REP9309_RETRY_DELAY": 0.5,
        "REP9309_RETRY_MAX_DELAY": 4,
        "REP9309_DEFER_TIMEOUT": 3.2,
    }

    result = await run_crawl(plan, settings)

    gaps = _gaps(failing.robots_fetches)
    assert len(gaps) == 2, f"fetches 0.5 s then 1 s apart, then the request expired: {gaps}"
    assert 0.4 < gaps[0] < 0.9
    assert gaps[1] > 0.9, "the second retry waits twice as long"
    assert result.stat("robotstxt/evicted") >= 1, "the other origin was evicted instead"
    assert len(result.urls) == 14
    assert result.ignored_urls == {failing.url("/page/0")}
    assert undocumented_stats(set(result.stats)) == set()


@deferred_f_from_coro_f
async def test_origin_in_backoff_is_not_refetched_early_after_its_requests_left(
    servers: ServerPool,
) -> None:
    """The held request expires before the answer: no retry timer runs, only the record
    says when the server may be asked again."""
    failing = servers.add(Reply(503, "busy", delay=0.6))
    other = servers.add()
    plan = [failing.url("/page/0"), Wait(0.9), other.url("/page/0"), Wait(0.3)]
    plan += [failing.url("/page/1")]
    settings = {
        "REP9309_CACHE_SIZE": 1,
        "REP9309_RETRY_DELAY": 2,
        "REP9309_RETRY_MAX_DELAY": 4,
        "REP9309_DEFER_TIMEOUT": 0.4,
    }

    result = await run_crawl(plan, settings)

    assert len(failing.robots_fetches) == 1, "asked again before its Retry delay of 2 s"
    assert result.urls == {other.url("/page/0")}
    assert result.ignored_urls == set(failing.urls(["/page/0", "/page/1"]))
    message = result.failure_for(failing.url("/page/1")).message
    assert "unreachable: HTTP 503" in message, "the failure was remembered"


@deferred_f_from_coro_f
async def test_reports_of_forgotten_origins_are_folded_into_the_summary(
    servers: ServerPool,
) -> None:
    """Past REP9309_CACHE_SIZE origins, reports are not kept one by one: an evicted
    origin's report goes into totals, and the close summary still counts every origin."""
    forbidding = [servers.add(rules("User-agent: *\nDisallow: /private\n")) for _ in range(4)]
    allowing = [servers.add() for _ in range(2)]  # 404: allow all
    plan: list[object] = []
    for site in forbidding:
        plan += [site.url("/page/0"), site.url("/private/0"), Wait(0.2)]
    for site in allowing:
        plan += [site.url("/page/0"), Wait(0.2)]

    result = await run_crawl(plan, {"REP9309_CACHE_SIZE": 2})

    assert result.stat("robotstxt/evicted") >= 4
    reports = result.middleware(ours_class()).origin_reports()
    assert 1 <= len(reports) <= 2, [report.origin for report in reports]
    assert result.forbidden_urls == {site.url("/private/0") for site in forbidding}
    assert result.stat("robotstxt/forbidden") == 4
    summary = result.close_summary()
    assert summary.startswith(
        "robots.txt: 6 origins (4 available, 2 unavailable, 0 unreachable, 0 pending)"
    ), summary


@deferred_f_from_coro_f
async def test_origins_forbidden_everything_are_still_named_after_their_eviction(
    servers: ServerPool,
) -> None:
    """The all-forbidden WARNING counts and names origins whose reports were folded."""
    closed = [servers.add(rules("User-agent: *\nDisallow: /\n")) for _ in range(3)]
    plan: list[object] = []
    for site in closed:
        plan += [site.url("/page/0"), site.url("/page/1"), Wait(0.2)]
    allowing = servers.add()  # 404: allow all; evicts the last closed one
    plan += [allowing.url("/page/0")]

    result = await run_crawl(plan, {"REP9309_CACHE_SIZE": 1})

    assert result.stat("robotstxt/evicted") >= 3
    reports = result.middleware(ours_class()).origin_reports()
    assert [report.origin for report in reports] == [allowing.base]
    (warning,) = result.messages(logging.WARNING, "scrapy_rep9309")
    assert warning.startswith("robots.txt forbade every request of 3 origins: "), warning
    for site in closed:
        assert f"{site.base} (2 requests, first by Disallow: / (line 2, User-agent: *))" in warning


@deferred_f_from_coro_f
async def test_released_requests_of_an_evicted_origin_are_decided_by_their_copy(
    servers: ServerPool,
) -> None:
    """An origin evicted (REP9309_CACHE_SIZE) while its released requests wait in the
    scheduler: the copy they were released with decides them at download time, so its
    robots.txt is not fetched again and what it forbids stays forbidden."""
    from scrapy import Request

    evicted = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    newer = servers.add(rules("User-agent: *\n"))
    busy = servers.add(rules("User-agent: *\n"))
    busy.script("/slow", [Reply(200, "slow", delay=1.5)])  # fills the one download slot
    plan = [
        Request(busy.url("/slow"), meta={"dont_obey_robotstxt": True}),
        *evicted.urls(["/private/1", "/page/1"]),
        Wait(0.5),  # the evicted origin's requests are released and queued by now
        newer.url("/page/1"),  # its machine takes the one place in the cache
    ]

    result = await run_crawl(plan, {"CONCURRENT_REQUESTS": 1, "REP9309_CACHE_SIZE": 1})

    assert result.urls == {busy.url("/slow"), evicted.url("/page/1"), newer.url("/page/1")}
    assert result.forbidden_urls == {evicted.url("/private/1")}
    assert len(evicted.robots_fetches) == 1
    assert result.stat("robotstxt/requeued") == 0
    assert result.stat("robotstxt/evicted") >= 1
    assert (
        evicted.page_requests
        and evicted.page_requests[0].received > newer.robots_fetches[0].received
    )
    # Decided after the eviction, by the copy the requests were released with: their
    # counts go on, under the origin counted once, with the outcome it was fetched with
    # (the close summary used to count it again, as an origin still "pending").
    summary = result.close_summary()
    assert summary.startswith(
        "robots.txt: 2 origins (2 available, 0 unavailable, 0 unreachable, 0 pending), "
        "0 stating usage preferences; request_count 2, forbidden 1,"
    ), summary
