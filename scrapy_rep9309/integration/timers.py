"""Named one-shot timers that can all be cancelled when the spider closes.

Uses Scrapy's ``call_later`` (asyncio loop or Twisted reactor, Scrapy >= 2.14)
and falls back to ``reactor.callLater`` on older Scrapy.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol


class _Cancellable(Protocol):
    def cancel(self) -> None: ...


def _call_later(delay: float, func: Callable[[], None]) -> _Cancellable:
    try:
        from scrapy.utils.asyncio import call_later
    except ImportError:  # pragma: no cover - Scrapy < 2.14
        from twisted.internet import reactor

        return reactor.callLater(delay, func)  # type: ignore[attr-defined,no-any-return]
    return call_later(delay, func)


class Timers:
    """At most one pending call per key; a new schedule replaces the old one."""

    def __init__(self) -> None:
        self._calls: dict[Hashable, _Cancellable] = {}

    def schedule(self, key: Hashable, delay: float, func: Callable[..., Any], *args: Any) -> None:
        self.cancel(key)

        def fire() -> None:
            self._calls.pop(key, None)
            func(*args)

        self._calls[key] = _call_later(max(0.0, delay), fire)

    def cancel(self, key: Hashable) -> None:
        call = self._calls.pop(key, None)
        if call is not None:
            call.cancel()

    def cancel_all(self) -> None:
        for key in list(self._calls):
            self.cancel(key)

    def __len__(self) -> int:
        return len(self._calls)
