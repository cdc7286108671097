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
import zlib
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

PROGRESS_INTERVAL = 5.0
_CHUNK = 65536
#: zlib's window bits for the content codings decoded here, as Scrapy's
#: HttpCompressionMiddleware decodes them for the middleware (a server may compress
#: robots.txt though asked not to); deflate is tried zlib-wrapped, then raw.
_WINDOW_BITS = {
    "gzip": (16 + zlib.MAX_WBITS,),
    "x-gzip": (16 + zlib.MAX_WBITS,),
    "deflate": (zlib.MAX_WBITS, -zlib.MAX_WBITS),
}


class _Undecodable(ValueError):
    """A compressed body that does not decode, or decodes past the limit."""


def _brotli_decoder() -> Callable[[bytes, int], bytes] | None:
    """``br``, when a brotli module Scrapy decodes it with is installed (brotli >= 1.2,
    which can bound its output, or brotlicffi): HttpCompressionMiddleware then decodes
    it for the middleware, so ``check`` must too."""
    try:
        import brotli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            return None
    if not hasattr(brotli.Decompressor, "can_accept_more_data"):
        return None  # Scrapy leaves br undecoded with an older brotli

    def decode(body: bytes, limit: int) -> bytes:
        decompressor = brotli.Decompressor()
        try:
            parts = [decompressor.process(body, output_buffer_limit=limit + 1)]
            size = len(parts[0])
            while size <= limit and not decompressor.is_finished():
                part = decompressor.process(b"", output_buffer_limit=limit + 1 - size)
                if not part:
                    break
                parts.append(part)
                size += len(part)
        except brotli.error as error:
            raise _Undecodable("body not decodable as br") from error
        return b"".join(parts)

    return decode


def _zstd_decoder() -> Callable[[bytes, int], bytes] | None:
    """``zstd``, when a zstd module Scrapy decodes it with is installed (the standard
    library's from Python 3.14, backports.zstd, or zstandard)."""
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            zstd = None
    if zstd is not None:

        def decode(body: bytes, limit: int) -> bytes:
            try:
                return zstd.ZstdDecompressor().decompress(body, max_length=limit + 1)  # type: ignore[no-any-return]
            except zstd.ZstdError as error:
                raise _Undecodable("body not decodable as zstd") from error

        return decode
    try:
        import io

        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None

    def decode_with_zstandard(body: bytes, limit: int) -> bytes:
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body))
            return reader.read(limit + 1)  # type: ignore[no-any-return]
        except zstandard.ZstdError as error:
            raise _Undecodable("body not decodable as zstd") from error

    return decode_with_zstandard


#: Content codings other than gzip and deflate, decoded only when the library is there.
_OTHER_DECODERS: dict[str, Callable[[bytes, int], bytes] | None] = {}


def _other_decoder(coding: str) -> Callable[[bytes, int], bytes] | None:
    if coding not in _OTHER_DECODERS:
        finder = {"br": _brotli_decoder, "zstd": _zstd_decoder}.get(coding)
        _OTHER_DECODERS[coding] = finder() if finder is not None else None
    return _OTHER_DECODERS[coding]


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
        except _Undecodable as exc:
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
            codings = response.headers.get("Content-Encoding")
            if codings:
                body = _decoded(body, codings, max_size * DECOMPRESSED_FACTOR)
                truncated = truncated or len(body) > max_size
                body = body[:max_size]
            return response.status, response.headers, body, truncated


def _decoded(body: bytes, codings: str, limit: int) -> bytes:
    """``body`` with its content codings undone, last applied first, as
    HttpCompressionMiddleware undoes them for the middleware: gzip and deflate, br and
    zstd when their library is installed (other codings are left as they are, as it
    leaves those it does not know); _Undecodable past ``limit`` bytes or for data that
    does not decode. A gzip or deflate body cut by the size limit decodes as far as it
    goes."""
    for coding in reversed([part.strip().lower() for part in codings.split(",")]):
        window_bits = _WINDOW_BITS.get(coding)
        if window_bits is None:
            other = _other_decoder(coding)
            if other is None:
                continue
            decoded = other(body, limit)
            if len(decoded) > limit:
                raise _Undecodable(f"compressed body past {limit} bytes decompressed")
            body = decoded
            continue
        for bits in window_bits:
            decompressor = zlib.decompressobj(bits)
            try:
                decoded = decompressor.decompress(body, limit + 1)
            except zlib.error:
                continue
            break
        else:
            raise _Undecodable(f"body not decodable as {coding}")
        if len(decoded) > limit or decompressor.unconsumed_tail:
            raise _Undecodable(f"compressed body past {limit} bytes decompressed")
        body = decoded
    return body


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
