"""A bounded mapping that drops its least recently used entry, except pinned ones.

Used by the memory store for records and by the driver for its near-cache of
origin machines.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


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

    def values(self) -> list[V]:
        return list(self._data.values())

    def items(self) -> list[tuple[K, V]]:
        return list(self._data.items())

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._data))
