"""The origin state machine, driven with a fake clock and no Scrapy: every row of its
transition table, the pairs it ignores, and the situations the crawl layer must get
right (late answers, retries nobody waits for, evictions, stale copies, close, a newer
copy arriving while older-decided requests are queued)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest

from scrapy_rep9309.policy import machine as machine_module
from scrapy_rep9309.policy.fetchresult import FetchResult, answered
from scrapy_rep9309.policy.machine import (
    IGNORED,
    LEASE_CHECK_INTERVAL,
    TRANSITIONS,
    Action,
    Effect,
    Event,
    InvalidTransition,
    OriginMachine,
    State,
    Timer,
)
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.policy.record import AVAILABLE, UNREACHABLE, OriginRecord
from tests._timing import grows_linearly
from tests._transition_table import transition_table

REPO_ROOT = Path(__file__).resolve().parent.parent
ORIGIN = Origin("https", "a.com", 443)
KEY = str(ORIGIN)
NOW = 1_000_000.0
DEFER = 60.0


class Timing:
    cache_ttl = 100.0
    min_ttl = 0.0
    retry_delay = 10.0
    retry_max_delay = 80.0
    stale_ttl = 1000.0


def ok(body: bytes = b"User-agent: *\nAllow: /\n", max_age: str | None = None) -> FetchResult:
    cache_control = [f"max-age={max_age}"] if max_age else []
    return answered(
        ORIGIN,
        200,
        body,
        redirects=(),
        final_url=ORIGIN.robots_url,
        truncated=False,
        cache_control=cache_control,
        retry_after=None,
        now=NOW,
    )


def down() -> FetchResult:
    return answered(
        ORIGIN,
        503,
        b"",
        redirects=(),
        final_url=ORIGIN.robots_url,
        truncated=False,
        cache_control=[],
        retry_after=None,
        now=NOW,
    )


def fresh(now: float = NOW, fetched: float = -10.0) -> OriginRecord:
    return OriginRecord(AVAILABLE, 200, b"User-agent: *\n", now + fetched, now + 100.0)


def expired(now: float = NOW) -> OriginRecord:
    return OriginRecord(AVAILABLE, 200, b"User-agent: *\n", now - 200.0, now - 10.0)


def stale(now: float = NOW) -> OriginRecord:
    return OriginRecord(AVAILABLE, 200, b"", now - 200.0, now - 10.0, 1, now + 50.0, "HTTP 503")


def backoff(now: float = NOW, fetched: float = -10.0) -> OriginRecord:
    return OriginRecord(UNREACHABLE, 503, b"", now + fetched, now + fetched, 1, now + 50.0, "503")


def effects(actions: list[Action]) -> list[Effect]:
    return [action.effect for action in actions]


def machine_in(state: State, *, held: int = 0) -> OriginMachine:
    """A machine put in ``state`` with a record that fits it, and ``held`` requests."""
    machine = OriginMachine(KEY, Timing())
    machine.state = state
    machine.record = {
        State.FRESH: fresh(),
        State.STALE: stale(),
        State.EXPIRED: expired(),
        State.BACKOFF: backoff(),
    }.get(state)
    if held:
        machine.held = deque(_held(token) for token in range(held))
    return machine


def _held(token: int, deadline: float = NOW + DEFER) -> object:
    from scrapy_rep9309.policy.machine import Held

    return Held(token, deadline)


#: How each event is provoked through the machine's public entry points, at NOW.
PROVOKE: dict[Event, Callable[[OriginMachine], list[Action]]] = {
    Event.REQUEST: lambda m: m.request("new", NOW, DEFER),
    Event.REQUEST_USABLE: lambda m: m.request("new", NOW, DEFER),
    Event.LOADED_FRESH: lambda m: m.loaded(fresh(fetched=-1), 7, NOW),
    Event.LOADED_STALE: lambda m: m.loaded(stale(), 7, NOW),
    Event.LOADED_BACKOFF: lambda m: m.loaded(backoff(fetched=-1), 7, NOW),
    # An expired record (no record at all, in a machine that has one, is decided by its own).
    Event.LOADED_DUE: lambda m: m.loaded(expired(), 7, NOW),
    Event.LEASE_GRANTED: lambda m: m.leased(True, NOW),
    Event.LEASE_BUSY: lambda m: m.leased(False, NOW),
    Event.ANSWER_FRESH: lambda m: m.answered(ok(), NOW),
    Event.CHANGED_FRESH: lambda m: m.changed(fresh(fetched=-1), 7, NOW),
    Event.CHANGED_STALE: lambda m: m.changed(stale(), 7, NOW),
    Event.CHANGED_UNUSABLE: lambda m: m.changed(backoff(fetched=-1), 7, NOW),
    Event.RETRY_DUE_WANTED: lambda m: m.timer(Timer.RETRY, NOW),
    Event.RETRY_DUE_IDLE: lambda m: m.timer(Timer.RETRY, NOW),
    Event.LEASE_CHECK: lambda m: m.timer(Timer.LEASE_CHECK, NOW),
    Event.DEADLINE: lambda m: m.timer(Timer.DEADLINE, m.held[0].deadline if m.held else NOW),
    Event.CLOSE: lambda m: m.close(NOW),
}


def provoke(machine: OriginMachine, event: Event) -> list[Action]:
    if event is Event.ANSWER_STALE:
        machine.record = expired()  # an answered copy, expired: a failed refresh keeps it
        return machine.answered(down(), NOW)
    if event is Event.ANSWER_UNREACHABLE:
        machine.record = None
        return machine.answered(down(), NOW)
    if event is Event.EXPIRED:
        machine.record = expired() if machine.state is State.FRESH else backoff(fetched=-300)
        if machine.state is State.STALE:
            machine.record = OriginRecord(AVAILABLE, 200, b"", NOW - 200, NOW - 10, 1, NOW - 1)
        return machine.timer(Timer.LEASE_CHECK, NOW)  # any event first applies the clock
    if event.value.startswith(("changed-", "loaded-")):
        machine.version = 1  # what the store says is version 7: newer
    return PROVOKE[event](machine)


@pytest.mark.parametrize(
    ("state", "event"), sorted(TRANSITIONS, key=lambda pair: (pair[0].value, pair[1].value))
)
def test_every_row_of_the_table(state: State, event: Event) -> None:
    wanted_state, wanted_effects = TRANSITIONS[(state, event)]
    held = 0 if event is Event.RETRY_DUE_IDLE else 2
    machine = machine_in(state, held=held)

    actions = provoke(machine, event)

    assert machine.state is wanted_state
    # ARM_DEADLINE comes out only when requests are held, and also after a new earliest one.
    table_effects = [e for e in effects(actions) if e is not Effect.ARM_DEADLINE]
    wanted_effects = tuple(e for e in wanted_effects if e is not Effect.ARM_DEADLINE)
    if event is Event.REQUEST and state in (State.NEW, State.EXPIRED):
        assert effects(actions)[-1] is Effect.ARM_DEADLINE or held
    assert table_effects == list(wanted_effects)


@pytest.mark.parametrize(
    ("state", "event"), sorted(IGNORED, key=lambda pair: (pair[0].value, pair[1].value))
)
def test_ignored_pairs_change_nothing(
    state: State, event: Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ignored pair is provoked, reaches the table (found by a reviewer: the late
    store answers and a peer's record during our fetch were turned away before it, so
    those entries were never read) and changes nothing, the record it brought included."""
    looked_up: list[tuple[State, Event]] = []

    class Recording(frozenset):
        def __contains__(self, pair: object) -> bool:
            looked_up.append(pair)  # type: ignore[arg-type]
            return super().__contains__(pair)

    monkeypatch.setattr(machine_module, "IGNORED", Recording(IGNORED))
    # Requests held make a retry timer RETRY_DUE_WANTED, none RETRY_DUE_IDLE.
    machine = machine_in(state, held=2 if event is Event.RETRY_DUE_WANTED else 0)
    record = machine.record

    actions = provoke(machine, event)

    assert (state, event) in looked_up
    assert machine.state is state
    assert actions == []
    assert machine.record is record


