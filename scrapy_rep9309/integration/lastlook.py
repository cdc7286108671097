"""One last look at a request just before Scrapy sends it.

Downloader middlewares see a request when it enters Scrapy's downloader. Behind them it
may still wait in its download slot's queue: while the slot has as many requests in
transfer as it may, or waits out ``DOWNLOAD_DELAY`` or AutoThrottle's delay (up to
``CONCURRENT_REQUESTS`` requests, so that many delays). A robots.txt copy that expires
meanwhile, or a newer one that arrives, must still decide the request: the newest usable
copy decides at download time (RFC 9309 2.4). Scrapy has no hook between the slot queue
and the network, so the downloader's handlers are wrapped: every request goes through
``check`` first, which may raise to stop it there (it then goes through the downloader
middlewares' ``process_exception``, as a failed download does). ``check`` may also return
a look at the response, taken as it comes back from the handler, before any downloader
middleware sees it (``integration/fetch.py`` cuts a robots.txt body there).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.downloader import Downloader
    from scrapy.http import Response
    from twisted.internet.defer import Deferred

#: What a check returns for a request whose response needs a look as well: it takes the
#: response from the download handler and returns the one the middlewares get.
ResponseLook = Callable[["Response"], "Response"]
#: The check: raises to stop the request; returns a look at its response, or None.
Check = Callable[["Request"], "ResponseLook | None"]


class LastLook:
    """Scrapy's download handlers (``Downloader.handlers``) behind one check."""

    def __init__(self, handlers: Any, check: Check) -> None:
        self.handlers = handlers
        self.check = check

    def download_request_async(self, request: Request) -> Coroutine[Any, Any, Response]:
        # Not a coroutine itself: a request that passes, with no look at its response,
        # costs no extra frame.
        look = self.check(request)
        download = self.handlers.download_request_async(request)
        if look is None:
            return download  # type: ignore[no-any-return]
        return _looked_at(download, look)

    def download_request(self, request: Request, spider: Spider | None = None) -> Deferred[Any]:
        """Scrapy < 2.14's entry point (it turns an exception into a failed Deferred)."""
        look = self.check(request)
        download: Deferred[Any] = self.handlers.download_request(request, spider)
        if look is not None:
            download.addCallback(look)
        return download

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handlers, name)


async def _looked_at(download: Coroutine[Any, Any, Response], look: ResponseLook) -> Response:
    return look(await download)


def install(downloader: Downloader, check: Check, *, replace: bool = False) -> None:
    """Put ``check`` in front of ``downloader``'s handlers (once per downloader); with
    ``replace``, instead of a check put there before.

    The middleware's check replaces the robots.txt fetch's (``live_download``, which it
    calls itself): a component may download through the engine before the middleware
    hears ``spider_opened`` (an item pipeline's ``open_spider`` runs first), and that
    download's robots.txt fetch puts its check there first."""
    handlers = downloader.handlers
    if isinstance(handlers, LastLook):
        if replace:
            handlers.check = check
        return
    downloader.handlers = LastLook(handlers, check)  # type: ignore[assignment]
