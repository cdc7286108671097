"""What is known about one origin's robots.txt, and how a fetch result changes it.

The record is plain data (bytes, numbers, strings; Unix times) so that a store
can serialise it to disk or share it between processes. The rules are parsed
from ``body`` when needed and cached beside the record, never inside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scrapy_rep9309.policy.fetchresult import FetchResult

AVAILABLE = "available"
UNAVAILABLE = "unavailable"
UNREACHABLE = "unreachable"
PENDING = "pending"


class RecordTiming(Protocol):
    """The durations records are built with (``Rep9309Settings`` provides them)."""

    cache_ttl: float
    retry_delay: float
    retry_max_delay: float
    stale_ttl: float


# ``Cache-Control: no-store`` and ``max-age=0`` ask for a fetch before every
# use, i.e. one robots.txt request per page. They are read as "keep it this
# long" instead (capped by REP9309_CACHE_TTL); a positive max-age is honoured.
NO_REUSE_TTL = 60.0


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


@dataclass(frozen=True)
class OriginRecord:
    """The answer in use for one origin, plus the backoff state of failed fetches.

    ``outcome`` is ``available`` or ``unavailable`` once a fetch was answered, and
    ``unreachable`` while no answer was ever obtained. After an answer expires,
    failed refreshes keep it (for ``REP9309_STALE_TTL``) and only bump
    ``failures``/``retry_at``.
    """

    outcome: str
    status: int | None
    body: bytes
    fetched_at: float
    expires_at: float
    failures: int = 0
    retry_at: float = 0.0
    last_failure: str | None = None
    #: Where the answer came from when robots.txt redirected (the final URL); None when
    #: it came from the origin's own ``/robots.txt``. A spider's own robots.txt request
    #: answered from this copy gets it as ``response.url``, as after a real download.
    redirected_to: str | None = None

    @property
    def answered(self) -> bool:
        return self.outcome in (AVAILABLE, UNAVAILABLE)

    def is_fresh(self, now: float) -> bool:
        return self.answered and now < self.expires_at

    def is_usable(self, now: float, stale_ttl: float) -> bool:
        """Whether requests may be decided now without waiting for a fetch."""
        if self.is_fresh(now):
            return True
        return (
            self.answered
            and self.failures > 0
            and now < self.retry_at
            and now < self.expires_at + stale_ttl
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["body"] = self.body.decode("latin-1")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OriginRecord:
        return cls(**{**data, "body": data["body"].encode("latin-1")})


def cache_lifetime(result: FetchResult, settings: RecordTiming) -> float:
    """REP9309_CACHE_TTL, shortened (never lengthened) by the response's Cache-Control."""
    if result.no_store or (result.max_age is not None and result.max_age < 1):
        return min(settings.cache_ttl, NO_REUSE_TTL)
    if result.max_age is not None:
        return min(settings.cache_ttl, result.max_age)
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
