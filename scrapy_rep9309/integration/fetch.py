"""Fetch one origin's robots.txt through the Scrapy engine and classify the outcome.

The request goes through the crawl's downloader middlewares (User-Agent,
proxy, cookies, HTTP cache...) but this module follows redirects itself, so
that it can cap the hops and detect loops, and it stops the download at the
parse limit instead of downloading a huge file whole (RFC 9309 2.3.1.2-2.5).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotSupported, StopDownload
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.python import global_object_name

from scrapy_rep9309.integration.lastlook import install as install_last_look
from scrapy_rep9309.policy.fetchresult import (
    DECOMPRESSED_FACTOR,
    FetchResult,
    answered,
    failed,
    redirect_target,
    refused_locally,
    refused_redirect,
    unfollowable,
)
from scrapy_rep9309.policy.record import UNAVAILABLE, UNREACHABLE

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.signalmanager import SignalManager

    from scrapy_rep9309.integration.lastlook import ResponseLook
    from scrapy_rep9309.integration.settings import Rep9309Settings
    from scrapy_rep9309.policy.origin import Origin

logger = logging.getLogger(__name__)

__all__ = ["FetchResult", "fetch_robots_txt"]

SIZE_BUDGET_META = "_rep9309_size_budget"
#: robots.txt answers replayed by HttpCacheMiddleware that were checked with the server.
RECHECKED_STAT = "robotstxt/http_cache/rechecked"
#: The stat counting fetches that ended without rules, by outcome.
OUTCOME_STATS = {UNAVAILABLE: "robotstxt/unavailable", UNREACHABLE: "robotstxt/unreachable"}
# Meta of every robots.txt request: other middlewares must neither follow,
# retry, filter nor size-limit it; this module does all of that itself.
ROBOTS_REQUEST_META: dict[str, Any] = {
    "dont_obey_robotstxt": True,
    "dont_redirect": True,
    "dont_retry": True,
    "handle_httpstatus_all": True,
    "allow_offsite": True,
    "download_warnsize": 0,
    # A robots.txt the connection cut short is unreachable, not read as whole (a rule cut
    # in half, or missing), whatever DOWNLOAD_FAIL_ON_DATALOSS says for pages.
    "download_fail_on_dataloss": True,
}


class _SizeBudget:
    """Bytes received so far for one robots.txt download."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.received = 0
        #: Whether the response came compressed: an IgnoreRequest after it is then
        #: HttpCompressionMiddleware stopping at the decompression limit.
        self.compressed = False

    @property
    def decompressed_limit(self) -> int:
        return self.limit * DECOMPRESSED_FACTOR

    def cut(self, response: Response) -> Response:
        """``response`` without the bytes past the limit and one more octet (which tells
        the parser whether the last line read is whole, and anyone that it was cut): the
        network read that crossed the limit brought them, as many as it held (up to
        64 KiB)."""
        if len(response.body) <= self.limit + 1:
            return response
        return response.replace(body=response.body[: self.limit + 1])


