"""Requests held outside Scrapy's downloader while their origin's robots.txt is not known.

A request waiting inside a downloader middleware counts against
CONCURRENT_REQUESTS, so a few requests waiting for one slow robots.txt stall
every other origin. Held here instead, a request is just an entry in a dict:
the same Request object (priority, meta, callbacks intact), handed back to the
engine once its origin is decided or its wait expires.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_rep9309.policy.origin import Origin


@dataclass(frozen=True)
class HeldRequest:
    request: Request
    origin: Origin
    deadline: float  # monotonic time after which the request stops waiting


class HeldRequests:
    """FIFO queues of held requests per origin.

    Every request waits the same timeout, so each queue is ordered by deadline
    and the earliest deadline is always at the front of some queue.
    """

    def __init__(self) -> None:
        self._queues: dict[Origin, deque[HeldRequest]] = {}
        self._count = 0

    def hold(self, origin: Origin, request: Request, deadline: float) -> None:
        self._queues.setdefault(origin, deque()).append(HeldRequest(request, origin, deadline))
        self._count += 1

    def release(self, origin: Origin) -> list[HeldRequest]:
        """Remove and return every request held for ``origin``, oldest first."""
        queue = self._queues.pop(origin, None)
        if not queue:
            return []
        self._count -= len(queue)
        return list(queue)

    def expire(self, now: float) -> list[HeldRequest]:
        """Remove and return the requests whose deadline is not after ``now``."""
        expired: list[HeldRequest] = []
        for origin in list(self._queues):
            queue = self._queues[origin]
            while queue and queue[0].deadline <= now:
                expired.append(queue.popleft())
            if not queue:
                del self._queues[origin]
        self._count -= len(expired)
        return expired

    def drain(self) -> list[HeldRequest]:
        """Remove and return everything (used when the spider closes)."""
        held = [entry for queue in self._queues.values() for entry in queue]
        self._queues.clear()
        self._count = 0
        return held

    def next_deadline(self) -> float | None:
        if not self._queues:
            return None
        return min(queue[0].deadline for queue in self._queues.values())

    def count(self, origin: Origin) -> int:
        queue = self._queues.get(origin)
        return len(queue) if queue else 0

    def origins(self) -> Iterator[Origin]:
        return iter(list(self._queues))

    def __len__(self) -> int:
        return self._count
