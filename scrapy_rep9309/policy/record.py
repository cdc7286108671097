"""What is known about one origin's robots.txt, and how a fetch result changes it.

The record is plain data (bytes, numbers, strings; Unix times) so that a store
can serialise it to disk or share it between processes. The rules are parsed
from ``body`` when needed and cached beside the record, never inside it.

A crawl keeps one record per origin for hours, so the body is kept compressed
(``packed_body``, zlib): robots.txt files compress to about a fifth. ``body`` gives
the octets as fetched; what stores and JOBDIR write is unchanged.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Protocol

from scrapy_rep9309.policy.cachecontrol import RETRY_AFTER_LIMIT
from scrapy_rep9309.rules.parser import MIN_MAX_SIZE, whole_lines

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy_rep9309.policy.fetchresult import FetchResult

AVAILABLE = "available"
UNAVAILABLE = "unavailable"
UNREACHABLE = "unreachable"
PENDING = "pending"


class RecordTiming(Protocol):
    """The durations records are built with (``Rep9309Settings`` provides them)."""

    cache_ttl: float
    min_ttl: float
    retry_delay: float
    retry_max_delay: float
    stale_ttl: float


def outcome_of_status(status: int) -> str:
    """Outcome of a final (non-redirect) HTTP status, per RFC 9309 section 2.3.1.

    2xx: rules; 4xx except 429: no rules (allow all); 429 (as Google does), 5xx
    and anything else: unreachable (complete disallow).
    """
    if 200 <= status < 300:
        return AVAILABLE
    if 400 <= status < 500 and status != 429:
        return UNAVAILABLE
    return UNREACHABLE


#: zlib's level for kept bodies: level 6 packs robots.txt files 10% tighter than level 1
#: and a body is packed once per fetch.
PACK_LEVEL = 6


@dataclass(frozen=True, slots=True, init=False)
class OriginRecord:
    """The answer in use for one origin, plus the backoff state of failed fetches.

    ``outcome`` is ``available`` or ``unavailable`` once a fetch was answered, and
    ``unreachable`` while no answer was ever obtained. After an answer expires,
    failed refreshes keep it (for ``REP9309_STALE_TTL``) and only bump
    ``failures``/``retry_at``.

    Built with ``body`` (the octets as fetched); ``packed_body`` is that body
    compressed (``b""`` for none), given instead by ``dataclasses.replace``.
    """

    outcome: str
    status: int | None
    packed_body: bytes
    fetched_at: float
    expires_at: float
    failures: int
    retry_at: float
    last_failure: str | None
    #: Where the answer came from when robots.txt redirected (the final URL); None when
    #: it came from the origin's own ``/robots.txt``. A spider's own robots.txt request
    #: answered from this copy gets it as ``response.url``, as after a real download.
    redirected_to: str | None
    #: Whether the body was cut at REP9309_MAX_SIZE: the copy then cannot stand in for a
    #: spider's own download of robots.txt. Not always told by the body's length: a body
    #: sent compressed is cut before it is decompressed.
    truncated: bool

    def __init__(
        self,
        outcome: str,
        status: int | None,
        body: bytes | None = None,
        fetched_at: float = 0.0,
        expires_at: float = 0.0,
        failures: int = 0,
        retry_at: float = 0.0,
        last_failure: str | None = None,
        redirected_to: str | None = None,
        truncated: bool = False,
        *,
        packed_body: bytes | None = None,
    ) -> None:
        if packed_body is None:
            packed_body = zlib.compress(body, PACK_LEVEL) if body else b""
        elif body is not None:
            raise TypeError("give body or packed_body, not both")
        for name, value in (
            ("outcome", outcome),
            ("status", status),
            ("packed_body", packed_body),
            ("fetched_at", fetched_at),
            ("expires_at", expires_at),
            ("failures", failures),
            ("retry_at", retry_at),
            ("last_failure", last_failure),
            ("redirected_to", redirected_to),
            ("truncated", truncated),
        ):
            object.__setattr__(self, name, value)

    @property
    def body(self) -> bytes:
        """The robots.txt octets as fetched (unpacked at each call: keep the result)."""
        return zlib.decompress(self.packed_body) if self.packed_body else b""

    @property
    def answered(self) -> bool:
        return self.outcome in (AVAILABLE, UNAVAILABLE)

    def is_fresh(self, now: float) -> bool:
        return self.answered and now < self.expires_at

    def is_usable(self, now: float, stale_ttl: float) -> bool:
        """Whether requests may be decided now without waiting for a fetch."""
        return now < self.usable_until(stale_ttl)

    def in_backoff(self, now: float) -> bool:
        """Whether fetches failed and the next attempt is not due yet (the one test of
        it: the machine, the stores and the JOBDIR state keep such records, so that a
        failing server is not fetched again at once)."""
        return self.failures > 0 and self.retry_at > now

    def usable_until(self, stale_ttl: float) -> float:
        """The Unix time from which this copy no longer decides requests: when it expires,
        or, while refreshes fail (RFC 9309 2.4: a stale copy may be used), when the next
        attempt is due or the copy is ``stale_ttl`` past its expiry, whichever is first.
        Minus infinity for a copy without an answer."""
        if not self.answered:
            return -math.inf
        if self.failures > 0:
            return max(self.expires_at, min(self.retry_at, self.expires_at + stale_ttl))
        return self.expires_at

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON can hold them, the body unpacked (JOBDIR's format)."""
        return {
            "outcome": self.outcome,
            "status": self.status,
            "body": self.body.decode("latin-1"),
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "failures": self.failures,
            "retry_at": self.retry_at,
            "last_failure": self.last_failure,
            "redirected_to": self.redirected_to,
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OriginRecord:
        """The record ``to_dict`` made; ValueError for anything else (a state file
        damaged or edited by hand must not fail every request of its origin later)."""
        unknown = set(data) - _FIELDS
        if unknown:
            raise ValueError(f"unknown record fields {sorted(unknown)}")
        body = data.get("body")
        if not isinstance(body, str):
            raise ValueError("the body is not a string")
        return cls.from_fields(data, body.encode("latin-1"))

    @classmethod
    def from_fields(cls, data: Mapping[str, Any], body: bytes) -> OriginRecord:
        """A record from fields read from outside the process (a JOBDIR state file, a
        store's record), checked one by one: ValueError names the first that is wrong."""
        outcome = data.get("outcome")
        if outcome not in (AVAILABLE, UNAVAILABLE, UNREACHABLE):
            raise ValueError(f"outcome {outcome!r} is not one a fetch ends with")
        times = [data.get(name) for name in ("fetched_at", "expires_at", "retry_at")]
        if not all(is_finite_number(value) for value in times):
            raise ValueError("times are not finite numbers")
        status, failures = data.get("status"), data.get("failures")
        if status is not None and not _is_integer(status):
            raise ValueError("status is not a number")
        if not _is_integer(failures) or failures < 0:
            raise ValueError("failures is not a count")
        for name in ("last_failure", "redirected_to"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} is not a string")
        truncated = data.get("truncated")
        expires_at = times[1]
        if truncated is None:
            # A record of an earlier version, which kept no octet past REP9309_MAX_SIZE:
            # one that long may be cut in the middle of a line (which would be read), or
            # whole: it is due for a refresh at once, and until one answers (a stale copy)
            # read as cut, without a last line that has no line end.
            truncated = len(body) >= MIN_MAX_SIZE
            if truncated:
                body = whole_lines(body)
                expires_at = min(expires_at, times[0])
        elif not isinstance(truncated, bool):
            raise ValueError("truncated is not true or false")
        return cls(
            outcome,
            status,
            body,
            fetched_at=float(times[0]),
            expires_at=float(expires_at),
            failures=failures,
            retry_at=float(times[2]),
            last_failure=data.get("last_failure"),
            redirected_to=data.get("redirected_to"),
            truncated=truncated,
        )


def cache_lifetime(result: FetchResult, settings: RecordTiming) -> float:
    """REP9309_CACHE_TTL, shortened (never lengthened) by the response's Cache-Control,
    to REP9309_MIN_TTL at the least.

    ``no-store``, ``no-cache`` and ``max-age=0`` ask for a fetch before every use, a short
    ``max-age`` for one every few seconds: one robots.txt request per page, or several
    (each page that waits in its download slot past the copy's life is held for a new
    one). They are read as REP9309_MIN_TTL instead, so that a site sending them sees at
    most one robots.txt request per origin in that time."""
    if result.no_store:
        return min(settings.cache_ttl, settings.min_ttl)
    if result.max_age is not None:
        return min(settings.cache_ttl, max(result.max_age, settings.min_ttl))
    return settings.cache_ttl


def retry_delay(failures: int, retry_after: float | None, settings: RecordTiming) -> float:
    """Exponential backoff capped by REP9309_RETRY_MAX_DELAY; a longer Retry-After wins."""
    backoff = min(settings.retry_max_delay, settings.retry_delay * 2 ** min(failures - 1, 64))
    return max(backoff, retry_after or 0.0)


def describe_failure(result: FetchResult) -> str:
    return result.error or f"HTTP {result.status}"


def record_after_fetch(
    previous: OriginRecord | None,
    result: FetchResult,
    settings: RecordTiming,
    now: float,
) -> OriginRecord:
    """The record to store once ``result`` arrived at Unix time ``now``."""
    if result.outcome != UNREACHABLE:
        return OriginRecord(
            outcome=result.outcome,
            status=result.status,
            body=result.body if result.outcome == AVAILABLE else b"",
            fetched_at=now,
            expires_at=now + cache_lifetime(result, settings),
            redirected_to=result.final_url if result.redirects else None,
            truncated=result.truncated and result.outcome == AVAILABLE,
        )
    failures = (previous.failures if previous is not None else 0) + 1
    retry_at = now + retry_delay(failures, result.retry_after, settings)
    failure = describe_failure(result)
    if (
        previous is not None
        and previous.answered
        and now < previous.expires_at + settings.stale_ttl
    ):
        return replace(previous, failures=failures, retry_at=retry_at, last_failure=failure)
    return OriginRecord(
        outcome=UNREACHABLE,
        status=result.status,
        body=b"",
        fetched_at=now,
        expires_at=now,
        failures=failures,
        retry_at=retry_at,
        last_failure=failure,
    )


def kept_over_ours(stored: OriginRecord, ours: OriginRecord, now: float) -> bool:
    """After our save lost its compare-and-set: whether the record someone else stored
    stands, rather than ours written over it. Of a fresh answer and a failure to reach
    the server, the fresh answer stands, whichever came later: a fresh copy may decide
    while the file is unreachable (RFC 9309 2.4), and the failure may be the fetcher's
    own (a process stalled past its lease times out late). Else the later fetch stands."""
    if UNREACHABLE in (stored.outcome, ours.outcome):
        stored_fresh, ours_fresh = stored.is_fresh(now), ours.is_fresh(now)
        if stored_fresh != ours_fresh:
            return stored_fresh
    return stored.fetched_at >= ours.fetched_at


def within_limits(record: OriginRecord, settings: RecordTiming, now: float) -> OriginRecord:
    """A record read back from outside this run (a JOBDIR state file), held to this run's
    settings: fetched no later than ``now``, used no longer than REP9309_CACHE_TTL after
    that, and retried no later than the longest wait a fetch could have set (a hand-edited
    or far-future time would otherwise keep a copy, or a backoff, for ever)."""
    fetched_at = min(record.fetched_at, now)
    expires_at = min(record.expires_at, fetched_at + settings.cache_ttl)
    retry_at = min(record.retry_at, now + max(settings.retry_max_delay, RETRY_AFTER_LIMIT))
    if (fetched_at, expires_at, retry_at) == (
        record.fetched_at,
        record.expires_at,
        record.retry_at,
    ):
        return record
    return replace(record, fetched_at=fetched_at, expires_at=expires_at, retry_at=retry_at)


#: The fields of ``OriginRecord.to_dict``: the body unpacked.
_FIELDS = frozenset({field.name for field in fields(OriginRecord)} - {"packed_body"} | {"body"})


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """Whether ``value`` read from outside (JSON) is a number of seconds or a time: an
    int or float, not a bool, not NaN or infinite."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False
