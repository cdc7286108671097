"""Fetch a robots.txt with urllib, classified the way the middleware classifies it.

Used by ``python -m scrapy_rep9309 check``, which runs without Scrapy's engine:
redirects are followed here (so cross-host hops and loops are seen), the body
is read up to the size limit and no further, and the status decides the
outcome: 2xx "available", 4xx except 429 "unavailable" (allow all), 429, 5xx,
any other status and network errors "unreachable" (disallow all).
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO
from urllib.parse import urljoin, urlsplit

from scrapy_rep9309.state import AVAILABLE, UNAVAILABLE, UNREACHABLE

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_MAX_SIZE = 512000
DEFAULT_MAX_REDIRECTS = 5
PROGRESS_INTERVAL = 5.0
_CHUNK = 65536


@dataclass(frozen=True)
class UrlFetchResult:
    """How a robots.txt fetch ended (same field names as ``fetch.FetchResult``)."""

    outcome: str
    status: int | None
    body: bytes
    redirects: tuple[str, ...]
    final_url: str
    truncated: bool = False
    error: str | None = None


def classify(status: int) -> str:
    """Outcome of a final (non-redirect) HTTP status, per RFC 9309 section 2.3.1."""
    if 200 <= status < 300:
        return AVAILABLE
    if 400 <= status < 500 and status != 429:
        return UNAVAILABLE
    return UNREACHABLE


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Hand 3xx back to the caller, which counts hops and spots loops itself."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def fetch_robots(
    url: str,
    *,
    user_agent: str,
    timeout: float,
    max_size: int = DEFAULT_MAX_SIZE,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    progress: Callable[[str], None] = lambda message: None,
) -> UrlFetchResult:
    """Fetch ``url`` following at most ``max_redirects`` redirects; never raises for HTTP."""
    opener = urllib.request.build_opener(_NoRedirects)
    redirects: list[str] = []
    seen = {url}
    current = url
    while True:
        progress(f"fetching {current}")
        try:
            status, location, body, truncated = _get(
                opener, current, user_agent, timeout, max_size, progress
            )
        except (OSError, ValueError) as exc:
            error = _describe_error(exc)
            return UrlFetchResult(UNREACHABLE, None, b"", tuple(redirects), current, error=error)
        if status not in REDIRECT_STATUSES or location is None:
            outcome = classify(status)
            return UrlFetchResult(outcome, status, body, tuple(redirects), current, truncated)
        target = urljoin(current, location)
        problem = _redirect_problem(target, seen, len(redirects), max_redirects)
        if problem is not None:
            progress(f"{status} redirect to {target}: {problem}")
            return UrlFetchResult(
                UNAVAILABLE, status, b"", tuple(redirects), current, error=problem
            )
        progress(f"{status} redirect to {target}")
        redirects.append(target)
        seen.add(target)
        current = target


def _describe_error(exc: Exception) -> str:
    """``builtins.ConnectionRefusedError: [Errno 111] ...``, looking through URLError."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if not isinstance(reason, BaseException):
        return f"{type(exc).__module__}.{type(exc).__qualname__}: {reason}"
    return f"{type(reason).__module__}.{type(reason).__qualname__}: {reason}"


def _redirect_problem(target: str, seen: set[str], hops: int, max_redirects: int) -> str | None:
    """Why a redirect must not be followed (RFC 9309 2.3.1.2: give up, allow all)."""
    if urlsplit(target).scheme not in ("http", "https"):
        return f"redirect to a non-HTTP URL: {target}"
    if target in seen:
        return f"redirect loop back to {target}"
    if hops >= max_redirects:
        return f"more than {max_redirects} redirects"
    return None


def _get(
    opener: urllib.request.OpenerDirector,
    url: str,
    user_agent: str,
    timeout: float,
    max_size: int,
    progress: Callable[[str], None],
) -> tuple[int, str | None, bytes, bool]:
    """One GET: status, Location header, body up to ``max_size``, whether it was cut."""
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})
    with _still_waiting(url, progress):
        try:
            response = opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as error:
            response = error
        with response:
            body, truncated = _read_limited(response, max_size)
            return response.status, response.headers.get("Location"), body, truncated


def _read_limited(response: IO[bytes], max_size: int) -> tuple[bytes, bool]:
    """Read at most ``max_size`` bytes; the rest is never downloaded."""
    chunks: list[bytes] = []
    size = 0
    while size <= max_size:
        chunk = response.read(min(_CHUNK, max_size + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    body = b"".join(chunks)
    return body[:max_size], len(body) > max_size


@contextmanager
def _still_waiting(url: str, progress: Callable[[str], None]) -> Iterator[None]:
    """Report every few seconds while a fetch is slow, so the user never waits in silence."""
    done = threading.Event()
    started = time.monotonic()

    def report() -> None:
        while not done.wait(PROGRESS_INTERVAL):
            progress(f"still waiting for {url} ({time.monotonic() - started:.0f} s)")

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()