def test_no_pair_is_both_a_row_and_ignored() -> None:
    assert set(TRANSITIONS) & IGNORED == set()


def test_an_answer_stale_as_it_arrives_still_releases_the_requests_held_for_it() -> None:
    """A lifetime of 0 (found by a reviewer): the answer was classed unreachable, with
    no failure and its retry due at once, so the robots.txt was fetched again and again
    and the held requests never released."""
    machine = machine_in(State.FETCHING, held=2)

    actions = machine.answered(ok(max_age="0"), NOW)

    assert machine.state is State.FRESH
    assert Effect.RELEASE in effects(actions)
    assert machine.record is not None and machine.record.failures == 0


def test_pairs_without_a_row_raise() -> None:
    machine = machine_in(State.NEW)
    with pytest.raises(InvalidTransition, match="answer-fresh in new"):
        machine.answered(ok(), NOW)


# -- the life of an origin ---------------------------------------------------------


def test_first_request_loads_takes_the_lease_fetches_and_releases() -> None:
    machine = OriginMachine(KEY, Timing())
    assert machine.usable(NOW) is None

    actions = machine.request("r1", NOW, DEFER)
    assert effects(actions) == [Effect.HOLD, Effect.LOAD, Effect.ARM_DEADLINE]
    assert actions[-1].at == NOW + DEFER
    assert effects(machine.request("r2", NOW + 1, DEFER)) == [Effect.HOLD]
    assert effects(machine.loaded(None, None, NOW + 1)) == [Effect.ACQUIRE_LEASE]
    assert effects(machine.leased(True, NOW + 1)) == [Effect.FETCH]
    actions = machine.answered(ok(), NOW + 2)

    assert machine.state is State.FRESH
    assert effects(actions) == [
        Effect.STORE,
        Effect.RELEASE_LEASE,
        Effect.CANCEL_TIMERS,  # the released requests' deadline timer
        Effect.RELEASE,
    ]
    release = actions[-1]
    assert [held.token for held in release.held] == ["r1", "r2"]
    assert release.record is machine.record
    assert actions[0].version is None, "nothing stored before: compare-and-set on 'absent'"
    assert machine.usable(NOW + 50) is machine.record
    machine.stored(1)
    assert machine.version == 1


