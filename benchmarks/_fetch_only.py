"""Bench-only downloader middleware: each origin's robots.txt downloaded, nothing else.

``bench_crawl.py``'s ``fetchonly`` contender is the floor (``ROBOTSTXT_OBEY=False``)
plus this middleware. It downloads every origin's robots.txt through Scrapy's
downloader, as any robots.txt middleware must, and never parses it or decides anything.
What it costs over the floor is the cost of the robots.txt downloads alone: a bound no
robots.txt handling that downloads through the engine can beat.

The origin's first request waits for the download, as in any handling that decides
before sending: the page then reuses the robots.txt's connection. A first version let
the page go at once; it raced the robots.txt for the origin, opened a second connection
per origin (200 instead of 100 at 100 origins) and cost more CPU per page than Scrapy's
built-in, which parses and decides too: no bound. Later requests of the origin go at
once, even while the download is under way, so the slow robots.txt of the head-of-line
scenario holds one request (one of ``CONCURRENT_REQUESTS``), not the origin's queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

# The same priority Scrapy's built-in RobotsTxtMiddleware gives its robots.txt requests.
ROBOTS_TXT_PRIORITY = 1000
# Marks this middleware's own robots.txt requests so they are not counted as an origin's first.
OWN_REQUEST_META = "fetch_only_robotstxt"
STARTED_STAT = "fetchonly/robotstxt_started"
DOWNLOADED_STAT = "fetchonly/robotstxt_downloaded"
FAILED_STAT = "fetchonly/robotstxt_failed"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchOnlyMiddleware:
    """One robots.txt download per origin (scheme, host, port); nothing parsed or decided."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.origins_seen: set[tuple[str, str, int]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchOnlyMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        """The origin's first request downloads its robots.txt, then goes on; others at once.

        ``spider`` is passed by Scrapy < 2.14 (and unused)."""
        if request.meta.get(OWN_REQUEST_META) or request.meta.get("dont_obey_robotstxt"):
            return
        parsed = urlparse_cached(request)
        if parsed.scheme not in _DEFAULT_PORTS or not parsed.hostname:
            return
        origin = (parsed.scheme, parsed.hostname, parsed.port or _DEFAULT_PORTS[parsed.scheme])
        if origin in self.origins_seen:
            return
        self.origins_seen.add(origin)
        await self._download(f"{parsed.scheme}://{parsed.netloc}/robots.txt")

    async def _download(self, url: str) -> None:
        """Counted, never raised nor logged: the bound is the download's cost, not its outcome."""
        robots_txt = Request(
            url,
            priority=ROBOTS_TXT_PRIORITY,
            meta={"dont_obey_robotstxt": True, OWN_REQUEST_META: True},
            callback=NO_CALLBACK,
            dont_filter=True,
        )
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(STARTED_STAT)
        try:
            await self._engine_download(robots_txt)
        except Exception:  # any failure of the download is counted alike
            stats.inc_value(FAILED_STAT)
        else:
            stats.inc_value(DOWNLOADED_STAT)

    async def _engine_download(self, request: Request) -> Response:
        engine = self.crawler.engine
        assert engine is not None
        if hasattr(engine, "download_async"):  # Scrapy >= 2.14
            return await engine.download_async(request)
        return await maybe_deferred_to_future(engine.download(request))  # pragma: no cover
