"""The store interface and the default in-memory store: versions and compare-and-set,
leases, held requests in order, LRU eviction that never forgets backoff, serialisable
records. No Scrapy: the store is driven directly (its methods are coroutines)."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest

from scrapy_rep9309.policy.cachecontrol import RETRY_AFTER_LIMIT
from scrapy_rep9309.policy.record import (
    AVAILABLE,
    UNREACHABLE,
    OriginRecord,
    kept_over_ours,
    within_limits,
)
from scrapy_rep9309.storage.base import HeldRequest, OriginStore
from scrapy_rep9309.storage.lru import LRUCache
from scrapy_rep9309.storage.memory import MemoryStore
from tests._stats import CountingStats


def run(coroutine: Any) -> Any:
    """Run one store call to completion: the memory store never really waits, so its
    coroutines finish on their first step (pytest-twisted's loop is already running)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the memory store suspended")


def _record(body: bytes = b"User-agent: *\nDisallow: /x\n", **changes: Any) -> OriginRecord:
    fields: dict[str, Any] = {"fetched_at": 1000.0, "expires_at": 2000.0, **changes}
    return OriginRecord(AVAILABLE, 200, body, **fields)


def test_memory_store_implements_the_interface() -> None:
    store: OriginStore = MemoryStore(2)
    assert run(store.load("http://a.com")) is None
    version = run(store.save("http://a.com", _record(), None))
    stored = run(store.load("http://a.com"))
    assert stored is not None
    assert (stored.record, stored.version) == (_record(), version)


def test_save_is_a_compare_and_set_on_the_version() -> None:
    store = MemoryStore(2)
    first = run(store.save("http://a.com", _record(), None))
    assert first is not None
    assert run(store.save("http://a.com", _record(b""), None)) is None, "a record exists"
    second = run(store.save("http://a.com", _record(b"2"), first))
    assert second is not None and second > first
    assert run(store.save("http://a.com", _record(b"3"), first)) is None, "stale version"
    stored = run(store.load("http://a.com"))
    assert stored is not None and stored.record.body == b"2"


def test_one_lease_per_key_until_released_or_expired() -> None:
    store = MemoryStore(2)
    assert run(store.acquire_lease("http://a.com", "me", 10))
    assert not run(store.acquire_lease("http://a.com", "peer", 10))
    assert run(store.acquire_lease("http://b.com", "peer", 10)), "leases are per key"
    assert run(store.renew_lease("http://a.com", "me", 10))
    assert not run(store.renew_lease("http://a.com", "peer", 10))
    run(store.release_lease("http://a.com", "peer"))  # not the owner: no effect
    assert not run(store.acquire_lease("http://a.com", "peer", 10))
    run(store.release_lease("http://a.com", "me"))
    assert run(store.acquire_lease("http://a.com", "peer", 0.01))
    time.sleep(0.05)
    assert run(store.acquire_lease("http://a.com", "me", 10)), "an expired lease is free"


def test_held_requests_keep_their_order_and_are_taken_once() -> None:
    store = MemoryStore(2)
    for token in range(4):
        run(store.hold("http://a.com", HeldRequest(token, 100.0 + token, f"request {token}")))
    run(store.hold("http://b.com", HeldRequest(9, 100.0, "other")))
    taken = run(store.take_held("http://a.com", [2, 0]))
    assert [held.request for held in taken] == ["request 0", "request 2"]
    assert [held.token for held in run(store.take_held("http://a.com"))] == [1, 3]
    assert run(store.take_held("http://a.com")) == []
    assert [held.request for held in run(store.take_held("http://b.com"))] == ["other"]


def test_least_recently_used_record_is_evicted_and_counted() -> None:
    stats = CountingStats()
    store = MemoryStore(2, stats)
    for key in ("http://a.com", "http://b.com"):
        run(store.save(key, _record(), None))
    run(store.load("http://a.com"))  # a is now the most recently used
    run(store.save("http://c.com", _record(), None))
    assert run(store.load("http://b.com")) is None
    assert run(store.load("http://a.com")) is not None
    assert stats.values == {"robotstxt/evicted": 1}


def test_records_in_backoff_leased_or_with_held_requests_are_never_evicted() -> None:
    store = MemoryStore(1)
    backoff = OriginRecord(UNREACHABLE, 503, b"", 1.0, 1.0, 1, time.time() + 60, "HTTP 503")
    run(store.save("http://backoff.com", backoff, None))
    run(store.save("http://leased.com", _record(), None))
    run(store.acquire_lease("http://leased.com", "me", 60))
    run(store.save("http://held.com", _record(), None))
    run(store.hold("http://held.com", HeldRequest(1, 1e12, "request")))
    run(store.save("http://plain.com", _record(), None))
    run(store.save("http://newest.com", _record(), None))
    kept = {
        key
        for key in ("backoff", "leased", "held", "plain")
        if run(store.load(f"http://{key}.com"))
    }
    assert kept == {"backoff", "leased", "held"}
    assert len(store) == 4, "exceeds the capacity only by pinned records"


def test_lru_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        LRUCache(0)


def test_pinned_lru_entries_are_passed_over_and_may_exceed_capacity() -> None:
    evicted: list[str] = []
    pinned = {"a", "b"}
    cache: LRUCache[str, int] = LRUCache(
        2, on_evict=lambda key, _: evicted.append(key), keep=lambda key, _: key in pinned
    )
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert evicted == [], "only pinned entries are older than the newest one"
    assert len(cache) == 3
    cache.put("d", 4)
    assert evicted == ["c"], "the least recently used entry that is not pinned"
    pinned.clear()
    cache.put("e", 5)
    assert evicted == ["c", "d", "a"]
    assert list(cache) == ["b", "e"]


def test_record_survives_a_json_round_trip() -> None:
    record = OriginRecord(
        AVAILABLE,
        200,
        b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /\xff\n",
        fetched_at=1.5,
        expires_at=86401.5,
        failures=2,
        retry_at=120.0,
        last_failure="twisted.internet.error.ConnectionRefusedError",
    )
    assert OriginRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    redirected = dataclasses.replace(record, redirected_to="https://www.a.com/robots.txt")
    assert OriginRecord.from_dict(json.loads(json.dumps(redirected.to_dict()))) == redirected
    saved_before_the_field = {k: v for k, v in record.to_dict().items() if k != "redirected_to"}
    assert OriginRecord.from_dict(saved_before_the_field) == record
    cut = dataclasses.replace(record, truncated=True)
    assert OriginRecord.from_dict(json.loads(json.dumps(cut.to_dict()))) == cut
    saved_before_truncated = {k: v for k, v in record.to_dict().items() if k != "truncated"}
    assert OriginRecord.from_dict(saved_before_truncated) == record
    with pytest.raises(ValueError, match="truncated"):
        OriginRecord.from_dict({**record.to_dict(), "truncated": "yes"})


@dataclasses.dataclass
class _Timing:
    cache_ttl: float = 100.0
    retry_delay: float = 1.0
    retry_max_delay: float = 50.0
    stale_ttl: float = 1000.0


def test_a_record_read_back_is_held_to_this_runs_settings() -> None:
    """A JOBDIR record is used no longer than this run's REP9309_CACHE_TTL after it was
    fetched, fetched no later than now, retried no later than a fetch could have set."""
    now = 10_000.0
    kept = OriginRecord(AVAILABLE, 200, b"x", fetched_at=now - 10, expires_at=now + 50)
    assert within_limits(kept, _Timing(), now) is kept
    edited = dataclasses.replace(kept, expires_at=1e308, retry_at=1e308, failures=1)
    bounded = within_limits(edited, _Timing(), now)
    assert bounded.expires_at == now - 10 + 100
    assert bounded.retry_at == now + RETRY_AFTER_LIMIT
    from_the_future = dataclasses.replace(kept, fetched_at=now + 5_000, expires_at=now + 5_050)
    assert within_limits(from_the_future, _Timing(), now).fetched_at == now
    assert within_limits(from_the_future, _Timing(), now).expires_at == now + 100
    old = dataclasses.replace(kept, fetched_at=now - 500, expires_at=now + 1_000)
    assert not within_limits(old, _Timing(), now).is_usable(now, 0)


def test_after_a_lost_compare_and_set_a_fresh_answer_stands_over_a_failure() -> None:
    """Which record the store keeps when someone else saved first: of a fresh answer
    and a failure to reach the server, the fresh answer, whichever was fetched later;
    else the later fetch (the stored one on a tie)."""
    now = 10_000.0

    def answer(at: float) -> OriginRecord:
        return OriginRecord(AVAILABLE, 200, b"x", fetched_at=at, expires_at=at + 100)

    def failure(at: float) -> OriginRecord:
        return OriginRecord(UNREACHABLE, 503, b"", at, at, 1, at + 60, "HTTP 503")

    assert kept_over_ours(answer(now - 2), failure(now - 1), now)
    assert not kept_over_ours(failure(now - 1), answer(now - 2), now)
    assert kept_over_ours(answer(now - 1), answer(now - 2), now)
    assert not kept_over_ours(answer(now - 2), answer(now - 1), now)
    assert kept_over_ours(answer(now - 1), answer(now - 1), now)
    assert kept_over_ours(failure(now - 1), failure(now - 2), now)
    expired = answer(now - 500)  # fresh no longer: the later failure stands
    assert kept_over_ours(failure(now - 1), expired, now)
    assert not kept_over_ours(expired, failure(now - 1), now)


def test_a_record_of_an_earlier_version_cut_at_the_limit_drops_its_cut_line() -> None:
    """Earlier versions stored a cut body's first REP9309_MAX_SIZE octets only, with no
    ``truncated``: the parser could not see that the last line went on (``Disallow:
    /private-zone/`` cut to ``Disallow: /`` forbade everything). Such a record (or a whole
    one as long) is due for a refresh at once and read, meanwhile, as cut, without that
    line; one shorter than any limit, or of this version, as it is."""
    head = b"User-agent: *\nDisallow: /private/\n"
    body = head + b"#" * (512_000 - len(head) - len(b"\nDisallow: /")) + b"\nDisallow: /"
    fields = OriginRecord(AVAILABLE, 200, body, fetched_at=1.0, expires_at=2.0).to_dict()
    earlier = {name: value for name, value in fields.items() if name != "truncated"}

    read = OriginRecord.from_dict(earlier)

    assert read.truncated
    assert read.body == body[: -len(b"Disallow: /")]
    assert read.expires_at == read.fetched_at  # due for a refresh: it may have been whole
    assert OriginRecord.from_dict(fields).body == body  # this version's: as it is
    small = {**earlier, "body": "User-agent: *\nDisallow: /"}
    assert not OriginRecord.from_dict(small).truncated
    assert OriginRecord.from_dict(small).body == b"User-agent: *\nDisallow: /"
