"""Every held request ends released, expired or closed, and is counted once per origin.

Also: requests whose robots.txt answers (or whose wait ends) while the engine is
already closing are not re-injected into a closing engine, which would drop them
silently: they reach their errback, counted as closed; and no timer outlives the crawl.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_rep9309.integration.jobdir import read_state
from scrapy_rep9309.integration.middleware import CONTENT_USAGE_META
from tests.closing import expiring_as_the_spider_closes, stretch_the_turn_before_the_engine
from tests.crawl import Wait, ours_class, run_crawl
from tests.servers import Reply, ServerPool, hang, rules


@deferred_f_from_coro_f
async def test_deferred_is_released_plus_expired_plus_closed_per_origin(
    servers: ServerPool,
) -> None:
    answering = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    failing = servers.add(Reply(503, "busy"))
    # Answers while the engine closes (it waits for the robots.txt download).
    late = servers.add(rules("User-agent: *\n", delay=2.3))
    silent = servers.add(hang())
    paths = ["/page/1", "/private/1"]
    # The failing origin's requests expire at 1.3 s, well before closing begins at 2 s.
    plan = [*answering.urls(paths), *failing.urls(paths), Wait(1.0)]
    # Their wait would end at 2.3 s: after closing began.
    plan += [*late.urls(paths), *silent.urls(paths)]
    settings = {
        "CLOSESPIDER_TIMEOUT": 2,
        "REP9309_DEFER_TIMEOUT": 1.3,
        "REP9309_RETRY_DELAY": 0.3,
        "DOWNLOAD_TIMEOUT": 4,
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
    assert reports[late.base].allowed == 2, "decided at close: allowed, never downloaded"
    assert CONTENT_USAGE_META not in result.failure_for(late.url("/page/1")).request.meta
    assert result.urls == {answering.url("/page/1")}


@deferred_f_from_coro_f
async def test_a_robots_txt_answering_while_the_spider_closes_still_forbids(
    servers: ServerPool,
) -> None:
    """The answer arrives after closing began, and its download is the last thing the
    engine waits for: the request it forbids still ends forbidden (counted released and
    forbidden), the one it allows ends "closed", never downloaded. The spider used to close
    before the answer was carried out: the fetch resumes a turn of the event loop after the
    download ends on Scrapy 2.13, and reading the answer takes one with a ``robots_parsed``
    receiver (this harness connects one on Scrapy >= 2.18)."""
    late = servers.add(rules("User-agent: *\nDisallow: /private\n", delay=1.3))

    result = await run_crawl(
        late.urls(["/page/1", "/private/1"]), {"CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 5}
    )

    assert result.close_reason == "closespider_timeout"
    assert late.robots_fetches[0].answered is not None, "the robots.txt did answer"
    assert result.forbidden_urls == {late.url("/private/1")}
    assert result.failure_for(late.url("/page/1")).message == (
        f"Spider closed before {late.url('/page/1')} could be downloaded"
    )
    report = result.middleware(ours_class()).origin_reports()[0]
    assert (report.deferred, report.released, report.closed, report.forbidden) == (2, 1, 1, 1)
    assert result.stat("robotstxt/forbidden") == 1
    assert late.page_requests == []
    # robots.txt let /page/1 through; the close stopped it. Found by a second reviewer:
    # counted as not allowed, the origin was reported as one whose every request
    # robots.txt forbade, and the crawl as one it let nothing through ("check
    # ROBOTSTXT_USER_AGENT").
    assert report.allowed == 1
    assert report.all_forbidden is None
    assert result.messages(logging.WARNING, "scrapy_rep9309") == []


@deferred_f_from_coro_f
async def test_requests_expired_just_before_the_close_reach_their_errback_once(
    servers: ServerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expired requests, too, reach the engine a turn of the event loop later. When the
    spider closes in between (here the engine is still finishing a slow page when that
    turn comes), close() hands them to their errback with the expiry reason, once each,
    counted expired; none is downloaded."""
    failing, unheld, settings = expiring_as_the_spider_closes(servers, monkeypatch)

    result = await run_crawl([unheld, *failing.urls(["/a", "/b"])], settings)

    assert result.close_reason == "closespider_timeout"
    assert result.urls == {unheld.url}, "the engine waited for the slow page"
    reason = f"robots.txt of {failing.base} still unknown after 0.3 s (unreachable: HTTP 503)"
    for url in failing.urls(["/a", "/b"]):
        assert result.failure_for(url).message == reason
        # Ended by the close, they log as those ended by process_request do (a reviewer).
        assert f"Gave up on <GET {url}>: {reason}" in result.messages(logging.DEBUG)
    assert failing.page_requests == []
    assert result.stat("robotstxt/deferred/expired") == 2
    assert result.stat("robotstxt/deferred") == sum(
        result.stat(f"robotstxt/deferred/{end}") for end in ("released", "expired", "closed")
    )


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


class RefusingScheduler(Scheduler):
    """A scheduler that cannot take requests whose path starts with ``/refused``."""

    def enqueue_request(self, request: Request) -> bool:
        if "/refused" in request.url:
            raise RuntimeError("queue unavailable")
        return super().enqueue_request(request)


@deferred_f_from_coro_f
async def test_a_released_request_the_scheduler_refuses_reaches_its_errback(
    servers: ServerPool,
) -> None:
    """Released requests go back through the scheduler; one it raises for is neither
    downloaded nor forgotten: its errback gets the error (it used to be only logged)."""
    site = servers.add(rules("User-agent: *\n", delay=0.2))
    kept, refused = site.url("/page"), site.url("/refused")
    settings = {"SCHEDULER": f"{__name__}.RefusingScheduler"}

    result = await run_crawl([kept, refused], settings)

    assert result.urls == {kept}
    failure = result.failure_for(refused)
    assert isinstance(failure.exception, RuntimeError)
    assert result.stat("robotstxt/deferred") == result.stat("robotstxt/deferred/released") == 2


@deferred_f_from_coro_f
async def test_requests_released_just_before_a_jobdir_pause_keep_their_defer_time(
    servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Released requests reach the engine a turn of the event loop later; the spider may
    close (here: pause under JOBDIR) in between. They are saved with the defer time they
    had left, not none: on the resume they wait for their robots.txt like any other
    (they were saved with 0 s and expired at once if it had to be fetched again)."""
    stretch_the_turn_before_the_engine(monkeypatch)  # the pause falls inside it
    site = servers.add(rules("User-agent: *\n"))
    jobdir = tmp_path / "job"
    settings = {"JOBDIR": str(jobdir), "CLOSESPIDER_TIMEOUT": 0.5, "REP9309_DEFER_TIMEOUT": 30}

    result = await run_crawl(site.urls(["/a", "/b"]), settings)

    assert result.close_reason == "closespider_timeout"
    assert result.urls == set()
    state = read_state(jobdir)
    assert site.base in state.records, "robots.txt answered (and released them) before"
    assert sorted(saved.origin for saved in state.held) == [site.base, site.base]
    assert all(25 < saved.remaining <= 30 for saved in state.held), state.held
    assert result.stat("robotstxt/deferred") == result.stat("robotstxt/deferred/saved") == 2