def test_a_copy_past_its_ttl_is_not_used_and_the_next_request_refreshes() -> None:
    machine = machine_in(State.FRESH)
    assert machine.usable(NOW + 99) is not None
    assert machine.usable(NOW + 100) is None, "no copy is used past its TTL"

    actions = machine.request("r", NOW + 100, DEFER)

    assert machine.state is State.LOADING
    assert effects(actions) == [Effect.HOLD, Effect.LOAD, Effect.ARM_DEADLINE]


def test_unreachable_backs_off_and_a_retry_nobody_waits_for_fetches_nothing() -> None:
    machine = machine_in(State.FETCHING, held=1)
    actions = machine.answered(down(), NOW)
    assert machine.state is State.BACKOFF
    retry = actions[-1]
    assert retry.effect is Effect.ARM_RETRY and retry.at == NOW + Timing.retry_delay
    # The held request waits its REP9309_DEFER_TIMEOUT out before the retry.
    expire = machine.timer(Timer.DEADLINE, NOW + DEFER)
    assert effects(expire) == [Effect.EXPIRE]
    assert not machine.held

    assert machine.timer(Timer.RETRY, NOW + DEFER + 1) == []

    assert machine.state is State.EXPIRED, "nobody waits: no fetch, the next request asks"
    assert machine.evictable(NOW + DEFER + 1)


