"""Requests a spider downloads itself (``engine.download_async``) never pass the scheduler:
they wait inside ``process_request`` for their origin's robots.txt, and are decided by it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.defer import deferred_f_from_coro_f, deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import DeferredList

import scrapy_rep9309.integration.driver
from scrapy_rep9309.integration.fetch import download
from tests.crawl import Failed, PlanSpider, Seen, run_crawl
from tests.servers import Reply, ServerPool, hang, rules

PRIVATE = "User-agent: *\nDisallow: /private\n"


class DirectSpider(PlanSpider):
    """Crawls ``plan`` (one home page); its callback downloads ``direct`` itself, at once."""

    direct: list[str] = []
    #: Whether the downloads carry the home page's meta (``rep9309_scheduled`` included),
    #: as a callback passing ``response.meta`` on does.
    meta_from_response = False

    async def parse(self, response: Response, **kwargs: Any) -> None:
        super().parse(response)
        assert self.crawler.engine is not None
        meta = dict(response.meta) if self.meta_from_response else {}
        downloads = [deferred_from_coro(self._download(url, meta)) for url in self.direct]
        await maybe_deferred_to_future(DeferredList(downloads, consumeErrors=True))

    async def _download(self, url: str, meta: dict[str, Any]) -> None:
        # The errback must never be called: the exception goes to this caller.
        request = Request(url, meta=dict(meta), dont_filter=True, errback=self.on_error)
        try:
            got = await download(self.crawler, request)
        except IgnoreRequest as exc:
            self.result.failures.append(Failed(url, exc, time.monotonic(), request))
            return
        self.result.responses.append(Seen(got.url, got.status, time.monotonic(), request))


@deferred_f_from_coro_f
async def test_direct_downloads_wait_for_robots_txt_and_every_wake_up_counts(
    servers: ServerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiting download looks every WAIT_POLL_INTERVAL whether the spider closes; with
    that look on every turn of the event loop, a robots.txt answer arriving in the same
    turn as a look must still wake it (it used to be lost: the download waited until
    CLOSESPIDER_TIMEOUT and ended "closed")."""
    monkeypatch.setattr(scrapy_rep9309.integration.driver, "WAIT_POLL_INTERVAL", 0.0)
    home = servers.add(rules("User-agent: *\n"))
    sites = [servers.add(rules(PRIVATE, delay=0.05 * n)) for n in range(1, 9)]
    allowed = [site.url(f"/page/{n}") for site in sites for n in range(4)]
    forbidden = [site.url("/private/page") for site in sites[:2]]
    DirectSpider.direct = allowed + forbidden

    result = await run_crawl([home.url("/")], {"CLOSESPIDER_TIMEOUT": 6}, spider_cls=DirectSpider)

    assert result.stats["finish_reason"] == "finished"
    assert result.urls == {home.url("/"), *allowed}
    assert result.forbidden_urls == set(forbidden)
    assert [len(site.robots_fetches) for site in sites] == [1] * len(sites)
    held_or_waited = 1 + len(allowed) + len(forbidden)  # the home page was held
    assert result.stat("robotstxt/deferred") == held_or_waited
    assert result.stat("robotstxt/deferred/released") == held_or_waited


@deferred_f_from_coro_f
async def test_direct_downloads_of_an_unreachable_origin_end_with_the_reason_at_their_deadline(
    servers: ServerPool,
) -> None:
    """A download waiting inside ``process_request`` for a robots.txt that keeps failing
    (complete disallow) is never sent: at REP9309_DEFER_TIMEOUT it ends with an
    IgnoreRequest naming the failure, counted as expired, and the crawl goes on."""
    home = servers.add(rules("User-agent: *\n"))
    failing = servers.add(Reply(503, "busy"))
    DirectSpider.direct = failing.urls(["/page/1", "/page/2"])
    settings = {"REP9309_DEFER_TIMEOUT": 0.8, "REP9309_RETRY_DELAY": 0.2}

    result = await run_crawl(
        [home.url("/")], {**settings, "CLOSESPIDER_TIMEOUT": 20}, spider_cls=DirectSpider
    )

    assert result.stats["finish_reason"] == "finished"
    assert result.urls == {home.url("/")}
    reason = f"robots.txt of {failing.base} still unknown after 0.8 s (unreachable: HTTP 503)"
    for url in DirectSpider.direct:
        failure = result.failure_for(url)
        assert isinstance(failure.exception, IgnoreRequest)
        assert failure.message == reason
    assert failing.page_requests == []
    assert len(failing.robots_fetches) >= 2, "the fetch was retried while they waited"
    assert result.stat("robotstxt/deferred") == 3  # the home page was held, and released
    assert result.stat("robotstxt/deferred/released") == 1
    assert result.stat("robotstxt/deferred/expired") == 2


@deferred_f_from_coro_f
@pytest.mark.parametrize("jobdir", [False, True], ids=["errback", "jobdir"])
async def test_a_direct_download_with_a_scheduled_requests_meta_ends_once_at_the_close(
    servers: ServerPool, tmp_path: Path, jobdir: bool
) -> None:
    """A download sent with ``engine.download_async`` and the meta of a response (which
    came through the scheduler) waits for a robots.txt that never answers; the spider
    closes. It ends once, raised to its caller: not also in its errback, nor saved under
    JOBDIR as a request from the scheduler would be (found by a second reviewer)."""
    home = servers.add(rules("User-agent: *\n"))
    silent = servers.add(hang())
    DirectSpider.direct = [silent.url("/direct")]
    DirectSpider.meta_from_response = True
    settings: dict[str, Any] = {
        "CLOSESPIDER_TIMEOUT": 3,
        "DOWNLOAD_TIMEOUT": 30,
        "REP9309_FETCH_TIMEOUT": 2,
        "REP9309_DEFER_TIMEOUT": 60,
    }
    if jobdir:
        settings["JOBDIR"] = str(tmp_path / "job")
    try:
        result = await run_crawl([home.url("/")], settings, spider_cls=DirectSpider)
    finally:
        DirectSpider.meta_from_response = False

    assert [failure.url for failure in result.failures] == [silent.url("/direct")]
    assert "Spider closed before the robots.txt" in result.failures[0].message
    assert result.stat("robotstxt/deferred/saved") == 0
    assert result.stat("robotstxt/deferred/closed") == 1
    assert result.stat("robotstxt/requeued") == 0
