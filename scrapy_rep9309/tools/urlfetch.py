"""Fetch a robots.txt with urllib, classified the way the middleware classifies it.

Used by ``python -m scrapy_rep9309 check``, which runs without Scrapy's engine
(and must not import it): redirects are followed here (so cross-host hops and
loops are seen) and the body is read up to the size limit and no further; the
redirect rules and the classification are ``fetchresult``'s, shared with the
middleware's fetcher.

Where urllib reads an answer differently from Scrapy's downloader (Twisted), this
module reads it as a crawl does, so that ``check`` and a crawl decide alike: a body
shorter than its ``Content-Length`` or a conflicting or invalid ``Content-Length`` is a
failed download (unreachable), as is any answer ``http.client`` cannot read; TLS
certificates are not verified (Scrapy's default context factory does not verify them).
Two differences remain, documented in docs/api.md: ``http.client`` takes a ``103``
answer for the final one and refuses more than 100 header lines.
"""

from __future__ import annotations

import http.client
import re
import ssl
import threading
import time
import urllib.error
import urllib.parse
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


#: Statuses whose answer has no body: Twisted reads none of their framing headers.
_NO_BODY_STATUSES = (204, 304)
#: Twisted's ``Content-Length`` value: decimal digits, blanks around them allowed.
_DECIMAL = re.compile(rb"[ \t]*[0-9]+[ \t]*")


class BadFraming(ValueError):
    """The answer's body cannot be told apart from what follows it, or came short: a
    crawl's download fails there (Twisted's parser, Scrapy's data loss check)."""


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
    url = _without_userinfo(url)  # a crawl fetches the origin's robots.txt, without it
    opener = urllib.request.build_opener(
        _NoRedirects, urllib.request.HTTPSHandler(context=_unverified_tls())
    )
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
        except (OSError, ValueError, http.client.HTTPException) as exc:
            # HTTPException: a status or header line that cannot be read, a chunked body
            # cut short; a crawl's download fails on all of them.
            return failed(origin, current, tuple(redirects), _describe_error(exc))
        # The last Location line, as Scrapy's Headers.get reads it.
        location = (headers.get_all("Location") or [None])[-1]
        target = redirect_target(current, status, location)
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
                now=time.time(),
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
    """One GET: status, headers, body up to ``max_size`` and one more octet (decoded if
    the server compressed it), whether it was cut. The octet past the limit, as in a
    crawl, tells the parser whether the last line read is whole."""
    headers = {"User-Agent": user_agent, "Accept-Encoding": "identity"}  # as the middleware
    request = urllib.request.Request(url, headers=headers)
    with _still_waiting(url, progress):
        try:
            response = opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as error:
            response = error
        with response:
            if response.status not in _NO_BODY_STATUSES:
                _check_framing(response.headers)
            body, truncated = _read_limited(response, max_size)
            missing = getattr(response, "length", None)
            if missing and not truncated:  # the connection closed before the end
                raise BadFraming(f"data loss: {missing} bytes short of Content-Length")
            codings = response.headers.get_all("Content-Encoding")
            if codings:
                body = decoded(body, codings, max_size * DECOMPRESSED_FACTOR)
                truncated = truncated or len(body) > max_size
                body = body[: max_size + 1]
            return response.status, response.headers, body, truncated


def _check_framing(headers: Message) -> None:
    """Raise BadFraming where Twisted refuses the answer: a ``Transfer-Encoding`` whose
    first line is not ``chunked`` (the only one it decodes); without one,
    ``Content-Length`` values (all its lines, comma-separated lists too) that are not
    decimal numbers, or that differ."""
    encodings = headers.get_all("Transfer-Encoding")
    if encodings:
        if encodings[0].strip().lower() != "chunked":
            raise BadFraming(f"transfer coding {encodings[0]!r} cannot be decoded")
        return
    values = [
        value.encode("latin-1", "replace")
        for line in headers.get_all("Content-Length") or []
        for value in line.split(",")
    ]
    if not values:
        return
    if not all(_DECIMAL.fullmatch(value) for value in values):
        raise BadFraming(f"invalid Content-Length {values!r}")
    if len({int(value) for value in values}) > 1:
        raise BadFraming(f"conflicting Content-Length headers {values!r}")


def _without_userinfo(url: str) -> str:
    """``url`` without ``user:password@``, which urllib would take for part of the host."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _unverified_tls() -> ssl.SSLContext:
    """TLS as Scrapy's downloader speaks it by default: certificates not verified."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _read_limited(response: IO[bytes], max_size: int) -> tuple[bytes, bool]:
    """Read at most ``max_size`` bytes and one more; the rest is never downloaded."""
    chunks: list[bytes] = []
    size = 0
    while size <= max_size:
        chunk = response.read(min(_CHUNK, max_size + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    body = b"".join(chunks)
    return body, len(body) > max_size


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
