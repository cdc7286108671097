"""Header parsing and the record lifecycle behind each fetch outcome (no network)."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from scrapy_rep9309.integration.fetch import FetchResult
from scrapy_rep9309.integration.settings import Rep9309Settings
from scrapy_rep9309.policy.cachecontrol import (
    CacheDirectives,
    parse_cache_control,
    parse_retry_after,
)
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.policy.record import (
    AVAILABLE,
    UNAVAILABLE,
    UNREACHABLE,
    cache_lifetime,
    outcome_of_status,
    record_after_fetch,
    retry_delay,
)

NOW = 1_700_000_000.0
ORIGIN = Origin("https", "a.com", 443)
SETTINGS = Rep9309Settings(
    cache_ttl=1000, retry_delay=10, retry_max_delay=50, stale_ttl=500, defer_timeout=100
)


def _result(outcome: str, status: int | None = 200, **kwargs: object) -> FetchResult:
    body = b"User-agent: *\nDisallow: /x\n" if outcome == AVAILABLE else b""
    return FetchResult(ORIGIN, outcome, status, body, (), ORIGIN.robots_url, **kwargs)  # type: ignore[arg-type]


# -- Retry-After ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (b"0", 0.0),
        (" 7 ", 7.0),
        (formatdate(NOW + 90, usegmt=True), 90.0),
        (formatdate(NOW - 90, usegmt=True), 0.0),
        (None, None),
        ("", None),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("Mon, 99 Foo 2024 99:99:99 GMT", None),
        ("\u0661\u0662", None),
        # Longer than RETRY_AFTER_LIMIT (30 days) is that limit, even past a float's range.
        ("2592000", 2592000.0),
        ("0000000000120", 120.0),
        ("2592001", 2592000.0),
        ("9" * 400, 2592000.0),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 2592000.0),
    ],
)
def test_retry_after(value: str | bytes | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


# -- Cache-Control --------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (None, CacheDirectives()),
        ("max-age=300", CacheDirectives(max_age=300)),
        (b"public, MAX-AGE=60", CacheDirectives(max_age=60)),
        ('max-age="30"', CacheDirectives(max_age=30)),
        (["max-age=300", "max-age=100"], CacheDirectives(max_age=100)),
        ("no-store", CacheDirectives(no_store=True)),
        ("no-cache", CacheDirectives(no_store=True)),
        ("private, max-age=0", CacheDirectives(max_age=0)),
        ("max-age=abc, max-age=-1, max-age=", CacheDirectives()),
        ("s-maxage=10", CacheDirectives()),
    ],
)
def test_cache_control(values: object, expected: CacheDirectives) -> None:
    assert parse_cache_control(values) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("max_age", "no_store", "expected"),
    [
        (None, False, 1000),
        (300, False, 300),
        (5000, False, 1000),
        (60, False, 60),
        # A shorter max-age, max-age=0, no-store and no-cache: REP9309_MIN_TTL (60 s).
        (1, False, 60),
        (59, False, 60),
        (0, False, 60),
        (None, True, 60),
        (300, True, 60),
    ],
)
def test_cache_lifetime_only_shortens(
    max_age: float | None, no_store: bool, expected: float
) -> None:
    result = _result(AVAILABLE, max_age=max_age, no_store=no_store)
    assert cache_lifetime(result, SETTINGS) == expected


def test_no_store_never_lengthens_a_short_ttl() -> None:
    settings = Rep9309Settings(cache_ttl=5)
    assert cache_lifetime(_result(AVAILABLE, no_store=True), settings) == 5
    assert cache_lifetime(_result(AVAILABLE, max_age=1), settings) == 5


def test_a_small_min_ttl_takes_cache_control_nearly_as_it_is() -> None:
    settings = Rep9309Settings(cache_ttl=1000, min_ttl=0.001)
    assert cache_lifetime(_result(AVAILABLE, max_age=1), settings) == 1
    assert cache_lifetime(_result(AVAILABLE, no_store=True), settings) == 0.001


# -- backoff --------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [retry_delay(n, None, SETTINGS) for n in range(1, 6)] == [10, 20, 40, 50, 50]
    assert retry_delay(10_000, None, SETTINGS) == 50


def test_retry_after_longer_than_the_backoff_wins() -> None:
    assert retry_delay(1, 300, SETTINGS) == 300
    assert retry_delay(3, 5, SETTINGS) == 40


# -- record lifecycle -------------------------------------------------------------


def test_available_record_is_fresh_for_the_ttl() -> None:
    record = record_after_fetch(None, _result(AVAILABLE), SETTINGS, NOW)
    assert record.outcome == AVAILABLE
    assert record.is_usable(NOW + 999, SETTINGS.stale_ttl)
    assert not record.is_usable(NOW + 1000, SETTINGS.stale_ttl)


def test_unavailable_record_allows_everything_and_stores_no_body() -> None:
    record = record_after_fetch(None, _result(UNAVAILABLE, 404), SETTINGS, NOW)
    assert (record.outcome, record.body, record.status) == (UNAVAILABLE, b"", 404)
    assert record.is_usable(NOW, SETTINGS.stale_ttl)


def test_unreachable_without_a_copy_is_never_usable() -> None:
    first = record_after_fetch(None, _result(UNREACHABLE, 503), SETTINGS, NOW)
    assert first.outcome == UNREACHABLE
    assert (first.failures, first.retry_at) == (1, NOW + 10)
    assert not first.is_usable(NOW, SETTINGS.stale_ttl)
    second = record_after_fetch(first, _result(UNREACHABLE, None, error="x.Err"), SETTINGS, NOW)
    assert (second.failures, second.retry_at, second.last_failure) == (2, NOW + 20, "x.Err")


def test_failed_refresh_keeps_the_expired_copy_until_the_stale_limit() -> None:
    fresh = record_after_fetch(None, _result(AVAILABLE), SETTINGS, NOW)
    later = NOW + 1100  # expired 100 s ago
    stale = record_after_fetch(fresh, _result(UNREACHABLE, 500), SETTINGS, later)
    assert stale.body == fresh.body
    assert stale.outcome == AVAILABLE
    assert stale.last_failure == "HTTP 500"
    assert stale.is_usable(later + 9, SETTINGS.stale_ttl)
    assert not stale.is_usable(later + 10, SETTINGS.stale_ttl), "a retry is due"

    too_late = NOW + 1000 + 500
    gone = record_after_fetch(fresh, _result(UNREACHABLE, 500), SETTINGS, too_late)
    assert gone.outcome == UNREACHABLE
    assert not gone.is_usable(too_late, SETTINGS.stale_ttl)


def test_answer_after_failures_resets_the_backoff() -> None:
    failed = record_after_fetch(None, _result(UNREACHABLE, 429), SETTINGS, NOW)
    recovered = record_after_fetch(failed, _result(AVAILABLE), SETTINGS, NOW + 10)
    assert (recovered.failures, recovered.retry_at, recovered.last_failure) == (0, 0.0, None)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, AVAILABLE),
        (204, AVAILABLE),
        (299, AVAILABLE),
        (400, UNAVAILABLE),
        (401, UNAVAILABLE),
        (403, UNAVAILABLE),
        (404, UNAVAILABLE),
        (410, UNAVAILABLE),
        (499, UNAVAILABLE),
        (429, UNREACHABLE),
        (500, UNREACHABLE),
        (503, UNREACHABLE),
        (599, UNREACHABLE),
        (100, UNREACHABLE),
        (304, UNREACHABLE),
        (600, UNREACHABLE),
    ],
)
def test_status_classification(status: int, outcome: str) -> None:
    assert outcome_of_status(status) == outcome


@pytest.mark.parametrize("outcome", [AVAILABLE, UNAVAILABLE, UNREACHABLE])
@pytest.mark.parametrize("failures", [0, 1, 3])
@pytest.mark.parametrize("retry_in", [-5.0, 0.0, 7.0, 600.0])
@pytest.mark.parametrize("expires_in", [-700.0, -5.0, 0.0, 20.0])
def test_usable_until_is_the_last_moment_is_usable_holds(
    outcome: str, failures: int, retry_in: float, expires_in: float
) -> None:
    """``usable_until`` (worked out once per record, for the per-request path) says what
    RFC 9309 2.4's use of copies says: fresh until expiry; while refreshes fail, stale
    until the next attempt and at most ``stale_ttl`` past expiry; never without an answer."""
    from scrapy_rep9309.policy.record import OriginRecord

    record = OriginRecord(
        outcome=outcome,
        status=None if outcome == UNREACHABLE else 200,
        body=b"",
        fetched_at=NOW - 1,
        expires_at=NOW + expires_in,
        failures=failures,
        retry_at=NOW + retry_in,
        last_failure="HTTP 503" if failures else None,
    )
    stale_ttl = SETTINGS.stale_ttl
    for now in (NOW - 800, NOW, NOW + 6, NOW + 19, NOW + 21, NOW + 599, NOW + 601):
        answered = outcome in (AVAILABLE, UNAVAILABLE)
        expected = answered and (
            now < record.expires_at
            or (failures > 0 and now < record.retry_at and now < record.expires_at + stale_ttl)
        )
        assert record.is_usable(now, stale_ttl) is expected
        assert (now < record.usable_until(stale_ttl)) is expected