def test_a_retry_with_requests_waiting_takes_the_lease_again() -> None:
    machine = machine_in(State.BACKOFF, held=1)
    assert effects(machine.timer(Timer.RETRY, NOW + 50)) == [Effect.ACQUIRE_LEASE]
    assert machine.state is State.LEASING


def test_backoff_doubles_across_failed_fetches() -> None:
    machine = machine_in(State.FETCHING, held=1)
    machine.answered(down(), NOW)
    first = machine.record
    machine.state = State.FETCHING
    machine.answered(down(), NOW)
    assert first is not None and machine.record is not None
    assert machine.record.failures == 2
    assert machine.record.retry_at - NOW == 2 * (first.retry_at - NOW)


def test_an_answer_after_every_held_request_expired_releases_nothing() -> None:
    machine = machine_in(State.FETCHING, held=2)
    assert len(machine.timer(Timer.DEADLINE, NOW + DEFER)[0].held) == 2

    actions = machine.answered(ok(), NOW + DEFER + 1)

    assert machine.state is State.FRESH
    assert actions[-1].effect is Effect.RELEASE and actions[-1].held == ()


def test_deadlines_expire_only_the_requests_that_waited_long_enough() -> None:
    machine = OriginMachine(KEY, Timing())
    machine.request("early", NOW, DEFER)
    machine.request("late", NOW + 30, DEFER)

    actions = machine.timer(Timer.DEADLINE, NOW + DEFER)

    assert [held.token for held in actions[0].held] == ["early"]
    assert actions[1].effect is Effect.ARM_DEADLINE and actions[1].at == NOW + 30 + DEFER
    assert [held.token for held in machine.held] == ["late"]


def test_no_eviction_while_requests_are_held_a_fetch_runs_or_backoff_lasts() -> None:
    assert not machine_in(State.LOADING, held=1).evictable(NOW)
    assert not machine_in(State.FETCHING).evictable(NOW)
    assert not machine_in(State.BACKOFF).evictable(NOW)
    assert not machine_in(State.STALE).evictable(NOW), "its backoff is still running"
    assert machine_in(State.STALE).evictable(NOW + 50)
    assert machine_in(State.FRESH).evictable(NOW)
    assert machine_in(State.NEW).evictable(NOW)


def test_a_stale_copy_decides_while_refreshes_fail() -> None:
    machine = machine_in(State.FETCHING, held=1)
    machine.record = expired()

    actions = machine.answered(down(), NOW)

    assert machine.state is State.STALE
    assert effects(actions) == [
        Effect.STORE,
        Effect.RELEASE_LEASE,
        Effect.CANCEL_TIMERS,  # the released requests' deadline timer
        Effect.RELEASE,
    ]
    copy = machine.usable(NOW + 5)
    assert copy is not None and copy.body == expired().body
    retry_at = copy.retry_at
    assert machine.usable(retry_at) is None, "at the retry time the copy waits for a fetch"
    machine.request("r", retry_at, DEFER)
    machine.loaded(copy, None, retry_at)
    assert machine.state is State.LEASING, "the store's copy is due: fetch again"
    machine.leased(True, retry_at)
    machine.answered(down(), retry_at)
    assert machine.state is State.STALE
    assert machine.record is not None and machine.record.failures == 2


def test_a_stale_copy_is_not_used_past_the_stale_period() -> None:
    machine = machine_in(State.FETCHING, held=1)
    machine.record = OriginRecord(AVAILABLE, 200, b"", NOW - 2000, NOW - 1001)
    machine.answered(down(), NOW)
    assert machine.state is State.BACKOFF


