"""Bench-only downloader middleware: each origin's robots.txt downloaded, nothing else.

``bench_crawl.py``'s ``fetchonly`` contender is the floor (``ROBOTSTXT_OBEY=False``)
plus this middleware. It downloads every origin's robots.txt through Scrapy's
downloader, as any robots.txt middleware must, but never waits for it, never parses it
and never decides anything: the page goes on at once. What it costs over the floor is
the cost of the robots.txt downloads alone, a bound no robots.txt handling that
downloads through the engine can beat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

# The same priority Scrapy's built-in RobotsTxtMiddleware gives its robots.txt requests.
ROBOTS_TXT_PRIORITY = 1000
# Marks this middleware's own robots.txt requests so they are not counted as an origin's first.
OWN_REQUEST_META = "fetch_only_robotstxt"
STARTED_STAT = "fetchonly/robotstxt_started"
DOWNLOADED_STAT = "fetchonly/robotstxt_downloaded"
FAILED_STAT = "fetchonly/robotstxt_failed"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchOnlyMiddleware:
    """One robots.txt download per origin (scheme, host, port); every request passes at once."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.origins_seen: set[tuple[str, str, int]] = set()
        # Downloads under way, kept referenced so none is garbage-collected mid-flight.
        self.in_flight: set[Deferred[Any]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchOnlyMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        """The first request of an origin starts its robots.txt download; none waits for it."""
        if request.meta.get(OWN_REQUEST_META) or request.meta.get("dont_obey_robotstxt"):
            return
        parsed = urlparse_cached(request)
        if parsed.scheme not in _DEFAULT_PORTS or not parsed.hostname:
            return
        origin = (parsed.scheme, parsed.hostname, parsed.port or _DEFAULT_PORTS[parsed.scheme])
        if origin in self.origins_seen:
            return
        self.origins_seen.add(origin)
        self._start_download(f"{parsed.scheme}://{parsed.netloc}/robots.txt")

    def _start_download(self, url: str) -> None:
        robots_txt = Request(
            url,
            priority=ROBOTS_TXT_PRIORITY,
            meta={"dont_obey_robotstxt": True, OWN_REQUEST_META: True},
            callback=NO_CALLBACK,
            dont_filter=True,
        )
        stats, engine = self.crawler.stats, self.crawler.engine
        assert stats is not None and engine is not None
        stats.inc_value(STARTED_STAT)
        if hasattr(engine, "download_async"):  # Scrapy >= 2.14
            download = deferred_from_coro(engine.download_async(robots_txt))
        else:  # pragma: no cover
            download = engine.download(robots_txt)
        self.in_flight.add(download)

        def downloaded(_: Any) -> None:
            stats.inc_value(DOWNLOADED_STAT)

        def failed(_: Failure) -> None:
            """Counted, not logged: the bound is about the download's cost, not its outcome."""
            stats.inc_value(FAILED_STAT)

        download.addCallbacks(downloaded, failed)
        download.addBoth(lambda _: self.in_flight.discard(download))
