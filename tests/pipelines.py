"""Item pipelines for tests: components that download before ``spider_opened``."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class DownloadingAtOpenPipeline:
    """Downloads the pages of the ``PIPELINE_URLS`` setting, one after the other, in its
    ``open_spider``, which the engine runs before it sends ``spider_opened`` (a pipeline
    that fetches its configuration, say)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DownloadingAtOpenPipeline:
        return cls(crawler)

    def open_spider(self, spider: object = None) -> Awaitable[None]:
        engine = self.crawler.engine
        assert engine is not None
        if getattr(engine, "download_async", None) is None:  # Scrapy 2.13 waits for a Deferred
            return deferred_from_coro(self._download_pages())
        return self._download_pages()  # a coroutine, which Scrapy >= 2.14 awaits

    async def _download_pages(self) -> None:
        engine = self.crawler.engine
        assert engine is not None
        for url in self.crawler.settings.getlist("PIPELINE_URLS"):
            request = Request(url, dont_filter=True)
            download_async = getattr(engine, "download_async", None)
            if download_async is None:  # Scrapy 2.13
                await maybe_deferred_to_future(engine.download(request))
            else:
                await download_async(request)

    def process_item(self, item: object, spider: object = None) -> object:
        return item


#: ``ITEM_PIPELINES`` with :class:`DownloadingAtOpenPipeline`.
DOWNLOADING_AT_OPEN = {f"{__name__}.DownloadingAtOpenPipeline": 100}
