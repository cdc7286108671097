"""How a robots.txt fetch ends, judged the same way whatever downloaded it.

The middleware and ``scrapy robots`` fetch through Scrapy's engine (``fetch.py``);
``python -m scrapy_rep9309 check`` fetches with urllib (``urlfetch.py``) and must
not import Scrapy. Both follow redirects with the rules below and build their
``FetchResult`` here, so the two can never classify a fetch differently.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from w3lib.url import safe_url_string

from scrapy_rep9309.policy.cachecontrol import parse_cache_control, parse_retry_after
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.policy.record import AVAILABLE, UNAVAILABLE, UNREACHABLE, outcome_of_status

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_MAX_REDIRECTS = 5
#: RFC 9309 section 2.5: parse at least 500 KiB; also the smallest limit accepted.
DEFAULT_MAX_SIZE = 512000
#: How many times the size limit a robots.txt sent compressed may decompress to. It is
#: asked for uncompressed (``Accept-Encoding: identity``), but a server may compress it
#: anyway, and a few hundred KiB can decompress to gigabytes: past this, the fetch is
#: unreachable (the middleware's and ``check``'s alike).
DECOMPRESSED_FACTOR = 8


@dataclass(frozen=True)
class FetchResult:
    """How a robots.txt fetch ended (see the behaviour table in docs/behaviour.md).

    ``body`` is kept only when ``outcome`` is "available"; ``retry_after`` only
    when it is "unreachable".
    """

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
    #: The request was refused before it left (another downloader middleware raised
    #: IgnoreRequest): nothing was asked of the server, so nothing says it is down.
    refused: bool = False


def answered(
    origin: Origin,
    status: int,
    body: bytes,
    *,
    redirects: tuple[str, ...],
    final_url: str,
    truncated: bool,
    cache_control: list[str | bytes],
    retry_after: str | bytes | None,
    now: float,
) -> FetchResult:
    """The result of a final (non-redirect) response, classified per RFC 9309 2.3.1;
    ``now`` (Unix time) resolves a ``Retry-After`` given as an HTTP date."""
    outcome = outcome_of_status(status)
    cache = parse_cache_control(cache_control)
    return FetchResult(
        origin=origin,
        outcome=outcome,
        status=status,
        body=body if outcome == AVAILABLE else b"",
        redirects=redirects,
        final_url=final_url,
        truncated=truncated and outcome == AVAILABLE,
        retry_after=parse_retry_after(retry_after, now) if outcome == UNREACHABLE else None,
        max_age=cache.max_age,
        no_store=cache.no_store,
    )


def redirect_target(url: str, status: int, location: str | bytes | None) -> str | None:
    """The absolute URL a response redirects to (fragment dropped); None if not a redirect.

    An empty ``Location`` names no target: the response is not a redirect (joined to
    the robots.txt URL it would read as a loop back to it, so "unavailable", allow all)."""
    if status not in REDIRECT_STATUSES or location is None:
        return None
    if isinstance(location, bytes):
        location = location.decode("latin-1")
    location = location.strip()
    if not location:
        return None
    try:
        return urljoin(url, safe_url_string(location)).split("#", 1)[0]
    except ValueError:  # no URL at all (``http://[::1``): ``unfollowable`` says so
        return location


def unfollowable(target: str, visited: set[str], hops: int, max_hops: int) -> str | None:
    """Why a redirect to ``target`` is not followed (RFC 9309 2.3.1.2: then unavailable)."""
    try:
        scheme = urlsplit(target).scheme
    except ValueError:
        return f"redirect to an invalid URL: {target}"
    if scheme not in ("http", "https"):
        return f"redirect to a non-HTTP URL: {target}"
    if Origin.from_url(target) is None:
        return f"redirect to an invalid URL: {target}"
    if target in visited:
        return f"redirect loop back to {target}"
    if hops >= max_hops:
        return f"more than {max_hops} redirects"
    return None


def refused_redirect(
    origin: Origin, status: int, url: str, redirects: tuple[str, ...], reason: str
) -> FetchResult:
    """The result when a redirect is not followed: "unavailable", ``error`` says why."""
    return FetchResult(origin, UNAVAILABLE, status, b"", redirects, url, error=reason)


def refused_locally(
    origin: Origin, url: str, redirects: tuple[str, ...], reason: str
) -> FetchResult:
    """The result when the crawl itself refused the request: "unavailable" (allow all),
    as Scrapy's built-in middleware does; a local refusal is not an unreachable server."""
    return FetchResult(origin, UNAVAILABLE, None, b"", redirects, url, error=reason, refused=True)


def failed(origin: Origin, url: str, redirects: tuple[str, ...], error: str) -> FetchResult:
    """The result when ``url`` gave no response at all: "unreachable"."""
    return FetchResult(origin, UNREACHABLE, None, b"", redirects, url, error=error)
