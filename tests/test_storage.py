"""The in-memory origin store: LRU order, eviction callback, serialisable records."""

from __future__ import annotations

import json

import pytest

from scrapy_rep9309.policy.record import AVAILABLE, OriginRecord
from scrapy_rep9309.storage.memory import LRUCache, MemoryOriginStore, OriginStore


def _record(body: bytes = b"User-agent: *\nDisallow: /x\n") -> OriginRecord:
    return OriginRecord(AVAILABLE, 200, body, fetched_at=1000.0, expires_at=2000.0)


def test_memory_store_is_an_origin_store() -> None:
    store: OriginStore = MemoryOriginStore(2)
    store.put("http://a.com", _record())
    assert store.get("http://a.com") == _record()
    assert store.get("http://b.com") is None
    assert len(store) == 1
    assert list(store) == ["http://a.com"]
    store.delete("http://a.com")
    store.delete("http://a.com")
    assert len(store) == 0


def test_least_recently_used_is_evicted() -> None:
    evicted: list[str] = []
    store = MemoryOriginStore(2, on_evict=evicted.append)
    store.put("http://a.com", _record())
    store.put("http://b.com", _record())
    store.get("http://a.com")  # a is now the most recently used
    store.put("http://c.com", _record())
    assert evicted == ["http://b.com"]
    assert list(store) == ["http://a.com", "http://c.com"]


def test_replacing_a_record_does_not_evict() -> None:
    evicted: list[str] = []
    store = MemoryOriginStore(1, on_evict=evicted.append)
    store.put("http://a.com", _record())
    store.put("http://a.com", _record(b""))
    assert evicted == []
    assert store.get("http://a.com") == _record(b"")


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        LRUCache(0)


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


def test_pinned_entries_are_passed_over_and_may_exceed_capacity() -> None:
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
