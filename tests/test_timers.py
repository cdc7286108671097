"""The driver's named timers, with a fake clock and a fake event loop: near calls get an
event-loop timer each; far ones (held requests' deadlines) wait behind one shared timer,
so cancelling them leaves nothing in the event loop's heap."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from scrapy_rep9309.integration import timers as timers_module
from scrapy_rep9309.integration.timers import FAR_AHEAD, Timers


class FakeLoop:
    """``call_later`` and ``time.monotonic`` of one fake clock; ``advance`` fires what is due."""

    def __init__(self) -> None:
        self.now = 5_000.0
        self.pending: list[FakeCall] = []
        self.armed = 0

    def call_later(self, delay: float, func: Callable[[], None]) -> FakeCall:
        self.armed += 1
        call = FakeCall(self.now + delay, func)
        self.pending.append(call)
        return call

    def live(self) -> list[FakeCall]:
        return [call for call in self.pending if not call.cancelled]

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            due = sorted((call for call in self.live() if call.when <= end), key=lambda c: c.when)
            if not due:
                break
            call = due[0]
            self.now = max(self.now, call.when)
            self.pending.remove(call)
            call.func()
        self.now = end


class FakeCall:
    def __init__(self, when: float, func: Callable[[], None]) -> None:
        self.when = when
        self.func = func
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> FakeLoop:
    fake = FakeLoop()
    monkeypatch.setattr(timers_module, "_call_later", fake.call_later)
    monkeypatch.setattr(timers_module.time, "monotonic", lambda: fake.now)
    return fake


def test_a_near_call_fires_once_and_a_new_schedule_replaces_it(loop: FakeLoop) -> None:
    timers, fired = Timers(), []
    timers.schedule("a", 1.0, fired.append, "first")
    timers.schedule("a", 2.0, fired.append, "second")
    loop.advance(1.5)
    assert fired == []
    loop.advance(1.0)
    assert fired == ["second"]
    assert len(timers) == 0


def test_far_calls_share_one_event_loop_timer_and_fire_in_order(loop: FakeLoop) -> None:
    timers, fired = Timers(), []
    for index in range(100):
        timers.schedule(("deadline", index), 3600 + index, fired.append, index)
    assert len(timers) == 100
    assert len(loop.live()) == 1  # one timer, for the earliest

    loop.advance(3600 + 49.5)
    assert fired == list(range(50))
    loop.advance(100)
    assert fired == list(range(100))
    assert len(timers) == 0
    assert loop.live() == []


def test_cancelled_far_calls_never_fire_and_leave_no_event_loop_timers(loop: FakeLoop) -> None:
    timers, fired = Timers(), []
    for index in range(1000):
        timers.schedule(("deadline", index), 3600, fired.append, index)
        timers.cancel(("deadline", index))
    assert len(timers) == 0
    assert loop.armed == 1  # cancelling touched no event-loop timer
    assert len(timers._far) <= 2 * 64 + 2  # cancelled ones do not pile up

    loop.advance(7200)
    assert fired == []
    assert loop.live() == []


def test_an_earlier_far_call_rearms_the_shared_timer(loop: FakeLoop) -> None:
    timers, fired = Timers(), []
    timers.schedule("late", 3600, fired.append, "late")
    timers.schedule("early", 60, fired.append, "early")
    assert [call.when - loop.now for call in loop.live()] == [60]

    loop.advance(61)
    assert fired == ["early"]
    assert [call.when - loop.now for call in loop.live()] == [3600 - 61]
    loop.advance(3600)
    assert fired == ["early", "late"]


def test_a_far_call_becomes_near_when_scheduled_again_soon(loop: FakeLoop) -> None:
    timers, fired = Timers(), []
    timers.schedule("a", 3600, fired.append, "far")
    timers.schedule("a", 1, fired.append, "near")
    loop.advance(3601)
    assert fired == ["near"]


def test_a_call_may_schedule_and_cancel_others_while_far_calls_fire(loop: FakeLoop) -> None:
    timers, fired = Timers(), []

    def first() -> None:
        fired.append("first")
        timers.cancel("second")
        timers.schedule("third", FAR_AHEAD + 5, fired.append, "third")

    timers.schedule("first", 100, first)
    timers.schedule("second", 100, fired.append, "second")
    timers.schedule("fourth", 500, fired.append, "fourth")
    loop.advance(100)
    assert fired == ["first"]
    loop.advance(FAR_AHEAD + 5)
    assert fired == ["first", "third"]
    loop.advance(500)
    assert fired == ["first", "third", "fourth"]


def test_a_call_that_cancels_enough_others_to_compact_the_heap_runs_each_call_once(
    loop: FakeLoop,
) -> None:
    """Found by a second reviewer: cancelling inside a firing far call could replace the
    heap being read, so calls ran twice and the next firing raised KeyError (every far
    call after it stranded: held requests' deadlines never came)."""
    timers, fired = Timers(), []

    def first() -> None:
        fired.append("x")
        timers.cancel("y")  # the 65th cancelled call: the heap is compacted

    timers.schedule("x", 20.0, first)
    timers.schedule("a1", 20.001, fired.append, "a1")
    timers.schedule("y", 25.0, fired.append, "y")
    for index in range(65):
        timers.schedule(f"z{index}", 30.0, fired.append, f"z{index}")
    for index in range(64):
        timers.cancel(f"z{index}")
    loop.advance(20.5)
    assert fired == ["x", "a1"]
    loop.advance(15)
    assert fired == ["x", "a1", "z64"]
    assert len(timers) == 0


def test_a_far_call_that_raises_is_logged_and_the_others_still_run(
    loop: FakeLoop, caplog: pytest.LogCaptureFixture
) -> None:
    timers, fired = Timers(), []

    def broken() -> None:
        raise RuntimeError("boom")

    timers.schedule("broken", 100, broken)
    timers.schedule("fine", 100, fired.append, "fine")
    with caplog.at_level(logging.ERROR):
        loop.advance(101)
    assert fired == ["fine"]
    assert "A timer's call failed" in caplog.text


def test_cancel_all_cancels_near_and_far_calls(loop: FakeLoop) -> None:
    timers, fired = Timers(), []
    timers.schedule("near", 1, fired.append, "near")
    timers.schedule("far", 3600, fired.append, "far")
    timers.cancel_all()
    assert len(timers) == 0
    assert loop.live() == []
    loop.advance(7200)
    assert fired == []
    timers.schedule("again", 3600, fired.append, "again")  # usable afterwards
    loop.advance(3601)
    assert fired == ["again"]