def test_an_answer_after_close_is_stored_and_releases_nothing() -> None:
    """The fetch's lease goes back at the close, not with a late answer: the store may be
    closed before that answer comes, and the peers would wait out the lease."""
    machine = machine_in(State.FETCHING, held=2)

    closing = machine.close(NOW)
    assert effects(closing) == [Effect.CANCEL_TIMERS, Effect.DROP, Effect.RELEASE_LEASE]
    assert len(closing[1].held) == 2
    actions = machine.answered(ok(), NOW + 1)

    assert machine.state is State.CLOSED
    assert effects(actions) == [Effect.STORE]
    assert machine.record is not None and machine.record.outcome == AVAILABLE
    assert machine.request("late", NOW + 2, DEFER) == []
    assert machine.usable(NOW + 2) is None


def test_the_newest_copy_decides_requests_released_with_an_older_one() -> None:
    machine = machine_in(State.FETCHING, held=3)
    first = machine.answered(ok(b"User-agent: *\nAllow: /\n", max_age="1"), NOW)[-1]
    older = first.record
    assert older is not None and len(first.held) == 3
    # The released requests wait in the scheduler; the copy expires, a refresh fails,
    # then answers Disallow: /, all before they reach the downloader.
    machine.request("new", NOW + 2, DEFER)
    machine.loaded(older, None, NOW + 2)
    machine.leased(True, NOW + 2)
    machine.answered(ok(b"User-agent: *\nDisallow: /\n"), NOW + 3)

    current = machine.usable(NOW + 3)
    assert current is not None and current.body.endswith(b"Disallow: /\n")
    assert current.fetched_at > older.fetched_at


def test_a_peer_holding_the_lease_is_waited_for_and_its_record_adopted() -> None:
    machine = OriginMachine(KEY, Timing())
    machine.request("r", NOW, DEFER)
    machine.loaded(None, None, NOW)
    actions = machine.leased(False, NOW)
    assert machine.state is State.PEER_FETCHING
    assert actions == [Action(Effect.ARM_LEASE_CHECK, at=NOW + LEASE_CHECK_INTERVAL)]
    # No news yet: look at the store again.
    assert effects(machine.timer(Timer.LEASE_CHECK, NOW + 1)) == [Effect.LOAD]
    machine.loaded(None, None, NOW + 1)
    machine.leased(False, NOW + 1)

    actions = machine.changed(fresh(NOW + 2, fetched=0), 3, NOW + 2)

    assert machine.state is State.FRESH
    assert effects(actions) == [Effect.CANCEL_TIMERS, Effect.RELEASE]
    assert [held.token for held in actions[1].held] == ["r"]
    assert machine.version == 3


def test_an_older_record_from_elsewhere_is_ignored() -> None:
    machine = machine_in(State.FRESH)
    machine.version = 5
    assert machine.changed(fresh(fetched=0), 4, NOW) == []
    assert machine.record == fresh()


def test_a_record_the_store_kept_over_ours_is_adopted_even_if_fetched_earlier() -> None:
    """Our save lost the compare-and-set to a fresh copy fetched before our failed fetch
    ended (the driver decided it stands): adopted, it releases the held requests."""
    machine = machine_in(State.BACKOFF, held=1)
    machine.record = backoff(fetched=0)
    earlier = fresh(fetched=-5)
    assert machine.changed(earlier, 8, NOW) == [], "not newer by itself"

    actions = machine.changed(earlier, 8, NOW, kept=True)

    assert machine.state is State.FRESH
    assert machine.record is earlier and machine.version == 8
    assert Effect.RELEASE in effects(actions)


def test_a_record_the_store_kept_does_not_replace_a_higher_version_that_came_meanwhile() -> None:
    """Between our lost save and the load that found the kept record, a newer version
    reached the machine (a change notice): the kept one, older, is not adopted (found by
    the second round)."""
    machine = machine_in(State.FRESH)
    machine.version = 9
    newest = machine.record

    assert machine.changed(fresh(fetched=-5), 8, NOW, kept=True) == []
    assert machine.record is newest and machine.version == 9


