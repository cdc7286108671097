"""A request sent back to be held never waits inside the downloader, and never bounces forever."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_rep9309.integration.jobdir import read_state
from scrapy_rep9309.integration.middleware import MAX_REQUEUES, REQUEUED_META, TRIPS_OF_META
from tests._readme import undocumented_stats
from tests.crawl import NO_RANDOM_DELAY, PlanSpider, Wait, run_crawl
from tests.servers import ServerPool, hang, redirect, rules

ALLOW_ALL = "User-agent: *\n"


@deferred_f_from_coro_f
async def test_requeued_copies_whose_rules_expire_again_do_not_take_a_download_slot(
    servers: ServerPool,
) -> None:
    """Queued requests outlive the 0.5 s TTL and are sent back to be held; the copies,
    released together, wait in the scheduler past the TTL again. Waiting inside the
    downloader for the (slow) third robots.txt would take one of the two download slots
    and stall the other origin; each copy is decided by the robots.txt it was held for."""
    site = servers.add(
        [rules(ALLOW_ALL), rules(ALLOW_ALL), rules(ALLOW_ALL, delay=1.5)], page_delay=0.3
    )
    other = servers.add(page_delay=0.05)
    plan = [site.url("/page/0"), Wait(0.2), *site.urls([f"/page/{n}" for n in range(1, 9)])]
    plan += [Wait(0.9), *other.urls([f"/o/{n}" for n in range(10)])]
    settings = {
        "REP9309_CACHE_TTL": 0.5,
        "CONCURRENT_REQUESTS": 2,
        # Both places may fetch robots.txt (by default one: half of CONCURRENT_REQUESTS),
        # so the other origin's needs no wait for the slow one's to end.
        "REP9309_CONCURRENT_FETCHES": 2,
        "DOWNLOAD_TIMEOUT": 3,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }

    result = await run_crawl(plan, settings)

    assert result.failures == []
    assert len(result.urls) == 9 + 10
    assert result.stat("robotstxt/requeued") >= 1
    assert len(site.robots_fetches) == 3
    slow_answer = site.robots_fetches[2].answered
    assert slow_answer is not None
    assert max(entry.received for entry in other.page_requests) < slow_answer, (
        "a requeued copy waited for the slow robots.txt in a download slot"
    )
    assert result.stat("robotstxt/deferred") == (
        result.stat("robotstxt/deferred/released") + result.stat("robotstxt/deferred/expired")
    )
    assert undocumented_stats(set(result.stats)) == set()


def _waiting_in_the_downloader(
    servers: ServerPool,
    site_robots: list[Any],
    settings: dict[str, Any],
    routes: dict[str, list[Any]] | None = None,
) -> tuple[Any, list[Any], dict[str, Any]]:
    """An origin whose copy expires (0.5 s) while ``/waiting``, sent back from the scheduler
    MAX_REQUEUES times already, stays in the scheduler behind a slow page of another
    origin: it then waits for the refresh (``site_robots``' second answer) inside the
    downloader. Returns the origin (with ``routes``), the plan and the settings with
    ``settings`` added."""
    site = servers.add(site_robots, routes=routes)
    slow = servers.add(page_delay=1.5)
    url = site.url("/waiting")
    waiting = Request(url, meta={REQUEUED_META: MAX_REQUEUES, TRIPS_OF_META: url})
    plan = [site.url("/first"), slow.url("/slow"), Wait(0.3), waiting]
    common: dict[str, Any] = {
        "REP9309_CACHE_TTL": 0.5,
        "CONCURRENT_REQUESTS": 1,  # /waiting stays in the scheduler behind /slow
        "REP9309_DEFER_TIMEOUT": 60,
    }
    return site, plan, {**common, **settings}


@deferred_f_from_coro_f
@pytest.mark.parametrize("jobdir", [False, True], ids=["errback", "jobdir"])
async def test_a_request_waiting_in_the_downloader_at_a_pause_is_saved(
    servers: ServerPool, tmp_path: Path, jobdir: bool
) -> None:
    """A request sent back from the scheduler MAX_REQUEUES times waits for its robots.txt
    inside the downloader (here: it comes out of the scheduler after its copy expired,
    and the refresh never answers). When the spider closes meanwhile, it ends like any
    held request: saved under JOBDIR (and downloaded after the resume), else in its
    errback with the reason. Before, it always went to its errback."""
    site, plan, settings = _waiting_in_the_downloader(
        servers,
        [rules(ALLOW_ALL), hang(), rules(ALLOW_ALL)],
        # The refresh hangs past the close (the close waits for it: 5 s at most).
        {"DOWNLOAD_TIMEOUT": 30, "REP9309_FETCH_TIMEOUT": 5, "CLOSESPIDER_TIMEOUT": 4},
    )
    if jobdir:
        settings["JOBDIR"] = str(tmp_path / "job")

    paused = await run_crawl(plan, settings)

    assert paused.urls == set(plan[:2])  # /first and /slow
    assert paused.stat("robotstxt/deferred") == 3
    if not jobdir:
        assert paused.ignored_urls == {site.url("/waiting")}
        # The refresh times out while the spider closes: the stale copy is usable again
        # (RFC 9309 2.4) and allows it, so it ends as an allowed request the close stopped.
        message = paused.failure_for(site.url("/waiting")).message
        assert message == f"Spider closed before {site.url('/waiting')} could be downloaded"
        assert paused.stat("robotstxt/deferred/closed") == 1
        return
    assert paused.failures == []
    assert paused.stat("robotstxt/deferred/saved") == 1
    assert [saved.origin for saved in read_state(tmp_path / "job").held] == [site.base]

    resumed = await run_crawl([], {**settings, "CLOSESPIDER_TIMEOUT": 10})

    assert resumed.urls == {site.url("/waiting")}
    assert [entry.path for entry in site.page_requests] == ["/first", "/waiting"]


@deferred_f_from_coro_f
async def test_the_redirect_of_a_request_saved_from_the_downloader_is_filtered_after_the_resume(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The request saved from inside the downloader (above) is saved as a copy with
    ``dont_filter=True``, as the resumed crawl's duplicate filter has seen it; once let
    through it gets its own back. Kept, its redirect inherited it, and a page crawled
    before the pause was fetched again after the resume."""
    site, plan, settings = _waiting_in_the_downloader(
        servers,
        [rules(ALLOW_ALL), hang(), rules(ALLOW_ALL)],
        {"DOWNLOAD_TIMEOUT": 30, "REP9309_FETCH_TIMEOUT": 5, "CLOSESPIDER_TIMEOUT": 4},
        routes={"/waiting": [redirect("/first")]},
    )
    settings["JOBDIR"] = str(tmp_path / "job")

    paused = await run_crawl(plan, settings)
    assert paused.stat("robotstxt/deferred/saved") == 1
    resumed = await run_crawl([], {**settings, "CLOSESPIDER_TIMEOUT": 10})

    assert resumed.failures == []
    assert resumed.stat("dupefilter/filtered") == 1
    assert [entry.path for entry in site.log if entry.path != "/robots.txt"] == [
        "/first",
        "/waiting",
    ]


@deferred_f_from_coro_f
@pytest.mark.parametrize("jobdir", [False, True], ids=["errback", "jobdir"])
async def test_a_request_waiting_in_the_downloader_is_decided_by_an_answer_during_the_close(
    servers: ServerPool, tmp_path: Path, jobdir: bool
) -> None:
    """As above, but the refresh answers while the spider closes (the close waits for a
    robots.txt download in flight), and forbids the page: the request ends forbidden, as
    a request held outside the downloader does; under JOBDIR it is saved with that copy
    and ends forbidden after the resume. Before, that answer did not decide it: without
    JOBDIR it was closed ("Spider closed before the robots.txt ... was known")."""
    forbid_all = "User-agent: *\nDisallow: /\n"
    site, plan, settings = _waiting_in_the_downloader(
        servers,
        [rules(ALLOW_ALL), rules(forbid_all, delay=3.5)],
        # The refresh (from about 1.8 s) answers at about 5.3 s, during the close.
        {"REP9309_FETCH_TIMEOUT": 10, "CLOSESPIDER_TIMEOUT": 3},
    )
    if jobdir:
        settings["JOBDIR"] = str(tmp_path / "job")

    result = await run_crawl(plan, settings)
    if jobdir:
        assert result.failures == []
        assert result.stat("robotstxt/deferred/saved") == 1
        result = await run_crawl([], settings)

    assert result.urls.isdisjoint({site.url("/waiting")})
    assert result.forbidden_urls == {site.url("/waiting")}
    assert len(site.robots_fetches) == 2
    assert result.stat("robotstxt/forbidden") == 1
    assert (result.stat("robotstxt/deferred/closed") or 0) == 0
    assert [entry.path for entry in site.page_requests] == ["/first"]


class _FollowsWithItsMeta(PlanSpider):
    """Yields /child from /parent with ``meta=response.meta``, as spiders often do."""

    def parse(self, response: Response, **kwargs: Any) -> Any:
        super().parse(response)
        if response.url.endswith("/parent"):
            meta = dict(response.meta)
            yield response.follow("/child", callback=self.parse, errback=self.on_error, meta=meta)


@deferred_f_from_coro_f
async def test_a_request_with_another_requests_meta_has_made_no_trips_of_its_own(
    servers: ServerPool,
) -> None:
    """/parent waits in its download slot (DOWNLOAD_DELAY 1 s) longer than its copy
    lives (0.5 s): it is sent back 3 times, then decided by the newest copy (the
    documented bound). Its child, yielded with its meta, used to inherit those trips: when
    its copy expired in the slot too it was sent at once, though its origin had no usable
    copy, and the next copy forbids it (found by a second reviewer). The trips count for
    the URL that made them."""
    forbid_child = "User-agent: *\nDisallow: /child\n"
    site = servers.add([rules(ALLOW_ALL)] * 5 + [rules(forbid_child)])
    settings = {
        "REP9309_CACHE_TTL": 0.5,
        "DOWNLOAD_DELAY": 1,
        **NO_RANDOM_DELAY,
        "REP9309_DEFER_TIMEOUT": 30,
        "CLOSESPIDER_TIMEOUT": 40,
    }

    result = await run_crawl([site.url("/parent")], settings, spider_cls=_FollowsWithItsMeta)

    assert site.url("/parent") in result.urls
    assert result.forbidden_urls == {site.url("/child")}
    assert [entry.path for entry in site.page_requests] == ["/parent"]
