"""The default store: everything in this process's memory, records bounded by an LRU.

Records beyond ``REP9309_CACHE_SIZE`` are evicted least recently used first, except
records that must not be forgotten yet: one in backoff (it holds the only memory of
when a failing server may be asked again), one under a fetch lease, one with held
requests. The driver gives it no held request (``keeps_held_requests``: it keeps its
own); a subclass that asks for them gets them kept as they are (live ``Request``
objects, never serialised). Leases never conflict, as nobody else shares this memory.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Hashable, Sequence
from typing import Any

from scrapy_rep9309.policy.record import OriginRecord
from scrapy_rep9309.storage.base import (
    ChangeCallback,
    HeldRequest,
    RequestCodec,
    StoredRecord,
)
from scrapy_rep9309.storage.lru import LRUCache

DEFAULT_CAPACITY = 10000
EVICTED_STAT = "robotstxt/evicted"


class MemoryStore:
    """Records, leases and held requests in dicts; records bounded by ``capacity``."""

    #: In one process the driver's own copy of a held request is the only one anyone
    #: reads: it gives this store none (a subclass that wants them sets True).
    keeps_held_requests = False
    #: Every call completes without waiting: the driver runs them on the spot.
    answers_at_once = True

    def __init__(self, capacity: int = DEFAULT_CAPACITY, stats: Any = None) -> None:
        self._stats = stats
        self._records: LRUCache[str, StoredRecord] = LRUCache(
            capacity, self._evicted, keep=self._pinned
        )
        self._leases: dict[str, tuple[str, float]] = {}
        #: Held requests per key, by token, with the order they were held in.
        self._held: dict[str, dict[Hashable, tuple[int, HeldRequest]]] = {}
        self._holds = itertools.count()
        self._versions = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> MemoryStore:
        # Read as the middleware's settings check reads it (which ran first): a whole
        # number, written as one or not ("1e4" is 10000; ``getint`` would refuse it).
        capacity = int(crawler.settings.getfloat("REP9309_CACHE_SIZE", DEFAULT_CAPACITY))
        return cls(capacity, crawler.stats)

    async def open(self, codec: RequestCodec, on_change: ChangeCallback) -> None:
        """Nothing to connect to, and nobody else writes here."""

    async def close(self) -> None:
        self._leases.clear()

    # -- records -------------------------------------------------------------------

    async def load(self, key: str) -> StoredRecord | None:
        return self._records.get(key)

    async def save(self, key: str, record: OriginRecord, expected: int | None) -> int | None:
        current = self._records.get(key)
        if (None if current is None else current.version) != expected:
            return None
        self._versions += 1
        self._records.put(key, StoredRecord(record, self._versions))
        return self._versions

    def __len__(self) -> int:
        return len(self._records)

    def _pinned(self, key: str, stored: StoredRecord) -> bool:
        return stored.record.in_backoff(time.time()) or key in self._leases or key in self._held

    def _evicted(self, key: str, stored: StoredRecord) -> None:
        if self._stats is not None:
            self._stats.inc_value(EVICTED_STAT)

    # -- leases ----------------------------------------------------------------------

    async def acquire_lease(self, key: str, owner: str, ttl: float) -> bool:
        lease = self._leases.get(key)
        now = time.monotonic()
        if lease is not None and lease[0] != owner and lease[1] > now:
            return False
        self._leases[key] = (owner, now + ttl)
        return True

    async def renew_lease(self, key: str, owner: str, ttl: float) -> bool:
        lease = self._leases.get(key)
        if lease is None or lease[0] != owner:
            return False
        self._leases[key] = (owner, time.monotonic() + ttl)
        return True

    async def release_lease(self, key: str, owner: str) -> None:
        lease = self._leases.get(key)
        if lease is not None and lease[0] == owner:
            del self._leases[key]

    # -- held requests -------------------------------------------------------------------

    async def hold(self, key: str, held: HeldRequest) -> None:
        self._held.setdefault(key, {})[held.token] = (next(self._holds), held)

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        held = self._held.get(key)
        if not held:
            return []
        if tokens is None:
            del self._held[key]
            return [entry for _, entry in held.values()]
        taken = sorted(held.pop(token) for token in tokens if token in held)
        if not held:
            del self._held[key]
        return [entry for _, entry in taken]