class _SizeLimiter:
    """The ``bytes_received`` receiver of one crawler; stops robots.txt downloads past the
    limit. Connected only while robots.txt downloads run: Scrapy calls every receiver for
    every chunk of every page, and most of a crawl downloads no robots.txt.

    It holds its crawler weakly: it is the value of a ``WeakKeyDictionary`` keyed by that
    crawler (``_limiters``), and a strong reference would keep every finished crawler,
    with its spider and everything it kept, alive for as long as the process runs."""

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = weakref.ref(crawler)
        self._downloads = 0

    def begin(self) -> None:
        if self._downloads == 0:
            # A bound method: Scrapy logs the receiver's __qualname__ when it stops a download.
            signal_manager = self._signal_manager()
            signal_manager.connect(self.bytes_received, signal=signals.bytes_received)
            signal_manager.connect(self.response_downloaded, signal=signals.response_downloaded)
        self._downloads += 1

    def end(self) -> None:
        self._downloads -= 1
        if self._downloads == 0:
            signal_manager = self._signal_manager()
            signal_manager.disconnect(self.bytes_received, signal=signals.bytes_received)
            signal_manager.disconnect(self.response_downloaded, signal=signals.response_downloaded)

    def _signal_manager(self) -> SignalManager:
        crawler = self._crawler()
        assert crawler is not None  # its downloads run: the crawl is alive
        return crawler.signals

    def bytes_received(self, data: bytes, request: Request, **kwargs: Any) -> None:
        budget = request.meta.get(SIZE_BUDGET_META)
        if budget is None:
            return
        budget.received += len(data)
        if budget.received > budget.limit:
            raise StopDownload(fail=False)

    def response_downloaded(self, response: Response, request: Request, **kwargs: Any) -> None:
        """Bound the decompression that follows (HttpCompressionMiddleware reads
        ``download_maxsize`` then). The download itself is bounded by the budget with
        ``download_maxsize`` 0, so that a Content-Length past it is read in part (RFC 9309
        2.5), not refused."""
        budget = request.meta.get(SIZE_BUDGET_META)
        if budget is None or not response.headers.get(b"Content-Encoding"):
            return
        budget.compressed = True
        request.meta["download_maxsize"] = budget.decompressed_limit


def live_download(request: Request) -> ResponseLook | None:
    """Called just before a request is handed to Scrapy's download handler. A robots.txt
    download is bounded by its size budget (``bytes_received``), read in part past it
    (RFC 9309 2.5): ``download_maxsize`` 0 keeps the handler from refusing a larger
    ``Content-Length`` outright. ``response_downloaded`` bounds the decompression again.

    Returns the budget's ``cut`` for the response as it comes back from the handler,
    before the HTTP cache stores it and HttpCompressionMiddleware decompresses it: a
    compressed body is then decompressed from exactly its first REP9309_MAX_SIZE + 1
    bytes, as ``check`` does (``tools/urlfetch.py``), whatever the network reads were."""
    budget = request.meta.get(SIZE_BUDGET_META)
    if budget is None:
        return None
    request.meta["download_maxsize"] = 0
    return budget.cut


def _decompression_refused(exc: IgnoreRequest) -> bool:
    """Whether HttpCompressionMiddleware refused the body past ``download_maxsize`` (it
    raises IgnoreRequest from its own ValueError subclass; a cache replay sets no flag)."""
    return isinstance(exc.__cause__, ValueError) and "decompress" in str(exc)


_limiters: weakref.WeakKeyDictionary[Crawler, _SizeLimiter] = weakref.WeakKeyDictionary()


def _size_limiter(crawler: Crawler) -> _SizeLimiter:
    limiter = _limiters.get(crawler)
    if limiter is None:
        limiter = _limiters[crawler] = _SizeLimiter(crawler)
    return limiter


