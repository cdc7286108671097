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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import StopDownload
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.python import global_object_name
from w3lib.url import safe_url_string

from scrapy_rep9309.cachecontrol import parse_cache_control, parse_retry_after
from scrapy_rep9309.state import AVAILABLE, UNAVAILABLE, UNREACHABLE, outcome_of_status

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_rep9309.origin import Origin
    from scrapy_rep9309.settings import Rep9309Settings

logger = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
SIZE_BUDGET_META = "_rep9309_size_budget"
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
    "download_maxsize": 0,
    "download_warnsize": 0,
}


@dataclass(frozen=True)
class FetchResult:
    """How a robots.txt fetch ended (see the README behaviour table)."""

    origin: Origin
    outcome: str
    status: int | None
    body: bytes
    redirects: tuple[str, ...]
    final_url: str
    truncated: bool = False
    error: str | None = None
    retry_after: float | None = None
    max_age: float | None = None
    no_store: bool = False


class _SizeBudget:
    """Bytes received so far for one robots.txt download."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.received = 0


class _SizeLimiter:
    """One ``bytes_received`` receiver per crawler; stops robots.txt downloads past the limit."""

    def bytes_received(self, data: bytes, request: Request, **kwargs: Any) -> None:
        budget = request.meta.get(SIZE_BUDGET_META)
        if budget is None:
            return
        budget.received += len(data)
        if budget.received > budget.limit:
            raise StopDownload(fail=False)


_limiters: weakref.WeakKeyDictionary[Crawler, _SizeLimiter] = weakref.WeakKeyDictionary()


def _ensure_size_limiter(crawler: Crawler) -> None:
    if crawler not in _limiters:
        limiter = _SizeLimiter()
        _limiters[crawler] = limiter
        # A bound method: Scrapy logs the receiver's __qualname__ when it stops a download.
        crawler.signals.connect(limiter.bytes_received, signal=signals.bytes_received)


def robots_request(
    url: str,
    max_size: int,
    *,
    proxy: str | None = None,
    user_agent: str | bytes | None = None,
) -> Request:
    """The request for one hop; headers other than User-Agent come from the crawl's middlewares."""
    meta = {**ROBOTS_REQUEST_META, SIZE_BUDGET_META: _SizeBudget(max_size)}
    if proxy:
        meta["proxy"] = proxy
    headers = {"User-Agent": user_agent} if user_agent else None
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

    Never raises for network errors or odd responses: every failure is a
    classified ``FetchResult``. Counts the ``robotstxt/*`` fetch stats.
    """
    _ensure_size_limiter(crawler)
    stats = crawler.stats
    assert stats is not None
    url = origin.robots_url
    visited = {url}
    redirects: list[str] = []
    while True:
        request = robots_request(url, settings.max_size, proxy=proxy, user_agent=user_agent)
        stats.inc_value("robotstxt/request_count")
        try:
            response = await download(crawler, request)
        except Exception as exc:
            error = global_object_name(type(exc))
            stats.inc_value(f"robotstxt/exception_count/{error}")
            logger.debug("robots.txt %s failed: %s (%s)", url, error, exc)
            return _count(
                crawler,
                FetchResult(origin, UNREACHABLE, None, b"", tuple(redirects), url, error=error),
            )
        stats.inc_value("robotstxt/response_count")
        stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        target = _redirect_target(response)
        if target is None:
            return _count(crawler, _classify(origin, response, tuple(redirects), settings))
        reason = _unfollowable(target, visited, len(redirects), settings.max_redirects)
        if reason is not None:
            logger.debug("robots.txt %s redirect %s: %s -> unavailable", origin, reason, target)
            return _count(
                crawler,
                FetchResult(origin, UNAVAILABLE, response.status, b"", tuple(redirects), url),
            )
        stats.inc_value("robotstxt/redirects")
        redirects.append(target)
        visited.add(target)
        url = target


def _redirect_target(response: Response) -> str | None:
    """The absolute URL a redirect points to, None if ``response`` is not a redirect."""
    if response.status not in REDIRECT_STATUSES or b"Location" not in response.headers:
        return None
    location = safe_url_string(response.headers[b"Location"].decode("latin-1").strip())
    return urljoin(response.url, location).split("#", 1)[0]


def _unfollowable(target: str, visited: set[str], hops: int, max_hops: int) -> str | None:
    """Why a redirect to ``target`` is not followed (the robots.txt is then unavailable)."""
    if target in visited:
        return "loop"
    if hops >= max_hops:
        return "too many redirects"
    if urlsplit(target).scheme not in ("http", "https"):
        return "not http(s)"
    return None


def _classify(
    origin: Origin, response: Response, redirects: tuple[str, ...], settings: Rep9309Settings
) -> FetchResult:
    status = response.status
    cache = parse_cache_control(response.headers.getlist(b"Cache-Control"))
    common: dict[str, Any] = {
        "origin": origin,
        "status": status,
        "redirects": redirects,
        "final_url": response.url,
        "max_age": cache.max_age,
        "no_store": cache.no_store,
    }
    outcome = outcome_of_status(status)
    if outcome == AVAILABLE:
        body = response.body
        truncated = "download_stopped" in response.flags or len(body) > settings.max_size
        return FetchResult(
            outcome=AVAILABLE, body=body[: settings.max_size], truncated=truncated, **common
        )
    if outcome == UNAVAILABLE:
        return FetchResult(outcome=UNAVAILABLE, body=b"", **common)
    retry_after = parse_retry_after(response.headers.get(b"Retry-After"), time.time())
    return FetchResult(outcome=UNREACHABLE, body=b"", retry_after=retry_after, **common)


def _count(crawler: Crawler, result: FetchResult) -> FetchResult:
    stats = crawler.stats
    assert stats is not None
    if result.truncated:
        stats.inc_value("robotstxt/truncated")
    if result.outcome in OUTCOME_STATS:
        stats.inc_value(OUTCOME_STATS[result.outcome])
    return result
