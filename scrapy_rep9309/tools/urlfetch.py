"""Fetch a robots.txt with urllib, classified the way the middleware classifies it.

Used by ``python -m scrapy_rep9309 check``, which runs without Scrapy's engine
(and must not import it): redirects are followed here (so cross-host hops and
loops are seen) and the body is read up to the size limit and no further; the
redirect rules and the classification are ``fetchresult``'s, shared with the
middleware's fetcher.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from typing import IO

from scrapy_rep9309.policy.fetchresult import (
    DECOMPRESSED_FACTOR,
    DEFAULT_MAX_REDIRECTS,
    DEFAULT_MAX_SIZE,
    FetchResult,
    answered,
    failed,
    redirect_target,
    refused_redirect,
    unfollowable,
)
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.tools.contentcoding import Undecodable, decoded

PROGRESS_INTERVAL = 5.0
_CHUNK = 65536


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
) -> FetchResult:
    """Fetch ``url`` following at most ``max_redirects`` redirects; never raises for HTTP.

    ``url`` must be an http(s) URL (ValueError otherwise); the result's origin is its origin.
    """
    origin = Origin.from_url(url)
    if origin is None:
        raise ValueError(f"not an http(s) URL: {url!r}")
    opener = urllib.request.build_opener(_NoRedirects)
    redirects: list[str] = []
    seen = {url}
    current = url
    while True:
        progress(f"fetching {current}")
        try:
            status, headers, body, truncated = _get(
                opener, current, user_agent, timeout, max_size, progress
            )
        except Undecodable as exc:
            return failed(origin, current, tuple(redirects), str(exc))
        except (OSError, ValueError) as exc:
            return failed(origin, current, tuple(redirects), _describe_error(exc))
        target = redirect_target(current, status, headers.get("Location"))
        if target is None:
            return answered(
                origin,
                status,
                body,
                redirects=tuple(redirects),
                final_url=current,
                truncated=truncated,
                cache_control=headers.get_all("Cache-Control") or [],
                retry_after=headers.get("Retry-After"),
            )
        problem = unfollowable(target, seen, len(redirects), max_redirects)
        if problem is not None:
            progress(f"{status} redirect to {target}: {problem}")
            return refused_redirect(origin, status, current, tuple(redirects), problem)
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


def _get(
    opener: urllib.request.OpenerDirector,
    url: str,
    user_agent: str,
    timeout: float,
    max_size: int,
    progress: Callable[[str], None],
) -> tuple[int, Message, bytes, bool]:
    """One GET: status, headers, body up to ``max_size`` (decoded if the server compressed
    it), whether it was cut."""
    headers = {"User-Agent": user_agent, "Accept-Encoding": "identity"}  # as the middleware
    request = urllib.request.Request(url, headers=headers)
    with _still_waiting(url, progress):
        try:
            response = opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as error:
            response = error
        with response:
            body, truncated = _read_limited(response, max_size)
            codings = response.headers.get_all("Content-Encoding")
            if codings:
                body = decoded(body, codings, max_size * DECOMPRESSED_FACTOR)
                truncated = truncated or len(body) > max_size
                body = body[:max_size]
            return response.status, response.headers, body, truncated


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
