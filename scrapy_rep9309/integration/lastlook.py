"""One last look at a request just before Scrapy sends it.

Downloader middlewares see a request when it enters Scrapy's downloader. Behind them it
may still wait in its download slot's queue: while the slot has as many requests in
transfer as it may, or waits out ``DOWNLOAD_DELAY`` or AutoThrottle's delay (up to
``CONCURRENT_REQUESTS`` requests, so that many delays). A robots.txt copy that expires
meanwhile, or a newer one that arrives, must still decide the request: the newest usable
copy decides at download time (RFC 9309 2.4). Scrapy has no hook between the slot queue
and the network, so the downloader's handlers are wrapped: every request goes through
``check`` first, which may raise to stop it there (it then goes through the downloader
middlewares' ``process_exception``, as a failed download does).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.downloader import Downloader
    from scrapy.http import Response
    from twisted.internet.defer import Deferred


class LastLook:
    """Scrapy's download handlers (``Downloader.handlers``) behind one check."""

    def __init__(self, handlers: Any, check: Callable[[Request], None]) -> None:
        self.handlers = handlers
        self.check = check

    def download_request_async(self, request: Request) -> Coroutine[Any, Any, Response]:
        # Not a coroutine itself: a request that passes costs no extra frame.
        self.check(request)
        return self.handlers.download_request_async(request)  # type: ignore[no-any-return]

    def download_request(self, request: Request, spider: Spider | None = None) -> Deferred[Any]:
        """Scrapy < 2.14's entry point (it turns an exception into a failed Deferred)."""
        self.check(request)
        return self.handlers.download_request(request, spider)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handlers, name)


def install(downloader: Downloader, check: Callable[[Request], None]) -> None:
    """Put ``check`` in front of ``downloader``'s handlers (once per downloader)."""
    if not isinstance(downloader.handlers, LastLook):
        downloader.handlers = LastLook(downloader.handlers, check)  # type: ignore[assignment]
