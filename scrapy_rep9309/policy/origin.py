"""The origin a robots.txt file governs (RFC 9309 section 2.3).

A robots.txt applies to one scheme, host and port: ``http://a.com`` and
``http://a.com:80`` share one file, ``https://a.com`` and ``http://a.com:8080``
each have their own. Scrapy's built-in middleware keys its cache by netloc,
which merges http with https and splits ``a.com`` from ``a.com:80``.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import idna

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}
_ASCII_HOST = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*")


def normalize_host(host: str) -> str | None:
    """Lower-cased ASCII form of ``host`` (punycode for IDNs), None if invalid.

    Percent-encoded octets of a host name are decoded first (RFC 3986 allows them, and
    browsers and proxies decode them): ``%64eny.example`` is ``deny.example``'s origin.
    An IPv6 literal's ``%25`` starts its zone id, and stays as written."""
    if "%" in host and not host.startswith("["):
        try:
            host = unquote(host, errors="strict")
        except UnicodeDecodeError:
            return None
    host = host.strip().rstrip(".").lower()
    if not host:
        return None
    if host.startswith("[") and host.endswith("]"):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            return None
    if host.isascii():
        return host if _ASCII_HOST.fullmatch(host) else None
    return _to_ascii(host)


def _to_ascii(host: str) -> str | None:
    """IDNA 2008 with UTS 46 mapping, as browsers and Scrapy's URL handling do."""
    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except (UnicodeError, ValueError):
        return None


class Origin(NamedTuple):
    """Scheme, normalised host and explicit port of a URL."""

    scheme: str
    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Origin | None:
        """The origin of an http(s) URL; None for other schemes or a bad host/port."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        return origin_of_netloc(parts.scheme, parts.netloc)

    @classmethod
    def _from_netloc(cls, scheme: str, netloc: str) -> Origin | None:
        try:
            parts = urlsplit(f"{scheme}://{netloc}")
            port = parts.port
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or parts.hostname is None:
            return None
        raw_host = parts.hostname
        if ":" in raw_host:  # urlsplit strips the brackets of IPv6 literals
            raw_host = f"[{raw_host}]"
        host = normalize_host(raw_host)
        if host is None:
            return None
        return cls(scheme, host, DEFAULT_PORTS[scheme] if port is None else port)

    @property
    def robots_url(self) -> str:
        return f"{self}/robots.txt"

    def __str__(self) -> str:
        """``scheme://host[:port]``, one shared string per origin: a crawl keeps it as the
        key of its machine, its store record and its report (interned, so once)."""
        return _origin_string(self.scheme, self.host, self.port)


@lru_cache(maxsize=4096)
def _origin_string(scheme: str, host: str, port: int) -> str:
    """``str(origin)``, made once per origin of those met recently (store keys use it)."""
    if port == DEFAULT_PORTS.get(scheme):
        return sys.intern(f"{scheme}://{host}")
    return sys.intern(f"{scheme}://{host}:{port}")


@lru_cache(maxsize=4096)
def origin_of_netloc(scheme: str, netloc: str) -> Origin | None:
    """``Origin`` from a URL's scheme and netloc; cached, as a crawl meets few hosts often."""
    return Origin._from_netloc(scheme, netloc)
