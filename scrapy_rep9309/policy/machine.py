"""One origin's robots.txt as an explicit state machine, without I/O (in the style of h11).

Events go in: a request found no usable copy, the store answered, the fetch lease was
granted or is held by someone else, our fetch answered, another process stored a newer
record, a timer fired, the spider closed. Effects come out: hold the request, load the
record, take the lease, fetch, store, release the lease, release or expire held
requests, arm or cancel timers. Every transition is one row of ``TRANSITIONS``; the
driver (``integration/driver.py``) only turns Scrapy signals into events and carries
out the effects. The time is always passed in, so tests drive it with a fake clock.

Time-based changes (a copy passing its TTL, a stale copy's retry falling due) are
applied lazily: every event but the close first advances the machine to ``now``, so no
timer is needed for them and the per-request check is one comparison.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from enum import Enum
from itertools import pairwise

from scrapy_rep9309.policy.fetchresult import FetchResult
from scrapy_rep9309.policy.record import OriginRecord, RecordTiming, record_after_fetch

#: How often an origin whose fetch lease another process holds looks again at the store.
LEASE_CHECK_INTERVAL = 1.0


class State(str, Enum):
    NEW = "new"  #: nothing known about the origin yet
    LOADING = "loading"  #: asking the store for its record; requests wait
    LEASING = "leasing"  #: asking the store for the fetch lease; requests wait
    FETCHING = "fetching"  #: our fetch runs; requests wait
    PEER_FETCHING = "peer-fetching"  #: someone else's fetch runs; requests wait for its record
    FRESH = "fresh"  #: an answered copy within its TTL decides
    STALE = "stale"  #: an expired copy decides while refreshes fail, until the next retry
    EXPIRED = "expired"  #: no usable copy and nobody waits: the next request refreshes it
    BACKOFF = "backoff"  #: unreachable, no usable copy: requests wait for the retry
    CLOSED = "closed"  #: the spider closed: answers are still stored, nothing else happens


class Event(str, Enum):
    REQUEST = "request"  #: a request found no usable copy
    #: a request came as a usable copy appeared (it was looked for before a store answer)
    REQUEST_USABLE = "request-usable"
    LOADED_FRESH = "loaded-fresh"  #: the store's record is fresh
    LOADED_STALE = "loaded-stale"  #: the store's record is a usable stale copy
    LOADED_BACKOFF = "loaded-backoff"  #: the store's record is in backoff, retry not due
    LOADED_DUE = "loaded-due"  #: no record, or one that must be fetched again now
    LEASE_GRANTED = "lease-granted"
    LEASE_BUSY = "lease-busy"  #: another owner fetches
    ANSWER_FRESH = "answer-fresh"  #: our fetch answered (2xx, 4xx): a fresh copy
    ANSWER_STALE = "answer-stale"  #: unreachable, but the expired copy may still be used
    ANSWER_UNREACHABLE = "answer-unreachable"  #: unreachable and no usable copy
    CHANGED_FRESH = "changed-fresh"  #: another process stored a newer, fresh record
    CHANGED_STALE = "changed-stale"
    CHANGED_UNUSABLE = "changed-unusable"
    RETRY_DUE_WANTED = "retry-due-wanted"  #: backoff over, requests wait
    RETRY_DUE_IDLE = "retry-due-idle"  #: backoff over, nobody waits
    LEASE_CHECK = "lease-check"  #: time to look whether the other owner answered
    EXPIRED = "expired"  #: the clock passed the copy's use-by time
    DEADLINE = "deadline"  #: held requests waited REP9309_DEFER_TIMEOUT
    CLOSE = "close"


class Effect(str, Enum):
    HOLD = "hold"  #: keep the request out of the scheduler until RELEASE or EXPIRE
    LOAD = "load"  #: ask the store for the record (answer: ``loaded``)
    ACQUIRE_LEASE = "acquire-lease"  #: ask the store for the fetch lease (answer: ``leased``)
    FETCH = "fetch"  #: fetch robots.txt (answer: ``answered``)
    STORE = "store"  #: write ``record`` to the store (compare-and-set on ``version``)
    RELEASE_LEASE = "release-lease"
    RELEASE = "release"  #: held requests go on, decided by the newest copy at download time
    EXPIRE = "expire"  #: held requests waited too long: errback with a reason
    ARM_RETRY = "arm-retry"  #: timer at ``at``: ``timer(Timer.RETRY)``
    ARM_LEASE_CHECK = "arm-lease-check"  #: timer at ``at``: ``timer(Timer.LEASE_CHECK)``
    ARM_DEADLINE = "arm-deadline"  #: timer at ``at``: ``timer(Timer.DEADLINE)``
    CANCEL_TIMERS = "cancel-timers"
    DROP = "drop"  #: the spider closed: held requests leave without a decision


class Timer(str, Enum):
    RETRY = "retry"
    LEASE_CHECK = "lease-check"
    DEADLINE = "deadline"


_WAITING = (State.LOADING, State.LEASING, State.FETCHING, State.PEER_FETCHING, State.BACKOFF)
_ADOPTING = (
    State.NEW,
    State.LOADING,
    State.LEASING,
    State.PEER_FETCHING,
    State.FRESH,
    State.STALE,
    State.EXPIRED,
    State.BACKOFF,
)
_RELEASING = (Effect.CANCEL_TIMERS, Effect.RELEASE)

#: (state, event) -> (next state, effects in the order they are carried out).
TRANSITIONS: dict[tuple[State, Event], tuple[State, tuple[Effect, ...]]] = {
    (State.NEW, Event.REQUEST): (State.LOADING, (Effect.HOLD, Effect.LOAD)),
    (State.EXPIRED, Event.REQUEST): (State.LOADING, (Effect.HOLD, Effect.LOAD)),
    **{(state, Event.REQUEST): (state, (Effect.HOLD,)) for state in _WAITING},
    # Released at once, never held: the copy that decides it is there.
    (State.FRESH, Event.REQUEST_USABLE): (State.FRESH, (Effect.RELEASE,)),
    (State.STALE, Event.REQUEST_USABLE): (State.STALE, (Effect.RELEASE,)),
    (State.LOADING, Event.LOADED_FRESH): (State.FRESH, _RELEASING),
    (State.LOADING, Event.LOADED_STALE): (State.STALE, _RELEASING),
    (State.LOADING, Event.LOADED_BACKOFF): (State.BACKOFF, (Effect.ARM_RETRY,)),
    (State.LOADING, Event.LOADED_DUE): (State.LEASING, (Effect.ACQUIRE_LEASE,)),
    (State.LEASING, Event.LEASE_GRANTED): (State.FETCHING, (Effect.FETCH,)),
    (State.LEASING, Event.LEASE_BUSY): (State.PEER_FETCHING, (Effect.ARM_LEASE_CHECK,)),
    (State.PEER_FETCHING, Event.LEASE_CHECK): (State.LOADING, (Effect.LOAD,)),
    # Releasing every held request ends their deadline timer too: left armed, it would
    # keep the machine in memory until REP9309_DEFER_TIMEOUT passed.
    (State.FETCHING, Event.ANSWER_FRESH): (
        State.FRESH,
        (Effect.STORE, Effect.RELEASE_LEASE, *_RELEASING),
    ),
    (State.FETCHING, Event.ANSWER_STALE): (
        State.STALE,
        (Effect.STORE, Effect.RELEASE_LEASE, *_RELEASING),
    ),
    (State.FETCHING, Event.ANSWER_UNREACHABLE): (
        State.BACKOFF,
        (Effect.STORE, Effect.RELEASE_LEASE, Effect.ARM_RETRY),
    ),
    (State.FRESH, Event.EXPIRED): (State.EXPIRED, ()),
    (State.STALE, Event.EXPIRED): (State.EXPIRED, ()),
    (State.BACKOFF, Event.RETRY_DUE_WANTED): (State.LEASING, (Effect.ACQUIRE_LEASE,)),
    (State.BACKOFF, Event.RETRY_DUE_IDLE): (State.EXPIRED, ()),
    # A newer record stored by someone else is adopted wherever we are not fetching.
    **{(state, Event.CHANGED_FRESH): (State.FRESH, _RELEASING) for state in _ADOPTING},
    **{(state, Event.CHANGED_STALE): (State.STALE, _RELEASING) for state in _ADOPTING},
    **{
        (state, Event.CHANGED_UNUSABLE): (
            State.BACKOFF,
            (Effect.CANCEL_TIMERS, Effect.ARM_RETRY, Effect.ARM_DEADLINE),
        )
        for state in _ADOPTING
    },
    # Held requests can wait in every state that holds them.
    **{(state, Event.DEADLINE): (state, (Effect.EXPIRE,)) for state in _WAITING},
    **{
        (state, Event.CLOSE): (State.CLOSED, (Effect.CANCEL_TIMERS, Effect.DROP))
        for state in State
        if state not in (State.FETCHING, State.CLOSED)
    },
    # Our fetch's lease goes back at close: what answers later may never be stored, and
    # the peers would wait out its time to live.
    (State.FETCHING, Event.CLOSE): (
        State.CLOSED,
        (Effect.CANCEL_TIMERS, Effect.DROP, Effect.RELEASE_LEASE),
    ),
    # A lease granted after the machine moved on (a peer's record was adopted, the
    # spider closed) is given back at once: the peers would wait out its time to live.
    **{
        (state, Event.LEASE_GRANTED): (state, (Effect.RELEASE_LEASE,))
        for state in State
        if state is not State.LEASING
    },
    # An answer after close is still stored while the store is open (a resumed crawl or
    # a peer may use it); its lease went back at the close.
    (State.CLOSED, Event.ANSWER_FRESH): (State.CLOSED, (Effect.STORE,)),
    (State.CLOSED, Event.ANSWER_STALE): (State.CLOSED, (Effect.STORE,)),
    (State.CLOSED, Event.ANSWER_UNREACHABLE): (State.CLOSED, (Effect.STORE,)),
}

#: Events that may arrive late (a timer or a store answer overtaken by another event)
#: and change nothing in these states. Any other pair missing from TRANSITIONS is a bug.
IGNORED: frozenset[tuple[State, Event]] = frozenset(
    {
        *(
            (state, event)
            for state in State
            for event in (Event.RETRY_DUE_WANTED, Event.RETRY_DUE_IDLE)
            if state is not State.BACKOFF
        ),
        *((state, Event.LEASE_CHECK) for state in State if state is not State.PEER_FETCHING),
        *((state, Event.DEADLINE) for state in State if state not in _WAITING),
        *(
            (state, event)
            for state in State
            if state is not State.LOADING
            for event in (
                Event.LOADED_FRESH,
                Event.LOADED_STALE,
                Event.LOADED_BACKOFF,
                Event.LOADED_DUE,
            )
        ),
        *(
            (state, event)
            for state in State
            if state is not State.LEASING
            for event in (Event.LEASE_BUSY,)
        ),
        *(
            (state, event)
            for state in (State.FETCHING, State.CLOSED)
            for event in (Event.CHANGED_FRESH, Event.CHANGED_STALE, Event.CHANGED_UNUSABLE)
        ),
        (State.CLOSED, Event.REQUEST),
    }
)


class InvalidTransition(RuntimeError):
    """An event the machine has no row for in its current state: a bug in the driver."""


@dataclass(frozen=True, slots=True)
class Held:
    """A request waiting for this origin: an opaque token and a Unix-time deadline."""

    token: Hashable
    deadline: float


@dataclass(frozen=True, slots=True)
class Action:
    """One effect to carry out, with what it needs."""

    effect: Effect
    #: RELEASE, EXPIRE, DROP: the held requests concerned, oldest first.
    held: tuple[Held, ...] = ()
    #: STORE: the record to write; RELEASE, DROP: the newest record when the requests
    #: were released or dropped (None if there was none).
    record: OriginRecord | None = None
    #: STORE: the store version the record replaces (None: there was none).
    version: int | None = None
    #: ARM_*: the Unix time the timer fires at.
    at: float = 0.0

    @property
    def tokens(self) -> tuple[Hashable, ...]:
        return tuple(held.token for held in self.held)


class OriginMachine:
    """The robots.txt state of one origin in this process, and the requests held for it."""

    __slots__ = (
        "_out_of_order",
        "_timing",
        "_usable_record",
        "_usable_until",
        "held",
        "key",
        "record",
        "state",
        "version",
    )

    def __init__(self, key: str, timing: RecordTiming) -> None:
        self.key = key
        self._timing = timing
        self.state = State.NEW
        #: The newest record known (None before the first load or answer).
        self.record: OriginRecord | None = None
        #: The store's version of ``record`` (None: not stored, or the store keeps none).
        self.version: int | None = None
        #: The held requests, in deadline order; ``()`` while none is held (an empty
        #: deque takes over 600 bytes, and thousands of idle machines are kept).
        self.held: deque[Held] | tuple[()] = ()
        #: Whether ``held`` is not in deadline order (a resumed request with an earlier
        #: deadline came after others): expiry then looks at every entry.
        self._out_of_order = False
        #: Until when ``_usable_record`` may decide (``usable`` asks for every request:
        #: worked out once per record, not per request).
        self._usable_record: OriginRecord | None = None
        self._usable_until = 0.0

    def __repr__(self) -> str:
        return f"<OriginMachine {self.key} {self.state.value}, {len(self.held)} held>"

    # -- queries -----------------------------------------------------------------

    def usable(self, now: float) -> OriginRecord | None:
        """The copy requests are decided by now, or None (then send ``request``)."""
        record = self.record
        if record is None or not (self.state is State.FRESH or self.state is State.STALE):
            return None
        if record is not self._usable_record:
            self._usable_record = record
            self._usable_until = record.usable_until(self._timing.stale_ttl)
        return record if now < self._usable_until else None

    def evictable(self, now: float) -> bool:
        """Whether forgetting this machine loses nothing: no held request, no fetch under
        way, no backoff (forgetting one would refetch at once and hammer a failing server).
        The driver also keeps an origin whose requests wait to be sent (``sending``)."""
        if self.held or self.state in _WAITING:
            return False
        record = self.record
        return record is None or not record.in_backoff(now)

    # -- events ------------------------------------------------------------------

    def request(
        self, token: Hashable, now: float, defer_timeout: float, deadline: float | None = None
    ) -> list[Action]:
        """A request found no usable copy: it is held (or released at once if one appeared)
        until ``deadline`` (default: ``defer_timeout`` from now; a resumed crawl passes
        the deadline a request had when it was saved)."""
        actions = self._advance(now)
        held = Held(token, now + defer_timeout if deadline is None else deadline)
        if self.usable(now) is not None:
            return actions + self._step(Event.REQUEST_USABLE, now, new_held=held)
        earliest = self._earliest_deadline() if self.held else None
        actions += self._step(Event.REQUEST, now, new_held=held)
        if self.held and (earliest is None or held.deadline < earliest):
            actions.append(Action(Effect.ARM_DEADLINE, at=held.deadline))
        return actions

    def loaded(self, record: OriginRecord | None, version: int | None, now: float) -> list[Action]:
        """The store answered LOAD with its record (None: it has none)."""
        actions = self._advance(now)
        if record is None or not _newer(record, version, self.record, self.version):
            record, version = self.record, self.version  # ours decides
        if record is not None and record.is_fresh(now):
            event = Event.LOADED_FRESH
        elif record is not None and record.is_usable(now, self._timing.stale_ttl):
            event = Event.LOADED_STALE
        elif record is not None and record.in_backoff(now):
            event = Event.LOADED_BACKOFF
        else:
            event = Event.LOADED_DUE
        return actions + self._adopt_and_step(event, record, version, now)

    def leased(self, granted: bool, now: float) -> list[Action]:
        """The store answered ACQUIRE_LEASE."""
        actions = self._advance(now)
        event = Event.LEASE_GRANTED if granted else Event.LEASE_BUSY
        return actions + self._step(event, now)

    def answered(self, result: FetchResult, now: float) -> list[Action]:
        """Our fetch ended with ``result``: the next record is built from it and stored."""
        actions = self._advance(now)
        record = record_after_fetch(self.record, result, self._timing, now)
        replaced = self.version
        self.record = record
        if record.is_fresh(now) or (record.answered and not record.failures):
            # An answer releases the requests held for it even if it is stale at once (a
            # lifetime of 0): taken for unreachable, it was fetched again and again.
            event = Event.ANSWER_FRESH
        elif record.is_usable(now, self._timing.stale_ttl):
            event = Event.ANSWER_STALE
        else:
            event = Event.ANSWER_UNREACHABLE
        return actions + self._step(event, now, replaced=replaced)

    def stored(self, version: int | None) -> None:
        """The store accepted STORE and gave the record this version."""
        self.version = version

    def changed(
        self, record: OriginRecord, version: int | None, now: float, *, kept: bool = False
    ) -> list[Action]:
        """Someone else stored ``record``; adopted if newer than ours. ``kept``: our save
        lost to it and the driver decided it stands, so only a higher store version held
        here (a copy that came meanwhile) keeps it out, not when it was fetched."""
        actions = self._advance(now)
        if not _newer(record, version, self.record, self.version, kept=kept):
            return actions
        if record.is_fresh(now):
            event = Event.CHANGED_FRESH
        elif record.is_usable(now, self._timing.stale_ttl):
            event = Event.CHANGED_STALE
        else:
            event = Event.CHANGED_UNUSABLE
        return actions + self._adopt_and_step(event, record, version, now)

    def timer(self, timer: Timer, now: float) -> list[Action]:
        """A timer armed by ARM_RETRY, ARM_LEASE_CHECK or ARM_DEADLINE fired."""
        actions = self._advance(now)
        if timer is Timer.RETRY:
            event = Event.RETRY_DUE_WANTED if self.held else Event.RETRY_DUE_IDLE
        elif timer is Timer.LEASE_CHECK:
            event = Event.LEASE_CHECK
        else:
            event = Event.DEADLINE
        actions += self._step(event, now)
        if event is Event.DEADLINE and self.held:
            actions.append(Action(Effect.ARM_DEADLINE, at=self._earliest_deadline()))
        return actions

    def close(self, now: float) -> list[Action]:
        """The spider closes: timers stop, held requests are dropped (the driver says why)."""
        return self._step(Event.CLOSE, now)

    # -- the table -----------------------------------------------------------------

    def _advance(self, now: float) -> list[Action]:
        """Apply what the passing of time changed: a copy past its use-by time expires."""
        if (self.state is State.FRESH or self.state is State.STALE) and self.usable(now) is None:
            return self._step(Event.EXPIRED, now)
        return []

    def _adopt_and_step(
        self, event: Event, record: OriginRecord | None, version: int | None, now: float
    ) -> list[Action]:
        """Take ``event``, which brought ``record``: the record becomes this machine's
        where the table has a row for the event, and is ignored with it where the table
        ignores the event (a late store answer; a peer's record while our own fetch runs,
        whose answer will compare-and-set against it)."""
        if (self.state, event) in TRANSITIONS:
            self.record, self.version = record, version
        return self._step(event, now)

    def _step(
        self,
        event: Event,
        now: float,
        *,
        new_held: Held | None = None,
        replaced: int | None = None,
    ) -> list[Action]:
        key = (self.state, event)
        row = TRANSITIONS.get(key)
        if row is None:
            if key in IGNORED:
                return []
            raise InvalidTransition(
                f"{self.key}: no transition for {event.value} in {self.state.value}"
            )
        self.state, effects = row
        actions = [self._action(effect, now, new_held, replaced) for effect in effects]
        return [action for action in actions if action is not None]

    def _action(
        self, effect: Effect, now: float, new_held: Held | None, replaced: int | None
    ) -> Action | None:
        """The effect with what it needs; None for an ARM_DEADLINE with nothing held."""
        if effect is Effect.HOLD:
            assert new_held is not None
            held = self.held
            if not held:
                held = self.held = deque()
            elif new_held.deadline < held[-1].deadline:
                self._out_of_order = True
            held.append(new_held)
            return Action(effect, (new_held,))
        if effect is Effect.RELEASE or effect is Effect.DROP:
            held = tuple(self.held)
            if new_held is not None:  # a request released as it comes (nothing else held)
                held += (new_held,)
            self.held = ()
            self._out_of_order = False
            return Action(effect, held, self.record)
        if effect is Effect.ARM_DEADLINE:
            return Action(effect, at=self._earliest_deadline()) if self.held else None
        if effect is Effect.EXPIRE:
            return self._expire(now)
        if effect is Effect.STORE:
            return Action(effect, record=self.record, version=replaced)
        if effect is Effect.ARM_RETRY:
            assert self.record is not None
            return Action(effect, at=self.record.retry_at)
        if effect is Effect.ARM_LEASE_CHECK:
            return Action(effect, at=now + LEASE_CHECK_INTERVAL)
        return Action(effect)

    def _expire(self, now: float) -> Action:
        """Take out the requests whose deadline passed (the others keep their order).

        Requests are held in deadline order, so the expired ones are at the front: a
        backlog of a million costs one pop each, not a scan per timer.
        """
        held = self.held
        if not held:
            return Action(Effect.EXPIRE)
        if self._out_of_order:
            expired = tuple(entry for entry in held if entry.deadline <= now)
            self.held = deque(entry for entry in held if entry.deadline > now) or ()
            self._out_of_order = any(
                earlier.deadline > later.deadline for earlier, later in pairwise(self.held)
            )
            return Action(Effect.EXPIRE, expired)
        popped = []
        while held and held[0].deadline <= now:
            popped.append(held.popleft())
        if not held:
            self.held = ()
        return Action(Effect.EXPIRE, tuple(popped))

    def _earliest_deadline(self) -> float:
        if self._out_of_order:
            return min(entry.deadline for entry in self.held)
        return self.held[0].deadline


def _newer(
    record: OriginRecord,
    version: int | None,
    known: OriginRecord | None,
    known_version: int | None,
    *,
    kept: bool = False,
) -> bool:
    """Whether ``record`` replaces ``known``: a higher store version, else (unless
    ``kept``, see ``changed``) a later fetch. (Which of two records the store keeps
    after a lost compare-and-set is ``record.kept_over_ours``.)"""
    if known is None:
        return True
    if version is not None and known_version is not None:
        return version > known_version
    return kept or (record.fetched_at, record.retry_at) > (known.fetched_at, known.retry_at)
