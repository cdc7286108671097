"""Waiting on the running reactor (asyncio or not) for a bounded time.

Two contracts, one mechanism (a reactor timer beside a Deferred): ``within`` gives up
on a call (cancels it and raises TimeoutError), for a store's ``open`` and ``close``,
which must not hang the crawl; ``at_most`` only stops waiting and leaves the Deferred
running, for the close, which waits a while for work that must still finish its own
way (a robots.txt answer being carried out, a store write).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred


async def within(call: Callable[[], Awaitable[Any]], seconds: float) -> Any:
    """``await call()``, ``seconds`` at most (then cancelled: TimeoutError)."""
    awaitable = call()
    if not isawaitable(awaitable):
        raise TypeError(f"{call!r} returned {awaitable!r}, not an awaitable")
    waiting = deferred_from_coro(awaitable)
    expired: list[bool] = []

    def expire() -> None:
        expired.append(True)
        waiting.cancel()

    timer = _reactor().callLater(seconds, expire)
    try:
        return await maybe_deferred_to_future(waiting)
    except BaseException:
        if expired:  # cancelled by us (asyncio's or Twisted's CancelledError)
            raise TimeoutError(f"no answer within {seconds:g} s") from None
        raise
    finally:
        if timer.active():
            timer.cancel()


async def at_most(deferred: Deferred[Any], seconds: float) -> bool:
    """Wait for ``deferred`` to fire, ``seconds`` at most (its result stays with its
    other callbacks); whether it fired in time."""
    waited: Deferred[None] = Deferred()
    deferred.addBoth(lambda result: fire(waited, None) or result)
    waited.addTimeout(seconds, _reactor())
    try:
        await maybe_deferred_to_future(waited)
    except Exception:
        return False
    return True


async def all_at_most(deferreds: list[Deferred[Any]], seconds: float) -> None:
    """Wait for all of ``deferreds`` to fire, ``seconds`` at most in all."""
    deadline = time.monotonic() + seconds
    for deferred in deferreds:
        if not deferred.called:
            await at_most(deferred, max(0.0, deadline - time.monotonic()))


async def sleep(seconds: float) -> None:
    """Wait ``seconds``."""
    from twisted.internet.task import deferLater

    await maybe_deferred_to_future(deferLater(_reactor(), seconds, _nothing))


def fire(waiter: Deferred[Any], value: Any) -> None:
    """Fire ``waiter`` with ``value`` unless it fired (or was cancelled) already."""
    if not waiter.called:
        waiter.callback(value)


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


def _nothing() -> None:
    return None
