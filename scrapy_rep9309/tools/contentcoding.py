"""Undo a robots.txt body's content codings the way a crawl does, for ``check``.

A server may compress robots.txt although it was asked for it uncompressed. In a crawl,
Scrapy's ``HttpCompressionMiddleware`` decodes it before the middleware parses it; ``check``
runs without Scrapy, so it must decode the same bytes to the same text, or the two would
decide differently. Mirrored here:

- the codings of every ``Content-Encoding`` line, undone last applied first, stopping at
  the first one it cannot undo (the body is then parsed as far as it was decoded);
- gzip reads every member, and a body cut short decodes as far as it goes (an error
  before any output is an error); deflate is tried zlib-wrapped, then raw; br needs
  ``brotli`` >= 1.2 (or ``brotlicffi``), zstd the standard library's ``compression.zstd``,
  ``backports.zstd`` or ``zstandard``, each read across frames;
- decoding stops past ``limit`` bytes (``Undecodable``), so a "zip bomb" costs at most
  that much memory.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

_CHUNK = 65536

Decoder = Callable[[bytes, int], bytes]


class Undecodable(ValueError):
    """A compressed body that does not decode, or decodes past the limit."""


def decoded(body: bytes, header_values: Sequence[str], limit: int) -> bytes:
    """``body`` with the codings of its ``Content-Encoding`` lines undone (see above)."""
    pending = [coding.strip().lower() for value in header_values for coding in value.split(",")]
    while pending:
        decode = _decoder(pending.pop())
        if decode is None:
            break  # as HttpCompressionMiddleware: it stops at a coding it cannot undo
        body = decode(body, limit)
    return body


def _bounded(chunks: Iterator[bytes], limit: int) -> bytes:
    """Join ``chunks``; Undecodable once they pass ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise Undecodable(f"compressed body past {limit} bytes decompressed")
        parts.append(chunk)
    return b"".join(parts)


def _gunzip(body: bytes, limit: int) -> bytes:
    def chunks() -> Iterator[bytes]:
        reader = gzip.GzipFile(fileobj=io.BytesIO(body))
        produced = False
        while True:
            try:
                chunk = reader.read1(_CHUNK)
            except (OSError, EOFError, struct.error) as error:
                if produced:
                    return  # cut short, or a bad checksum: what decoded stands
                raise Undecodable("body not decodable as gzip") from error
            if not chunk:
                return
            produced = True
            yield chunk

    return _bounded(chunks(), limit)


def _inflate(body: bytes, limit: int) -> bytes:
    for window_bits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):  # zlib-wrapped, then raw
        decompressor = zlib.decompressobj(window_bits)
        try:
            output = decompressor.decompress(body, limit + 1)
        except zlib.error:
            continue
        if len(output) > limit or decompressor.unconsumed_tail:
            raise Undecodable(f"compressed body past {limit} bytes decompressed")
        return output
    raise Undecodable("body not decodable as deflate")


def _brotli() -> Decoder | None:
    try:
        import brotli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            return None
    if not hasattr(brotli.Decompressor, "can_accept_more_data"):
        return None  # Scrapy leaves br undecoded with an older brotli

    def unbrotli(body: bytes, limit: int) -> bytes:
        def chunks() -> Iterator[bytes]:
            decompressor = brotli.Decompressor()
            try:
                yield decompressor.process(body, output_buffer_limit=_CHUNK)
                while not decompressor.is_finished():
                    chunk = decompressor.process(b"", output_buffer_limit=_CHUNK)
                    if not chunk:
                        return
                    yield chunk
            except brotli.error as error:
                raise Undecodable("body not decodable as br") from error

        return _bounded(chunks(), limit)

    return unbrotli


def _zstd() -> Decoder | None:
    zstd: Any
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            zstd = None
    if zstd is not None:

        def reader(body: bytes) -> Any:
            return zstd.ZstdFile(io.BytesIO(body))

        errors: tuple[type[BaseException], ...] = (zstd.ZstdError,)
    else:
        try:
            import zstandard  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            return None

        def reader(body: bytes) -> Any:
            decompressor = zstandard.ZstdDecompressor()
            return decompressor.stream_reader(io.BytesIO(body), read_across_frames=True)

        errors = (zstandard.ZstdError,)

    def unzstd(body: bytes, limit: int) -> bytes:
        def chunks() -> Iterator[bytes]:
            stream = reader(body)
            while True:
                try:
                    chunk = stream.read(_CHUNK)
                except EOFError:
                    return  # cut short: what decoded stands
                except errors as error:
                    raise Undecodable("body not decodable as zstd") from error
                if not chunk:
                    return
                yield chunk

        return _bounded(chunks(), limit)

    return unzstd


_FINDERS: dict[str, Callable[[], Decoder | None]] = {
    "gzip": lambda: _gunzip,
    "x-gzip": lambda: _gunzip,
    "deflate": lambda: _inflate,
    "br": _brotli,
    "zstd": _zstd,
}
#: Each coding's decoder once looked for (None: its library is not installed).
_FOUND: dict[str, Decoder | None] = {}


def _decoder(coding: str) -> Decoder | None:
    if coding not in _FOUND:
        finder = _FINDERS.get(coding)
        _FOUND[coding] = None if finder is None else finder()
    return _FOUND[coding]
