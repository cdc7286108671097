"""Run a coroutine on the spot instead of as a task of its own, for stores that never wait.

A task costs a Deferred, an asyncio task and a trip round the event loop; the memory
store answers every call without waiting, and a new origin needs three of its calls
(load, lease, save). ``start`` runs a coroutine now, up to its end or its first real
wait; in the second case the rest of it is handed back, to be run as a task, exactly as
if the task had run it from the start (what it waits for and what comes back pass
through unchanged).
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any


def start(coroutine: Coroutine[Any, Any, Any]) -> Coroutine[Any, Any, Any] | None:
    """Run ``coroutine`` until it ends (None) or waits (its rest, a coroutine to run as a
    task). What it raises before its first wait propagates."""
    try:
        waiting_for = coroutine.send(None)
    except StopIteration:
        return None
    return _rest(_Rest(coroutine, waiting_for))


async def _rest(rest: _Rest) -> Any:
    return await rest


class _Rest:
    """The rest of a coroutine stopped at its first wait, as an awaitable."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any], waiting_for: Any) -> None:
        self._coroutine = coroutine
        self._waiting_for = waiting_for

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, waiting_for = self._coroutine, self._waiting_for
        while True:
            try:
                sent = yield waiting_for
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # cancelled, or what it waited for failed
                try:
                    waiting_for = coroutine.throw(exc)
                except StopIteration as stop:
                    return stop.value
                continue
            try:
                waiting_for = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value
