"""Every held request ends released, expired or closed, and is counted once per origin.

Also: requests whose robots.txt answers (or whose wait ends) while the engine is
already closing are not re-injected into a closing engine, which would drop them
silently: they reach their errback, counted as closed; and no timer outlives the crawl.
"""

from __future__ import annotations

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import Wait, ours_class, run_crawl
from tests.servers import Reply, ServerPool, hang, rules


@deferred_f_from_coro_f
async def test_deferred_is_released_plus_expired_plus_closed_per_origin(
    servers: ServerPool,
) -> None:
    answering = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    failing = servers.add(Reply(503, "busy"))
    # Answers while the engine closes (it waits for the robots.txt download).
    late = servers.add(rules("User-agent: *\n", delay=1.3))
    silent = servers.add(hang())
    paths = ["/page/1", "/private/1"]
    plan = [*answering.urls(paths), *failing.urls(paths), Wait(0.6)]
    # Their wait would end at 1.5 s: after closing began at 1 s.
    plan += [*late.urls(paths), *silent.urls(paths)]
    settings = {
        "CLOSESPIDER_TIMEOUT": 1,
        "REP9309_DEFER_TIMEOUT": 0.9,
        "REP9309_RETRY_DELAY": 0.3,
        "DOWNLOAD_TIMEOUT": 2,
    }

    result = await run_crawl(plan, settings)

    assert result.close_reason == "closespider_timeout"
    reports = {report.origin: report for report in result.middleware(ours_class()).origin_reports()}
    counts = {
        site: (report.deferred, report.released, report.expired, report.closed)
        for site, report in reports.items()
    }
    assert counts == {
        answering.base: (2, 2, 0, 0),
        failing.base: (2, 0, 2, 0),
        late.base: (2, 0, 0, 2),
        silent.base: (2, 0, 0, 2),
    }
    for report in reports.values():
        assert report.deferred == report.released + report.expired + report.closed
    assert result.stat("robotstxt/deferred") == 8
    assert result.stat("robotstxt/deferred/closed") == 4
    assert result.stat("robotstxt/deferred") == sum(
        result.stat(f"robotstxt/deferred/{end}") for end in ("released", "expired", "closed")
    )
    # The late robots.txt answered while the spider closed: it decided its requests
    # (both allowed, so they could not be downloaded any more); the silent one never did.
    for url in late.urls(paths):
        assert result.failure_for(url).message == f"Spider closed before {url} could be downloaded"
    for url in silent.urls(paths):
        assert result.failure_for(url).message == (
            f"Spider closed before the robots.txt of {silent.base} was known"
        )
    assert late.page_requests == [] and silent.page_requests == []
    assert late.robots_fetches[0].answered is not None, "the late robots.txt did answer"
    assert result.urls == {answering.url("/page/1")}


@deferred_f_from_coro_f
async def test_no_timer_outlives_the_crawl(servers: ServerPool) -> None:
    """A retry and an expiry are pending when the spider closes: both are cancelled."""
    failing = servers.add(Reply(503, "busy"))

    result = await run_crawl(
        failing.urls(["/page/1"]),
        {
            "CLOSESPIDER_TIMEOUT": 0.5,
            "REP9309_RETRY_DELAY": 30,
            "REP9309_RETRY_MAX_DELAY": 30,
            "REP9309_DEFER_TIMEOUT": 30,
        },
    )

    assert result.close_reason == "closespider_timeout"
    middleware = result.middleware(ours_class())
    assert len(middleware.driver._timers) == 0
    assert result.stat("robotstxt/deferred/closed") == 1
