"""Bench-only: what this plugin's design costs before it parses or decides anything.

``bench_crawl.py``'s ``holdonly`` contender is the floor (``ROBOTSTXT_OBEY=False``) plus
this middleware. It does what the design asks of any middleware built like this plugin,
and nothing more: a request whose origin's robots.txt is not yet downloaded is held
outside the downloader (answered with an ``IgnoreRequest`` failure in Scrapy's
``request_scheduled`` signal, as the plugin does), the robots.txt is downloaded once
through Scrapy's engine, and the held requests are then handed back to the engine on a
fresh call stack. It never parses the file or decides anything, keeps no record, store
or timer, does not bound how many downloads run at once, takes no last look before
sending, and drops what it holds if the spider closes meanwhile (the plugin ends those
with a reason): less than any real handling built this way must do.

Scrapy's built-in waits for robots.txt inside the downloader instead (the origin's
requests take download slots meanwhile, the head-of-line scenario); that also lets the
downloader fill up by chance, which switches Scrapy's engine to its faster pace
(docs/benchmarks.md, "Two paces"). What this contender costs against the built-in is
what holding outside the downloader costs on its own, before any robots.txt handling.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.log import failure_to_exc_info
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# The same priority Scrapy's built-in RobotsTxtMiddleware gives its robots.txt requests.
ROBOTS_TXT_PRIORITY = 1000
# Marks this middleware's own robots.txt requests, which are never held.
OWN_REQUEST_META = "hold_only_robotstxt"
# Marks a request handed back to the engine, let through on its second pass.
RELEASED_META = "hold_only_released"
DOWNLOADED_STAT = "holdonly/robotstxt_downloaded"
FAILED_STAT = "holdonly/robotstxt_failed"
HELD_STAT = "holdonly/held"
RELEASED_STAT = "holdonly/released"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Returned, not raised, as the plugin does: a raised one leaves a reference cycle.
_HELD = Failure(IgnoreRequest("Held until the origin's robots.txt is downloaded"))


class HoldOnlyMiddleware:
    """Holds an origin's requests outside the downloader until its robots.txt is downloaded."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.downloaded: set[tuple[str, str, int]] = set()
        self.held: dict[tuple[str, str, int], list[Request]] = {}
        crawler.signals.connect(self.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HoldOnlyMiddleware:
        return cls(crawler)

    def request_scheduled(self, request: Request, spider: Spider, **kwargs: Any) -> Failure | None:
        """Let the request through if its origin's robots.txt is downloaded; hold it otherwise."""
        meta = request.meta
        if meta.get(OWN_REQUEST_META) or meta.pop(RELEASED_META, None):
            return None
        parsed = urlparse_cached(request)
        if parsed.scheme not in _DEFAULT_PORTS or not parsed.hostname:
            return None
        origin = (parsed.scheme, parsed.hostname, parsed.port or _DEFAULT_PORTS[parsed.scheme])
        if origin in self.downloaded:
            return None
        held = self.held.get(origin)
        if held is None:
            self.held[origin] = [request]
            url = f"{parsed.scheme}://{parsed.netloc}/robots.txt"
            running = deferred_from_coro(self._download_then_release(origin, url))
            running.addErrback(_log_failure)
        else:
            held.append(request)
        self._inc(HELD_STAT)
        return _HELD

    def spider_idle(self, spider: Spider) -> None:
        """Requests held here are not in Scrapy's scheduler: the spider must wait for them."""
        if self.held:
            raise DontCloseSpider

    async def _download_then_release(self, origin: tuple[str, str, int], url: str) -> None:
        robots_txt = Request(
            url,
            priority=ROBOTS_TXT_PRIORITY,
            meta={"dont_obey_robotstxt": True, OWN_REQUEST_META: True},
            callback=NO_CALLBACK,
            dont_filter=True,
        )
        downloaded = False
        try:
            await self._engine_download(robots_txt)
            downloaded = True
        except Exception:  # any failure of the download is counted alike
            pass
        finally:  # released whatever happened (cancelled too): nothing stays held
            self._inc(DOWNLOADED_STAT if downloaded else FAILED_STAT)
            self.downloaded.add(origin)
            from twisted.internet import reactor

            reactor.callLater(0, self._release, origin)

    def _release(self, origin: tuple[str, str, int]) -> None:
        engine = self.crawler.engine
        held = self.held.pop(origin)
        if engine is None or engine.spider is None:  # closed meanwhile: dropped
            return
        for request in held:
            request.meta[RELEASED_META] = True
            self._inc(RELEASED_STAT)
            engine.crawl(request)

    async def _engine_download(self, request: Request) -> Response:
        engine = self.crawler.engine
        assert engine is not None
        if hasattr(engine, "download_async"):  # Scrapy >= 2.14
            return await engine.download_async(request)
        return await maybe_deferred_to_future(engine.download(request))  # pragma: no cover

    def _inc(self, key: str) -> None:
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(key)


def _log_failure(failure: Failure) -> None:
    logger.error("hold-only: holding or releasing failed", exc_info=failure_to_exc_info(failure))