def robots_request(
    url: str,
    max_size: int,
    *,
    proxy: str | None = None,
    user_agent: str | bytes | None = None,
    extra_meta: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Request:
    """The request for one hop; headers other than User-Agent come from the crawl's middlewares.

    ``extra_meta`` (REP9309_FETCH_META) comes after the triggering request's ``proxy``,
    so ``{"proxy": None}`` sends robots.txt direct; it cannot change the control keys
    (the settings refuse such a value). ``timeout`` (REP9309_FETCH_TIMEOUT) becomes
    ``download_timeout``; without it the crawl's DownloadTimeoutMiddleware sets one.
    """
    meta: dict[str, Any] = dict(ROBOTS_REQUEST_META)
    if proxy:
        meta["proxy"] = proxy
    if extra_meta:
        meta.update(extra_meta)
    if timeout is not None:
        meta["download_timeout"] = timeout
    budget = meta[SIZE_BUDGET_META] = _SizeBudget(max_size)
    # Bounds the decompression of an answer replayed by HttpCacheMiddleware, which never
    # reaches the download handler; a download sets it to 0 first (``live_download``).
    meta["download_maxsize"] = budget.decompressed_limit
    # Uncompressed, so that the size limit is a limit on what is parsed (see
    # DECOMPRESSED_FACTOR for servers that compress all the same).
    headers: dict[str, str | bytes] = {"Accept-Encoding": "identity"}
    if user_agent:
        headers["User-Agent"] = user_agent
    return Request(url, meta=meta, headers=headers, callback=NO_CALLBACK, dont_filter=True)


async def download(crawler: Crawler, request: Request) -> Response:
    """Send ``request`` through the engine (``download_async`` on Scrapy >= 2.14)."""
    engine = crawler.engine
    assert engine is not None
    if hasattr(engine, "download_async"):
        return await engine.download_async(request)
    return await maybe_deferred_to_future(engine.download(request))  # pragma: no cover


async def fetch_robots_txt(
    crawler: Crawler,
    origin: Origin,
    settings: Rep9309Settings,
    *,
    proxy: str | None = None,
    user_agent: str | bytes | None = None,
) -> FetchResult:
    """Fetch ``origin``'s robots.txt, following at most REP9309_MAX_REDIRECTS redirects.

    Each hop carries REP9309_FETCH_META and REP9309_FETCH_TIMEOUT. Never raises for
    network errors or odd responses: every failure is a classified ``FetchResult``.
    Counts the ``robotstxt/*`` fetch stats.
    """
    limiter = _size_limiter(crawler)
    if crawler.engine is not None:
        # The middleware's last look calls ``live_download``; without the middleware
        # (``scrapy robots`` outside a project using it), this does.
        install_last_look(crawler.engine.downloader, live_download)
    stats = crawler.stats
    assert stats is not None
    url = origin.robots_url
    visited = {url}
    redirects: list[str] = []

    def hop_request(url: str, **meta: Any) -> Request:
        return robots_request(
            url,
            settings.max_size,
            proxy=proxy,
            user_agent=user_agent,
            extra_meta={**settings.fetch_meta, **meta} if meta else settings.fetch_meta,
            timeout=settings.fetch_timeout,
        )

    while True:
        request = hop_request(url)
        stats.inc_value("robotstxt/request_count")
        limiter.begin()
        try:
            response = await download(crawler, request)
            why = _replay_to_check(response, settings.cache_ttl, time.time())
            if why is not None:
                live = hop_request(url, dont_cache=True)
                response = await _checked_live(crawler, live, response, why)
        except (IgnoreRequest, NotSupported) as exc:
            budget = request.meta[SIZE_BUDGET_META]
            if isinstance(exc, IgnoreRequest) and (
                budget.compressed or _decompression_refused(exc)
            ):
                # HttpCompressionMiddleware gave up (on a download or a cache's replay):
                # no body to parse.
                error = f"compressed body past {budget.decompressed_limit} bytes decompressed"
                logger.debug("robots.txt %s unreadable: %s", url, error)
                return _count(crawler, failed(origin, url, tuple(redirects), error))
            # Refused before it left: by another downloader middleware (IgnoreRequest), or
            # for want of a download handler (NotSupported: none for its scheme, say; the
            # origin's pages then fail the same way in the downloader, as with Scrapy's
            # built-in middleware, instead of being held for REP9309_DEFER_TIMEOUT behind
            # retries that cannot succeed).
            reason = f"{global_object_name(type(exc))}: {exc}"
            logger.debug("robots.txt %s refused by the crawl: %s", url, reason)
            return _count(crawler, refused_locally(origin, url, tuple(redirects), reason))
        except Exception as exc:
            error = global_object_name(type(exc))
            stats.inc_value(f"robotstxt/exception_count/{error}")
            logger.debug("robots.txt %s failed: %s (%s)", url, error, exc)
            return _count(crawler, failed(origin, url, tuple(redirects), error))
        finally:
            limiter.end()
        stats.inc_value("robotstxt/response_count")
        stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        target = redirect_target(response.url, response.status, response.headers.get(b"Location"))
        if target is None:
            return _count(crawler, _answered(origin, response, tuple(redirects), settings))
        reason = unfollowable(target, visited, len(redirects), settings.max_redirects)
        if reason is not None:
            logger.debug("robots.txt of %s unavailable: %s", origin, reason)
            return _count(
                crawler, refused_redirect(origin, response.status, url, tuple(redirects), reason)
            )
        stats.inc_value("robotstxt/redirects")
        redirects.append(target)
        visited.add(target)
        url = target


def _server_failed(status: int) -> bool:
    """A 5xx or 429: the server answered that it cannot answer now (unreachable, as
    ``outcome_of_status`` reads them), which says nothing of what it will answer later."""
    return status == 429 or status >= 500


def _replay_to_check(response: Response, ttl: float, now: float) -> str | None:
    """Why a robots.txt answer replayed by HttpCacheMiddleware (flagged ``cached``) must
    be checked with the server, or None to take it as it is.

    The HTTP cache's policy may keep an answer for ever (``DummyPolicy``, the default).
    A replayed server error or 429 says nothing of the server now: replayed at every
    retry, it would hold the origin's requests until they expire. A copy older than
    REP9309_CACHE_TTL by its ``Date`` header must not decide (RFC 9309 2.4)."""
    if "cached" not in response.flags:
        return None
    if _server_failed(response.status):
        return f"a cached HTTP {response.status}"
    # Loaded with the cache's policies and storages already: nothing to import otherwise.
    from scrapy.extensions.httpcache import rfc1123_to_epoch

    sent = rfc1123_to_epoch(response.headers.get(b"Date"))
    if sent is not None and now - sent > ttl:
        return f"a cached copy {(now - sent) / 3600:.0f} h old"
    return None


async def _checked_live(crawler: Crawler, live: Request, cached: Response, why: str) -> Response:
    """Download ``live`` (the replayed hop again, with ``dont_cache``); the cached answer
    stands if the server cannot answer (RFC 9309 2.4: an older copy may be used while the
    file is unreachable). Counts the answer it does not return, as the caller counts the
    one it does."""
    stats = crawler.stats
    assert stats is not None
    stats.inc_value(RECHECKED_STAT)
    stats.inc_value("robotstxt/request_count")
    try:
        answer = await download(crawler, live)
    except Exception as exc:  # a refusal or a network error: the replay stands
        if not isinstance(exc, IgnoreRequest):
            stats.inc_value(f"robotstxt/exception_count/{global_object_name(type(exc))}")
        logger.debug(
            "robots.txt %s: %s could not be checked with the server (%s): it stands",
            live.url,
            why,
            global_object_name(type(exc)),
        )
        return cached
    discarded = answer if _server_failed(answer.status) else cached
    stats.inc_value("robotstxt/response_count")
    stats.inc_value(f"robotstxt/response_status_count/{discarded.status}")
    if discarded is answer:
        logger.debug(
            "robots.txt %s: %s; the server answers HTTP %s: the cached answer stands",
            live.url,
            why,
            answer.status,
        )
        return cached
    logger.debug("robots.txt %s: %s, downloaded again", live.url, why)
    return answer


def _answered(
    origin: Origin, response: Response, redirects: tuple[str, ...], settings: Rep9309Settings
) -> FetchResult:
    body = response.body
    return answered(
        origin,
        response.status,
        # One octet past the limit: the parser drops a last line the limit cuts only when
        # it sees that the line goes on (``rules/parser.py``, ``limit_size``).
        body[: settings.max_size + 1],
        redirects=redirects,
        final_url=response.url,
        truncated="download_stopped" in response.flags or len(body) > settings.max_size,
        cache_control=response.headers.getlist(b"Cache-Control"),
        retry_after=response.headers.get(b"Retry-After"),
        now=time.time(),
    )


def _count(crawler: Crawler, result: FetchResult) -> FetchResult:
    stats = crawler.stats
    assert stats is not None
    if result.truncated:
        stats.inc_value("robotstxt/truncated")
    if result.outcome in OUTCOME_STATS:
        stats.inc_value(OUTCOME_STATS[result.outcome])
    return result