def test_a_peer_record_in_backoff_makes_requests_wait_for_the_shared_retry() -> None:
    machine = machine_in(State.LOADING, held=1)
    actions = machine.loaded(backoff(), 2, NOW)
    assert machine.state is State.BACKOFF
    assert actions == [Action(Effect.ARM_RETRY, at=NOW + 50)]


def test_a_compare_and_set_names_the_version_it_replaces() -> None:
    machine = machine_in(State.FETCHING, held=1)
    machine.version = 4
    store = machine.answered(ok(), NOW)[0]
    assert store.effect is Effect.STORE and store.version == 4


def test_how_it_works_shows_the_whole_table() -> None:
    readme = (REPO_ROOT / "docs" / "how-it-works.md").read_text()
    start = readme.index("<!-- transition table -->\n") + len("<!-- transition table -->\n")
    end = readme.index("<!-- /transition table -->")
    assert readme[start:end] == transition_table(), "regenerate with tests/_transition_table.py"


def test_a_peer_backoff_keeps_the_deadline_of_held_requests() -> None:
    machine = machine_in(State.LOADING, held=1)
    machine.loaded(None, None, NOW)
    machine.leased(False, NOW)

    actions = machine.changed(backoff(fetched=-1), 7, NOW)

    assert machine.state is State.BACKOFF
    assert effects(actions) == [Effect.CANCEL_TIMERS, Effect.ARM_RETRY, Effect.ARM_DEADLINE]
    assert actions[-1].at == NOW + DEFER


def test_a_request_with_an_earlier_deadline_rearms_the_deadline() -> None:
    machine = OriginMachine(KEY, Timing())
    first = machine.request("saved long ago", NOW, DEFER, deadline=NOW + 50)
    second = machine.request("saved earlier", NOW, DEFER, deadline=NOW + 5)
    third = machine.request("new", NOW, DEFER)

    assert first[-1] == Action(Effect.ARM_DEADLINE, at=NOW + 50)
    assert second[-1] == Action(Effect.ARM_DEADLINE, at=NOW + 5)
    assert effects(third) == [Effect.HOLD]
    expired = machine.timer(Timer.DEADLINE, NOW + 5)
    assert [held.token for held in expired[0].held] == ["saved earlier"]
    assert expired[1] == Action(Effect.ARM_DEADLINE, at=NOW + 50)
    assert [held.token for held in machine.held] == ["saved long ago", "new"]


def test_a_lease_granted_after_the_machine_moved_on_is_given_back() -> None:
    machine = OriginMachine(KEY, Timing())
    machine.request("r", NOW, DEFER)
    machine.loaded(None, None, NOW)
    machine.changed(fresh(NOW, fetched=0), 3, NOW)  # a peer answered first

    assert machine.leased(True, NOW) == [Action(Effect.RELEASE_LEASE)]
    assert machine.state is State.FRESH


def test_expiring_a_large_backlog_takes_linear_time() -> None:
    def hold_and_expire(count: int) -> Callable[[], object]:
        def run() -> None:
            machine = OriginMachine(KEY, Timing())
            for token in range(count):
                machine.request(token, NOW + token / 1000, DEFER)
            for step in range(1, 101):
                machine.timer(Timer.DEADLINE, NOW + DEFER + step)
            assert not machine.held

        return run

    # Linear: 8x the work for 8x the backlog; a scan per request or per expiry: 64x.
    assert grows_linearly(hold_and_expire, 40_000), "holding and expiring must not rescan"


@pytest.mark.parametrize("state", [State.FRESH, State.STALE])
def test_a_request_for_an_origin_with_a_usable_copy_is_released_at_once(state: State) -> None:
    """The driver holds only requests that found no usable copy, but one may appear
    between its look and the hold (a resumed or adopted request): released at once with
    that copy, never held, no timer armed."""
    machine = machine_in(state)

    actions = machine.request("late", NOW, DEFER)

    assert effects(actions) == [Effect.RELEASE]
    assert actions[0].tokens == ("late",) and actions[0].record is machine.record
    assert machine.state is state and not machine.held
