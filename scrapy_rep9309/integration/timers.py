"""Named one-shot timers that can all be cancelled when the spider closes.

Uses Scrapy's ``call_later`` (asyncio loop or Twisted reactor, Scrapy >= 2.14)
and falls back to ``reactor.callLater`` on older Scrapy.

Calls due more than FAR_AHEAD seconds from now (the deadline of held requests, an hour
by default; long retry delays) do not get an event-loop timer each: they wait in a heap
here, behind one event-loop timer for the earliest of them. A crawl arms such a deadline
for every new origin and cancels it a moment later, when the robots.txt answers; asyncio
keeps a cancelled timer in its own heap until it would have fired or until cancelled
ones are most of that heap, and every timer the crawl schedules (Scrapy schedules
several per page) pays for the size of that heap (docs/benchmarks.md, "Timers far
ahead").
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

logger = logging.getLogger(__name__)

#: Seconds from now beyond which a call waits in the Timers' own heap (see above).
FAR_AHEAD = 10.0
#: A far call whose time is this close is run when the shared timer fires: the event
#: loop may fire a timer up to its clock's resolution early.
_FAR_TOLERANCE = 0.01
#: Cancelled far calls are dropped from the heap once they are this many and most of it.
_FAR_COMPACT_AT = 64


class _Cancellable(Protocol):
    def cancel(self) -> None: ...


def _call_later(delay: float, func: Callable[[], None]) -> _Cancellable:
    try:
        from scrapy.utils.asyncio import call_later
    except ImportError:  # pragma: no cover - Scrapy < 2.14
        from twisted.internet import reactor

        return reactor.callLater(delay, func)  # type: ignore[attr-defined,no-any-return]
    return call_later(delay, func)


def call_soon(func: Callable[[], None]) -> None:
    """Run ``func`` on a later turn of the event loop (after what this turn runs)."""
    _call_later(0.0, func)


def call_later(delay: float, func: Callable[..., None], *args: Any) -> None:
    """Run ``func(*args)`` ``delay`` seconds from now, on the running event loop."""
    _call_later(delay, lambda: func(*args))


class _FarCall:
    """A call waiting in the heap of far calls; cancelled in place (the heap drops it later)."""

    __slots__ = ("args", "cancelled", "func")

    def __init__(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.func = func
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    """At most one pending call per key; a new schedule replaces the old one."""

    def __init__(self) -> None:
        self._calls: dict[Hashable, _Cancellable] = {}
        #: Far calls: (monotonic time due, order scheduled, key, call).
        self._far: list[tuple[float, int, Hashable, _FarCall]] = []
        self._far_order = itertools.count()
        self._far_cancelled = 0
        #: The one event-loop timer for the earliest far call, and when it fires.
        self._far_timer: _Cancellable | None = None
        self._far_timer_due = float("inf")

    def schedule(self, key: Hashable, delay: float, func: Callable[..., Any], *args: Any) -> None:
        self.cancel(key)
        if delay > FAR_AHEAD:
            self._schedule_far(key, time.monotonic() + delay, func, args)
            return

        def fire() -> None:
            self._calls.pop(key, None)
            func(*args)

        self._calls[key] = _call_later(max(0.0, delay), fire)

    def cancel(self, key: Hashable) -> None:
        call = self._calls.pop(key, None)
        if call is None:
            return
        call.cancel()
        if isinstance(call, _FarCall):
            self._far_cancelled += 1
            if self._far_cancelled > _FAR_COMPACT_AT and 2 * self._far_cancelled > len(self._far):
                self._far = [entry for entry in self._far if not entry[3].cancelled]
                heapq.heapify(self._far)
                self._far_cancelled = 0

    def cancel_all(self) -> None:
        for key in list(self._calls):
            self.cancel(key)
        self._far.clear()
        self._far_cancelled = 0
        if self._far_timer is not None:
            self._far_timer.cancel()
            self._far_timer = None
            self._far_timer_due = float("inf")

    def __len__(self) -> int:
        return len(self._calls)

    # -- far calls -----------------------------------------------------------------

    def _schedule_far(
        self, key: Hashable, due: float, func: Callable[..., Any], args: tuple[Any, ...]
    ) -> None:
        call = _FarCall(func, args)
        self._calls[key] = call
        heapq.heappush(self._far, (due, next(self._far_order), key, call))
        if due < self._far_timer_due:
            self._arm_far_timer(due)

    def _arm_far_timer(self, due: float) -> None:
        if self._far_timer is not None:
            self._far_timer.cancel()
        self._far_timer_due = due
        self._far_timer = _call_later(max(0.0, due - time.monotonic()), self._far_timer_fired)

    def _far_timer_fired(self) -> None:
        self._far_timer = None
        self._far_timer_due = float("inf")
        # ``self._far`` is read anew each time round: a call may cancel others, and
        # cancelling may replace the heap with one without the cancelled calls.
        while self._far:
            due, _, key, call = self._far[0]
            if call.cancelled:
                heapq.heappop(self._far)
                self._far_cancelled = max(0, self._far_cancelled - 1)
                continue
            if due > time.monotonic() + _FAR_TOLERANCE:
                break
            heapq.heappop(self._far)
            del self._calls[key]  # a call not cancelled is its key's current one
            try:
                call.func(*call.args)
            except Exception:  # as the event loop does: the other calls still run
                logger.exception("A timer's call failed")
        if self._far and self._far[0][0] < self._far_timer_due:
            self._arm_far_timer(self._far[0][0])
