"""Where origin records live: a small interface and its in-memory LRU implementation.

The middleware only talks to ``OriginStore``, so a persistent (JOBDIR) or shared
(Redis) store can replace ``MemoryOriginStore`` without touching it: records are
plain data (see ``OriginRecord.to_dict``), keyed by ``str(origin)``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from scrapy_rep9309.policy.record import OriginRecord

K = TypeVar("K")
V = TypeVar("V")


class OriginStore(Protocol):
    """Records by origin key, least recently used evicted past a capacity."""

    def get(self, key: str) -> OriginRecord | None:
        """The record of ``key`` (marking it recently used), or None."""

    def put(self, key: str, record: OriginRecord) -> None:
        """Store ``record``, possibly evicting the least recently used origin."""

    def delete(self, key: str) -> None:
        """Forget ``key``; no error if absent."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[str]:
        """Keys, least recently used first."""


class LRUCache(Generic[K, V]):
    """A bounded mapping that drops its least recently used entry when full.

    ``keep(key, value)`` pins entries that must not be dropped yet: the least
    recently used entry that is not pinned goes instead, so the mapping exceeds
    ``capacity`` only by pinned entries. A pinned entry passed over counts as
    recently used, so that the next eviction does not look at it again.
    """

    def __init__(
        self,
        capacity: int,
        on_evict: Callable[[K, V], None] | None = None,
        *,
        keep: Callable[[K, V], bool] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._on_evict = on_evict
        self._keep = keep
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        self._shrink()

    def _shrink(self) -> None:
        """Evict down to capacity; each entry but the newest is looked at once at most."""
        candidates = len(self._data) - 1
        while len(self._data) > self.capacity and candidates > 0:
            candidates -= 1
            old_key, old_value = next(iter(self._data.items()))
            if self._keep is not None and self._keep(old_key, old_value):
                self._data.move_to_end(old_key)
                continue
            del self._data[old_key]
            if self._on_evict is not None:
                self._on_evict(old_key, old_value)

    def delete(self, key: K) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._data))


class MemoryOriginStore(LRUCache[str, OriginRecord]):
    """The default ``OriginStore``: records in process memory, REP9309_CACHE_SIZE at most,
    plus the records ``keep`` pins (origins in backoff or in use, see ``RobotsLifecycle``)."""

    def __init__(
        self,
        capacity: int,
        on_evict: Callable[[str], None] | None = None,
        *,
        keep: Callable[[str, OriginRecord], bool] | None = None,
    ) -> None:
        super().__init__(
            capacity, None if on_evict is None else lambda key, _: on_evict(key), keep=keep
        )
