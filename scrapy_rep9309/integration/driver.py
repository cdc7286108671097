"""Carries out what the origin machines ask for, with Scrapy's engine, the store and timers.

``OriginMachine`` (``policy/machine.py``) decides; this module only does: it feeds
each machine its events (a request to hold, the store's answers, a fetch result, a
timer) and performs the effects that come out, in order. Effects that touch the engine
(re-sending released requests, sending expired ones to their errback) run on a fresh
call stack, never inside the signal handler or fetch callback that caused them.

The machines double as the near-cache: the newest record of each recently used origin
stays in process memory, so deciding a request never waits for the store while its
origin has a usable copy. Parsed rules take several times the memory of the (packed)
record, so only those of the PARSED_RULES_KEPT origins decided most recently are kept;
another origin's are parsed again from its record when it is next decided.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
import weakref
from collections.abc import Coroutine, Hashable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydispatch.dispatcher import getAllReceivers, liveReceivers
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.python import global_object_name
from twisted.internet.defer import Deferred, DeferredSemaphore, gatherResults

from scrapy_rep9309.integration import atonce
from scrapy_rep9309.integration.fetch import fetch_robots_txt
from scrapy_rep9309.integration.timers import Timers
from scrapy_rep9309.integration.waiting import all_at_most, at_most, fire
from scrapy_rep9309.policy.fetchresult import FetchResult, failed
from scrapy_rep9309.policy.machine import (
    Action,
    Effect,
    Held,
    OriginMachine,
    State,
    Timer,
)
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.policy.record import (
    AVAILABLE,
    UNAVAILABLE,
    UNREACHABLE,
    OriginRecord,
    kept_over_ours,
)
from scrapy_rep9309.policy.report import requests_count
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.storage.base import (
    EVERY_RECORD,
    HeldRequest,
    HoldWithdrawn,
    UnencodableRequest,
)
from scrapy_rep9309.storage.lru import LRUCache

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_rep9309.integration.accounting import Accounting
    from scrapy_rep9309.integration.resilience import PatientStore
    from scrapy_rep9309.integration.settings import Rep9309Settings

logger = logging.getLogger(__name__)

#: Reason why a held request waited too long; ``process_request`` ignores it with that reason.
EXPIRED_META = "rep9309_expired"
#: On every request the middleware lets through, then on its response: the URL's usage
#: preferences, ``{label: "y" | "n"}`` (docs/usage-preferences.md). A request that goes
#: to its errback was not let through, so it carries none.
CONTENT_USAGE_META = "rep9309_content_usage"
#: On a request let through until it leaves the downloader's queue (sent, answered by
#: another middleware, or refused): the origin that stays in memory meanwhile
#: (``OriginDriver.sending``).
SENDING_META = "_rep9309_sending"
#: How often a request waiting inside ``process_request`` looks whether the spider closes.
WAIT_POLL_INTERVAL = 1.0
#: Stat counting robots.txt requests refused before they left (IgnoreRequest, NotSupported).
IGNORED_STAT = "robotstxt/ignored"
#: Seconds between two looks for requests held by fleet processes that are gone.
ORPHAN_SWEEP_INTERVAL = 2.0
#: Fleet: seconds at most a request held while its origin's record is being loaded waits
#: for the load's answer before its copy is written to the store anyway.
UNWRITTEN_COPY_LIMIT = 0.5
#: Seconds a fleet process waits at close for the store to take back its leftovers.
CLOSE_STORE_TIMEOUT = 5.0
#: Seconds ``close`` waits for the robots.txt fetches under way to be carried out (their
#: download ended before the close; ``robots_parsed`` receivers may still run): a
#: receiver that never returns does not keep the spider from closing.
CLOSE_ANSWER_TIMEOUT = 5.0
#: Fleet stats: requests held by other processes that this one released, requests of
#: processes that are gone that this one took over, requests left to the others at close.
RELEASED_FOR_PEERS_STAT = "robotstxt/fleet/released_for_peers"
ADOPTED_STAT = "robotstxt/fleet/adopted"
LEFT_STAT = "robotstxt/fleet/left"
UNENCODABLE_STAT = "robotstxt/store/unencodable"
#: Origins whose parsed rules stay in memory (at most REP9309_CACHE_SIZE): a crawl
#: decides the requests of this many origins at a time without parsing again.
PARSED_RULES_KEPT = 1000


class OriginDriver:
    """The origin machines of one crawl, and the hands that carry out their effects."""

    def __init__(
        self,
        crawler: Crawler,
        settings: Rep9309Settings,
        store: PatientStore,
        accounting: Accounting,
    ) -> None:
        self.crawler = crawler
        self.settings = settings
        self.store = store
        # What the store is, read once: each is asked several times per origin.
        #: Whether other crawl processes use the same store (a fleet).
        self.shared = store.shared
        #: Whether the store wants a copy of held requests. The memory store does not:
        #: in one process the driver's own copy is the only one anyone reads, and
        #: skipping it spares two store calls per held request.
        self._store_keeps_held = store.keeps_held_requests
        #: Whether the store's calls complete without waiting (the memory store's): the
        #: driver then runs them on the spot, sparing a task and a trip round the event
        #: loop per call (a new origin needs three).
        self._answers_at_once = store.answers_at_once
        self.accounting = accounting
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.machines: LRUCache[Origin, OriginMachine] = LRUCache(
            settings.cache_size, self._forget, keep=self._keep
        )
        #: The parsed rules of the origins decided most recently, with the record they
        #: were parsed from.
        self._parsed: LRUCache[Origin, tuple[OriginRecord, RobotsTxt]] = LRUCache(
            min(settings.cache_size, PARSED_RULES_KEPT)
        )
        self._timers = Timers()
        self._tokens = itertools.count()
        #: Every request this process holds, by token: the source of truth. The store
        #: keeps a copy (for a fleet, or a resume); releasing, expiring or dropping a
        #: request never waits for the store, so a slow or failing store loses nothing.
        self._held: dict[Hashable, tuple[Origin, HeldRequest]] = {}
        #: Tokens whose copy the store confirmed it holds.
        self._stored: set[Hashable] = set()
        #: Fleet: held requests whose write to the store is under way (sent, or queued in
        #: the store): one sent and never answered may still be carried out.
        self._writes_in_flight: set[Hashable] = set()
        #: The last store call queued per origin: holds and takes reach it in order.
        self._chains: dict[Origin, Deferred[Any]] = {}
        #: Store calls the machines asked for (loads, leases, saves) still running: an
        #: answer saved during the close gives its lease back only once saved.
        self._machine_calls: set[Deferred[Any]] = set()
        #: Requests waiting inside ``process_request`` (never scheduled), by token.
        self._waiters: dict[Hashable, Deferred[bool]] = {}
        #: The request that lends each origin's next fetch its proxy and User-Agent.
        self._triggers: dict[Origin, Request] = {}
        self._fetching: set[Origin] = set()
        #: Fetches downloading or whose answer is not carried out yet: ``close`` waits for
        #: them, so that an answer that came in as the spider closed decides the requests
        #: held for it. The engine waits for the download before it closes the spider, not
        #: for what follows: the rest of the fetch (or, on Scrapy 2.13, even its return
        #: from the download) may come a turn of the event loop after the close began.
        self._answering: dict[Origin, Deferred[None]] = {}
        #: At most REP9309_CONCURRENT_FETCHES robots.txt downloads at once. Held requests
        #: wait outside the downloader, so nothing else bounds how many new origins start
        #: a fetch together: a page listing thousands of sites would open thousands of
        #: connections at once, and hanging robots.txt files could fill the downloader.
        self._download_slots = DeferredSemaphore(settings.concurrent_fetches)
        #: Effects under way (store calls, fetches, releases): the spider stays open.
        self._tasks = 0
        #: Requests handed back to the engine, with the copy they were released with:
        #: it decides them if their origin is evicted before they reach the downloader.
        self.released: weakref.WeakKeyDictionary[Request, OriginRecord] = (
            weakref.WeakKeyDictionary()
        )
        #: Released requests and expired copies waiting for a fresh call stack, with
        #: the counter they will be counted in when handed to the engine and the
        #: deadline they were held with (kept if the spider closes meanwhile).
        self._outbox: list[tuple[Origin, Request, str, float]] = []
        #: Held requests the closing engine could not take: close() returns them.
        self._undelivered: list[Leftover] = []
        #: Requests whose wait ended while the engine was closing: errback'd at close.
        self._expired_late: list[tuple[Origin, Request, str]] = []
        #: Copies of requests that waited inside the downloader until the spider closed,
        #: made leftovers of the close (``leave_for_close``): not to be held or scheduled.
        self.left_for_close: set[Request] = set()
        self._warned_ignored: set[Origin] = set()
        self._owner = uuid.uuid4().hex
        self._closed = False
        #: Once close() hands over its leftovers: the ids of those it returned (the
        #: middleware ends them). A store call that outlives the close ends its own
        #: requests (``_end_late``), except these.
        self._handed_over: set[int] | None = None
        #: Records restored from JOBDIR whose origin this run has not taken up (``restore``).
        self._restored: dict[str, OriginRecord] = {}
        #: Fleet: origins whose lease renewal is under way; requests waiting for a peek.
        self._renewing: set[Origin] = set()
        self._peeks: dict[Origin, list[Deferred[None]]] = {}
        #: Fleet: whether a take answered since the store last heard that what the takes
        #: got is with the engine (``handed_over``, after the next hand-over to it).
        self._taken_from_store = False
        #: Fleet: requests of each origin waiting for their write to the store to start.
        self._unsent_holds: dict[Origin, list[HeldRequest]] = {}
        #: Fleet: requests held while their origin's record is being loaded, not written
        #: to the store yet: if the store has a usable record they go on from memory.
        self._unwritten_copies: dict[Origin, list[HeldRequest]] = {}

    # -- queries (the per-request path) ---------------------------------------------

    def usable(self, origin: Origin) -> OriginRecord | None:
        """The copy that decides ``origin``'s requests now, if there is one."""
        machine = self.machines.get(origin)
        return None if machine is None else machine.usable(time.time())

    def sending(self, origin: Origin) -> bool:
        """Whether a request of ``origin`` let through now keeps the origin in memory until
        it is sent (``SENDING_META``): so that its last look knows a newer copy or a failed
        refresh (forgotten, the request would be sent back to be held, and origins evicting
        each other would send each other's requests back for ever). Not when the origin's
        machine is not here to keep (the request was decided by the copy it was released
        with, its origin evicted meanwhile)."""
        return origin in self.machines

    def newest_answer(self, origin: Origin) -> OriginRecord | None:
        """The newest answered copy of ``origin`` known here, usable or not (None: none,
        or the origin's machine was evicted)."""
        machine = self.machines.get(origin)
        record = None if machine is None else machine.record
        return record if record is not None and record.answered else None

    def unknown(self, origin: Origin) -> bool:
        """Whether nothing was asked about ``origin`` yet (no machine, or a new one)."""
        machine = self.machines.get(origin)
        return machine is None or machine.state is State.NEW

    def decisive(self, origin: Origin, request: Request) -> OriginRecord | None:
        """The newest usable copy for a request about to be downloaded.

        The origin's machine knows the newest copy; only when it has none (it was
        evicted, and perhaps made anew since) does the copy the request was released
        with decide (if still usable).
        """
        now = time.time()
        machine = self.machines.get(origin)
        if machine is not None and machine.record is not None:
            return machine.usable(now)  # the link goes with the request, a weak key
        linked = self.released.pop(request, None)
        if linked is not None and linked.is_usable(now, self.settings.stale_ttl):
            return linked
        return None

    def rules(self, origin: Origin, record: OriginRecord) -> RobotsTxt:
        """The parsed rules of ``record`` (parsed again only when they were not kept)."""
        cached = self._parsed.get(origin)
        if cached is not None and cached[0] is record:
            return cached[1]
        rules = RobotsTxt.parse(record.body, max_size=self.settings.max_size)
        if origin in self.machines:  # an evicted origin's copy is not kept
            self._parsed.put(origin, (record, rules))
        return rules

    def last_failure(self, origin: Origin) -> str | None:
        machine = self.machines.get(origin)
        record = None if machine is None else machine.record
        return None if record is None else record.last_failure

    @property
    def busy(self) -> bool:
        """Whether requests are held, on their way back or a fetch runs: stay open."""
        return (
            self._tasks > 0
            or bool(self._fetching)
            or bool(self._outbox)
            or any(machine.held for machine in self.machines.values())
        )

    # -- events from the middleware ------------------------------------------------

    def hold(self, origin: Origin, request: Request, deadline: float | None = None) -> None:
        """Hold ``request`` (it found no usable copy) until its origin's robots.txt decides,
        at most until ``deadline`` (default: REP9309_DEFER_TIMEOUT from now)."""
        token = next(self._tokens)
        now = time.time()
        if deadline is None:
            deadline = now + self.settings.defer_timeout
        self._held[token] = (origin, HeldRequest(token, deadline, request))
        self._triggers.setdefault(origin, request)
        machine = self._machine(origin)  # first: the origin's report is then kept with it
        self.accounting.count(origin, "deferred")
        actions = machine.request(token, now, self._defer, deadline=deadline)
        self._carry_out(origin, machine, actions)

    async def wait(self, origin: Origin, request: Request) -> OriginRecord:
        """For a request never scheduled (``engine.download_async``): wait here instead.

        Such a request sits in the engine's in-progress set, which the engine waits to
        empty before it closes the spider: every WAIT_POLL_INTERVAL seconds, a look
        whether the spider is closing wakes it to give up (``ClosedWhileWaiting``,
        counted by whoever ends it). Only that look, the answer or the deadline
        (``_wake``, from a release or an expiry) and ``close`` wake it, so an answer never
        finds it already woken.
        """
        if self._closing():
            # Too late to wait: it ends here, counted as a request held at the close.
            self.accounting.count(origin, "deferred")
            self.accounting.count(origin, "closed")
            raise IgnoreRequest(closing_reason(origin))
        machine = self._machine(origin)  # first: the origin's report is then kept with it
        self.accounting.count(origin, "deferred")
        self._triggers.setdefault(origin, request)
        token = ("wait", next(self._tokens))
        deadline = time.time() + self._defer
        waiter: Deferred[bool] = Deferred()
        self._waiters[token] = waiter
        actions = machine.request(token, time.time(), self._defer, deadline=deadline)
        self._carry_out(origin, machine, actions)
        while True:
            self._look_whether_closing(token, waiter)
            outcome = await maybe_deferred_to_future(waiter)
            self._timers.cancel(("poll", token))
            if outcome is True:
                record = self.usable(origin)
                if record is not None:
                    self.accounting.count(origin, "released")
                    return record
                # The copy that released it is no longer usable: wait for the next one.
                waiter = self._waiters[token] = Deferred()
                machine = self._machine(origin)
                actions = machine.request(token, time.time(), self._defer, deadline=deadline)
                self._carry_out(origin, machine, actions)
                continue
            if outcome is False:
                self.accounting.count(origin, "expired")
                raise IgnoreRequest(self.expiry_reason(origin))
            self._waiters.pop(token, None)  # None: the spider is closing
            raise ClosedWhileWaiting(origin, deadline)

    def leave_for_close(self, origin: Origin, request: Request, deadline: float) -> None:
        """Make ``request`` a leftover of the close, like the requests held outside the
        downloader (saved under JOBDIR, else errback'd). The engine drops it when it is
        scheduled again (``left_for_close``), which ends the original in the engine."""
        self.left_for_close.add(request)
        self._undelivered.append(Leftover(origin, request, deadline))

    def _look_whether_closing(self, token: Hashable, waiter: Deferred[bool]) -> None:
        """Wake a request waiting in ``wait`` (with None) once the spider is closing."""
        if self._closing():
            fire(waiter, None)
            return
        self._timers.schedule(
            ("poll", token), WAIT_POLL_INTERVAL, self._look_whether_closing, token, waiter
        )

    def changed_elsewhere(self, key: str) -> None:
        """Another process stored a record for ``key``: adopt it if the origin is cached
        (an origin that is not will load it when a request asks). EVERY_RECORD: the
        store may have missed changes; every cached origin's record is read again."""
        if key == EVERY_RECORD:
            for origin, machine in list(self.machines.items()):
                self._spawn(self._reload(origin, machine))
            return
        origin = Origin.from_url(key)
        machine = None if origin is None else self.machines.get(origin)
        if origin is not None and machine is not None:
            self._spawn(self._reload(origin, machine))

    async def _reload(self, origin: Origin, machine: OriginMachine) -> None:
        stored = await self.store.load(str(origin))
        if stored is not None:
            actions = machine.changed(stored.record, stored.version, time.time())
            self._note_outcome(origin, machine, stored.record)
            self._carry_out(origin, machine, actions)

    def _note_outcome(
        self, origin: Origin, machine: OriginMachine, record: OriginRecord | None
    ) -> None:
        """The origin's report takes the outcome of a record this process did not fetch
        (a peer's, a paused run's) once the machine took it up: the close summary counts
        origins by their last outcome."""
        if record is not None and record.answered and machine.record is record:
            report = self.accounting.report(origin)
            report.outcome, report.status = record.outcome, record.status

    # -- a fleet: peeks, orphans, leaving ---------------------------------------------

    async def peek(self, origin: Origin) -> OriginRecord | None:
        """The usable copy for a request that reached the downloader of a fleet process
        that knows nothing of its origin: a shared queue hands out requests other
        processes released. One store read (shared by the requests of the origin that
        arrive meanwhile) instead of sending the request back to be held. None when
        the store has no usable copy or cannot be reached: then it is held as usual."""
        machine = self._machine(origin)
        if machine.state is State.NEW:
            waiting = self._peeks.get(origin)
            if waiting is not None:
                peeked: Deferred[None] = Deferred()
                waiting.append(peeked)
                await maybe_deferred_to_future(peeked)
            else:
                self._peeks[origin] = []
                try:
                    stored = await self.store.try_load(str(origin))
                    if stored is not None and machine.state is State.NEW:
                        actions = machine.changed(stored.record, stored.version, time.time())
                        self._note_outcome(origin, machine, stored.record)
                        self._carry_out(origin, machine, actions)
                finally:
                    for peeked in self._peeks.pop(origin):
                        fire(peeked, None)
        return machine.usable(time.time())

    def start_orphan_sweep(self) -> None:
        """Fleet: take over the requests held by processes that stopped or died (their
        heartbeat is gone), so that none waits forever: once as the spider opens, then
        every ORPHAN_SWEEP_INTERVAL.

        The first look keeps the spider open (``busy``): a process resumed with nothing
        else to crawl would close before a later one, and what its paused run left in
        the store would never end. So does a look right after one that took some over (a
        store may hand them over in batches). The others do not: an idle process may
        close; what they take over keeps it open."""
        if self.shared and not self._closed:
            self._spawn(self._adopt_orphans())

    def _spawn_orphan_sweep(self) -> None:
        self._spawn(self._adopt_orphans(), busy=False)

    async def _adopt_orphans(self) -> None:
        adopted: list[tuple[str, HeldRequest]] = []
        try:
            adopted = await self.store.adopt_orphans()
            if adopted and self._closed:
                # Answered after the close: they stay in the store, left to the fleet
                # again (the close ended this process's share of them already).
                self.stats.inc_value(ADOPTED_STAT, len(adopted))
                self.stats.inc_value(LEFT_STAT, len(adopted))
                return
            now = time.time()
            for key, held in adopted:
                origin = Origin.from_url(key)
                if origin is None:  # not written by this package
                    continue
                self._triggers.setdefault(origin, held.request)
                # The store holds it already, now as ours.
                self._held[held.token] = (origin, held)
                self._stored.add(held.token)
                machine = self._machine(origin)
                actions = machine.request(held.token, now, self._defer, deadline=held.deadline)
                self._carry_out(origin, machine, actions)
            if adopted:
                self.stats.inc_value(ADOPTED_STAT, len(adopted))
                logger.info(
                    "Took over %s held by stopped fleet processes", requests_count(len(adopted))
                )
        finally:
            if adopted and not self._closed:
                self._spawn(self._adopt_orphans())  # there may be more
            elif not self._closed:
                self._timers.schedule(
                    ("orphans", id(self)), ORPHAN_SWEEP_INTERVAL, self._spawn_orphan_sweep
                )

    async def _release_shared(self, origin: Origin, action: Action) -> None:
        """Fleet: the store decides who releases a request (a peer that got the answer
        first may have taken ours). This process, having the answer, takes every request
        held for the origin, other processes' too, and sends on what the store gave it.

        A closing process takes none: it could not crawl them any more, only write them
        back as its leftovers, and a peer crawling on, finding its own gone, would finish
        without them. What the store holds stays there (ours counted as left to the
        fleet, as at close), for the peers to release when they learn of the answer;
        what it never had goes on from memory, as a leftover of the close. (A take sent
        before the close began still takes every request: docs/fleet.md.)"""
        if self._closing():
            self._leave_in_store(origin, action.held)
            self._send_released(origin, self._take_unstored(origin, action.held), action.record)
            return
        taken = await self.store.take_held(str(origin))
        self._taken_from_store = True
        taken += self._take_unstored(origin, action.held)
        for entry in action.held:  # ours that a peer took are the peer's now
            self._held.pop(entry.token, None)
            self._stored.discard(entry.token)
        ours = set(action.tokens)
        others = 0
        for held in taken:
            if self._held.pop(held.token, None) is None and held.token not in ours:
                others += 1
            self._stored.discard(held.token)
        if others:
            self.stats.inc_value(RELEASED_FOR_PEERS_STAT, others)
        self._send_released(origin, taken, action.record)

    async def _expire_shared(self, origin: Origin, action: Action) -> None:
        """Fleet: only what the store still holds expires (a peer may have released it)."""
        taken = await self.store.take_held(str(origin), list(action.tokens))
        self._taken_from_store = True
        taken += self._take_unstored(origin, action.held)
        for entry in action.held:
            self._held.pop(entry.token, None)
            self._stored.discard(entry.token)
        self._send_expired(origin, taken)

    def _take_unstored(self, origin: Origin, held: tuple[Held, ...]) -> list[HeldRequest]:
        """Fleet: ours among ``held`` that the store never had (it could not write them,
        ``UnencodableRequest``): no peer can have taken them, so they go on from memory.
        Called after the store calls queued before, so every write has answered."""
        unstored = tuple(entry for entry in held if entry.token not in self._stored)
        return self._take(origin, unstored, forget_in_store=False)

    async def _answered_meanwhile(self, origin: Origin, machine: OriginMachine) -> bool:
        """Fleet: whether another process stored the answer between our load and our
        lease (it fetched, stored and released the lease in between). Then we adopt its
        record and give the lease back instead of fetching a second time."""
        stored = await self.store.load(str(origin))
        if stored is None:
            return False
        actions = machine.changed(stored.record, stored.version, time.time())
        if machine.state is State.LEASING:  # nothing newer than what we loaded: fetch
            return False
        self._spawn(self.store.release_lease(str(origin), self._owner))
        self._carry_out(origin, machine, actions)
        return True

    def _schedule_lease_renewal(self, origin: Origin) -> None:
        """Renew our fetch lease every third of its TTL while the fetch runs, so that a
        short lease covers a long fetch and a dead fetcher's lease expires soon."""
        self._timers.schedule(
            (origin, "lease-renewal"),
            self._lease_ttl / 3,
            self._renew_lease_while_fetching,
            origin,
        )

    def _renew_lease_while_fetching(self, origin: Origin) -> None:
        if origin not in self._fetching or self._closed:
            return
        if origin not in self._renewing:
            self._renewing.add(origin)
            self._spawn(self._renew_lease(origin))
        self._schedule_lease_renewal(origin)

    async def _renew_lease(self, origin: Origin) -> None:
        try:
            if not await self.store.renew_lease(str(origin), self._owner, self._lease_ttl):
                logger.debug("Lost the robots.txt fetch lease of %s while fetching", origin)
        finally:
            self._renewing.discard(origin)

    def restore(self, records: dict[str, OriginRecord]) -> None:
        """Records read from JOBDIR: ``records`` returns them again (to be saved at the
        pause) until this run takes up their origin, whose copy then is the newest, or
        none once it is forgotten (an older copy saved again could decide, RFC 9309 2.4)."""
        self._restored = dict(records)

    def records(self) -> dict[str, OriginRecord]:
        """The newest record of every origin in memory, by store key, and the restored
        records of origins this run never took up (for JOBDIR)."""
        return {
            **self._restored,
            **{
                str(origin): machine.record
                for origin, machine in self.machines.items()
                if machine.record is not None
            },
        }

    async def close(self) -> list[Leftover]:
        """The spider closed: stop every timer and machine; return the held requests that
        did not reach the engine, for the middleware to decide, save or errback.

        Requests whose wait expired meanwhile go to their errback here, with the reason.
        """
        await self._let_answers_finish()
        # Those left by requests that waited inside the downloader until closing began
        # (``leave_for_close``): an answer that came since decides them, as it decided
        # the requests held outside (released with it).
        self._undelivered = [self._with_newest_copy(left) for left in self._undelivered]
        store_answers = True
        if self.shared:
            store_answers = await self._settle_store_calls()
            # Kept in the process while the store was down: no peer can see those.
            withdrawn = set(await self.store.withdraw_unwritten())
            self._stored.difference_update(withdrawn)
            # Sent and never answered (the store stalled): the store may still carry the
            # write out, so the request is left to the fleet, as one it confirmed. Ended
            # here as well, it would be crawled a second time by the peer that adopts it.
            self._stored.update(self._writes_in_flight - withdrawn)
        self._closed = True
        self._timers.cancel_all()
        now = time.time()
        leased: list[Origin] = []
        for origin, machine in self.machines.items():
            for action in machine.close(now):
                if action.effect is Effect.DROP:
                    self._drop(origin, action)
                elif action.effect is Effect.RELEASE_LEASE:
                    leased.append(origin)
        for token, (origin, held) in list(self._held.items()):
            if token in self._stored:
                # Fleet: released or expired, but the store call taking it out of the
                # store has not answered (the store is stalled). It stays in the store:
                # for a peer, or for that call, if it answers late (``_end_late``).
                # Counted here, once: a late release leaves nothing more in the store.
                self._stored.discard(token)
                self.stats.inc_value(LEFT_STAT)
                continue
            logger.error("Held request %s had no origin machine at close", held.request)
            self._undelivered.append(Leftover(origin, held.request, held.deadline))
        self._held.clear()
        if leased and store_answers:
            await self._give_back_leases(leased)
        for waiter in list(self._waiters.values()):
            fire(waiter, None)
        self._waiters.clear()
        outbox, self._outbox = self._outbox, []
        self._keep_for_close(outbox)
        for origin, request, reason in self._expired_late:
            self.accounting.count(origin, "expired")
            log_given_up(request, reason, self.crawler)
            await call_errback(request, IgnoreRequest(reason))
        self._expired_late.clear()
        leftovers, self._undelivered = self._undelivered, []
        self.left_for_close.clear()
        self._handed_over = {id(leftover.request) for leftover in leftovers}
        if self.shared and store_answers:
            # Not into a store that stopped answering: a write it never confirms may
            # still be carried out when it wakes up, after this process ended the request.
            leftovers = await self._leave_leftovers(leftovers)
            self._handed_over = {id(leftover.request) for leftover in leftovers}
        return leftovers

    async def _give_back_leases(self, origins: list[Origin]) -> None:
        """At close: give back the fetch leases of fetches still running or waiting for a
        download slot (a few seconds at most). The store closes next, so their answers
        may never be stored, and the peers would wait out the leases' time to live."""
        releases = [
            deferred_from_coro(self.store.release_lease(str(origin), self._owner))
            for origin in origins
        ]
        await all_at_most(releases, CLOSE_STORE_TIMEOUT)

    def _with_newest_copy(self, leftover: Leftover) -> Leftover:
        if leftover.record is not None:
            return leftover
        record = self.usable(leftover.origin)
        return leftover if record is None else replace(leftover, record=record)

    async def _let_answers_finish(self) -> None:
        """At close: carry out the answers already downloaded (a few seconds at most), so
        that they decide their requests (forbidden, or left to save or close with their
        copy) instead of those ending unknown. See ``_answering``."""
        for answering in list(self._answering.values()):
            await at_most(answering, CLOSE_ANSWER_TIMEOUT)

    async def _settle_store_calls(self) -> bool:
        """Fleet, at close: let the queued store calls finish (a few seconds at most), so
        that what is left in the store and what is left to this process do not overlap;
        whether they did (else the store is down or stalled)."""
        for call in [*self._chains.values(), *self._machine_calls]:
            if call.called:
                continue
            if not await at_most(call, CLOSE_STORE_TIMEOUT):
                return False  # the store is down: what it has not confirmed stays ours
        return True

    async def _leave_leftovers(self, leftovers: list[Leftover]) -> list[Leftover]:
        """Fleet, at close: put the leftovers back into the store for the others, and
        return those that stay this process's to end: the store refused them, kept them
        in the process (it is down), or never sent them within a few seconds. A write
        sent and not answered in that time is left to the fleet: the store may still
        carry it out (a stalled Redis does, when it wakes up), and a request must not end
        here and be crawled by a peer too. Writes are never cancelled: a cancelled wait
        would not take back what was sent."""
        writes: dict[Hashable, tuple[Leftover, Deferred[bool]]] = {}
        for leftover in leftovers:
            held = HeldRequest(next(self._tokens), leftover.deadline, leftover.request)
            write = deferred_from_coro(self._hold_for_the_fleet(leftover.origin, held))
            writes[held.token] = (leftover, write)
        await all_at_most([write for _, write in writes.values()], CLOSE_STORE_TIMEOUT)
        ours = set(await self.store.withdraw_unwritten())
        ours.update(
            token for token, (_, write) in writes.items() if write.called and not write.result
        )
        left = [token for token in writes if token not in ours]
        if left:
            self.stats.inc_value(LEFT_STAT, len(left))
        return [leftover for token, (leftover, _) in writes.items() if token in ours]

    async def _hold_for_the_fleet(self, origin: Origin, held: HeldRequest) -> bool:
        """Whether the store took ``held`` (False: it refused it, e.g. unencodable; the
        request then ends in this process)."""
        try:
            await self.store.hold(str(origin), held)
        except (UnencodableRequest, HoldWithdrawn):
            return False
        except Exception:
            logger.exception("Could not leave %s to the fleet; it ends here", held.request)
            return False
        return True

    # -- carrying out effects --------------------------------------------------------

    def _machine(self, origin: Origin) -> OriginMachine:
        machine = self.machines.get(origin)
        if machine is None:
            key = str(origin)
            machine = OriginMachine(key, self.settings)
            self.machines.put(origin, machine)
            if self._restored:
                self._restored.pop(key, None)  # this run's copy is the one to save now
        return machine

    @property
    def _defer(self) -> float:
        return self.settings.defer_timeout

    def _carry_out(self, origin: Origin, machine: OriginMachine, actions: list[Action]) -> None:
        store_calls: list[Coroutine[Any, Any, None]] = []
        for action in actions:
            effect = action.effect
            if effect is Effect.HOLD:
                self._copy_to_store(origin, action.held)
            elif effect is Effect.LOAD:
                store_calls.append(self._load(origin, machine))
            elif effect is Effect.ACQUIRE_LEASE:
                store_calls.append(self._acquire_lease(origin, machine))
            elif effect is Effect.FETCH:
                self._start_fetch(origin, machine)
            elif effect is Effect.STORE:
                if any(later.effect is Effect.RELEASE_LEASE for later in actions):
                    store_calls.append(self._save_then_release_lease(origin, machine, action))
                else:
                    store_calls.append(self._save(origin, machine, action))
            elif effect is Effect.RELEASE_LEASE:
                if not any(earlier.effect is Effect.STORE for earlier in actions):
                    store_calls.append(self.store.release_lease(str(origin), self._owner))
            elif effect is Effect.RELEASE:
                self._triggers.pop(origin, None)  # answered: no fetch needs its proxy now
                self._release(origin, action)
            elif effect is Effect.EXPIRE:
                self._expire(origin, action)
            elif effect is Effect.ARM_RETRY:
                self._arm(origin, machine, Timer.RETRY, action.at)
            elif effect is Effect.ARM_LEASE_CHECK:
                self._arm(origin, machine, Timer.LEASE_CHECK, action.at)
            elif effect is Effect.ARM_DEADLINE:
                self._arm(origin, machine, Timer.DEADLINE, action.at)
            elif effect is Effect.CANCEL_TIMERS:
                for timer in Timer:
                    self._timers.cancel((origin, timer))
            elif effect is Effect.DROP:
                self._drop(origin, action)
        for call in store_calls:
            self._call_store(call)

    def _call_store(self, call: Coroutine[Any, Any, None]) -> None:
        """Run a store call the machine asked for: on the spot when the store answers
        without waiting (after the other effects of the same step, as a task would),
        else as a task of its own."""
        if not self._answers_at_once:
            running = self._spawn(call)
            if not running.called:
                self._machine_calls.add(running)
                running.addBoth(_forget_call, self._machine_calls, running)
            return
        try:
            rest = atonce.start(call)
        except Exception:
            logger.exception("robots.txt handling failed")
            return
        if rest is not None:  # it waits after all: the rest runs as a task
            self._spawn(rest)

    def _arm(self, origin: Origin, machine: OriginMachine, timer: Timer, at: float) -> None:
        if self._closing():
            return  # no retry, fetch or expiry once closing has begun: close() decides
        self._timers.schedule(
            (origin, timer), at - time.time(), self._timer_fired, origin, machine, timer
        )

    def _timer_fired(self, origin: Origin, machine: OriginMachine, timer: Timer) -> None:
        if self._closing():
            return
        self._carry_out(origin, machine, machine.timer(timer, time.time()))

    async def _load(self, origin: Origin, machine: OriginMachine) -> None:
        lease: bool | None = None
        if self.shared:
            stored, lease = await self.store.load_or_lease(
                str(origin), self._owner, self._lease_ttl
            )
        else:
            stored = await self.store.load(str(origin))
        record, version = (None, None) if stored is None else (stored.record, stored.version)
        actions = machine.loaded(record, version, time.time())
        self._note_outcome(origin, machine, record)
        if lease is None:
            self._carry_out(origin, machine, actions)
        else:
            self._carry_out_with_lease(origin, machine, actions, lease)
        if self.shared:  # those the answer did not release must wait: copies written now
            self._write_unwritten_copies(origin)

    def _carry_out_with_lease(
        self, origin: Origin, machine: OriginMachine, actions: list[Action], granted: bool
    ) -> None:
        """Fleet: the store answered the lease with the load (there was no record), so
        the machine's ACQUIRE_LEASE is answered at once; a lease it did not ask for
        (our own copy put it in backoff, say) is given back."""
        for index, action in enumerate(actions):
            if action.effect is Effect.ACQUIRE_LEASE:
                self._carry_out(origin, machine, actions[:index])
                self._leased(origin, machine, granted)
                self._carry_out(origin, machine, actions[index + 1 :])
                return
        self._carry_out(origin, machine, actions)
        if granted:
            self._spawn(self.store.release_lease(str(origin), self._owner))

    async def _acquire_lease(self, origin: Origin, machine: OriginMachine) -> None:
        if self._closing():
            return
        granted = await self.store.acquire_lease(str(origin), self._owner, self._lease_ttl)
        if granted and self.shared and await self._answered_meanwhile(origin, machine):
            return
        self._leased(origin, machine, granted)

    def _leased(self, origin: Origin, machine: OriginMachine, granted: bool) -> None:
        self._carry_out(origin, machine, machine.leased(granted, time.time()))
        if granted and machine.state is State.FETCHING and origin not in self._fetching:
            # Closing began: no fetch starts, so the lease goes back at once.
            self._spawn(self.store.release_lease(str(origin), self._owner))

    @property
    def _lease_ttl(self) -> float:
        """One robots.txt request's timeout (REP9309_FETCH_TIMEOUT, else DOWNLOAD_TIMEOUT):
        renewed while the fetch runs, so a fetcher that died blocks the others no longer."""
        timeout = self.settings.fetch_timeout
        if timeout is None:
            timeout = float(self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 180))
        return max(1.0, timeout)

    async def _save(self, origin: Origin, machine: OriginMachine, action: Action) -> None:
        assert action.record is not None
        key = str(origin)
        version = await self.store.save(key, action.record, action.version)
        if version is None:
            # Someone else wrote first (or the store dropped the record): adopt a newer
            # record, or write ours over an older one (or over none).
            stored = await self.store.load(key)
            now = time.time()
            if stored is not None and kept_over_ours(stored.record, action.record, now):
                actions = machine.changed(stored.record, stored.version, now, kept=True)
                self._note_outcome(origin, machine, stored.record)
                self._carry_out(origin, machine, actions)
                return
            expected = None if stored is None else stored.version
            version = await self.store.save(key, action.record, expected)
        if version is not None and machine.record is action.record:
            machine.stored(version)

    async def _save_then_release_lease(
        self, origin: Origin, machine: OriginMachine, action: Action
    ) -> None:
        """The lease goes back only once the answer is stored: a peer that takes it
        then finds the record instead of fetching a second time."""
        try:
            await self._save(origin, machine, action)
        finally:
            await self.store.release_lease(str(origin), self._owner)

    def _start_fetch(self, origin: Origin, machine: OriginMachine) -> None:
        if self._closing():
            return
        record = machine.record
        if record is not None and record.answered and not record.failures:
            self.stats.inc_value("robotstxt/refreshed")
        self._fetching.add(origin)
        if self.shared:  # a lease only others could take over needs no renewal
            self._schedule_lease_renewal(origin)
        self._spawn(self._fetch(origin, machine))

    async def _fetch(self, origin: Origin, machine: OriginMachine) -> None:
        trigger = self._triggers.get(origin)  # kept for retries; dropped on release
        try:
            try:
                if not await self._take_download_slot(origin):
                    return  # the spider is closing: as if the fetch had never started
                self._answering[origin] = Deferred()
                try:
                    result = await self._download(origin, trigger)
                finally:
                    self._download_slots.release()
                result, rules = await self._read(origin, result, trigger)
            finally:
                self._fetching.discard(origin)
                self._timers.cancel((origin, "lease-renewal"))
            actions = machine.answered(result, time.time())
            record = machine.record
            assert record is not None
            if rules is not None and result.outcome == AVAILABLE:  # the record holds its body
                self._parsed.put(origin, (record, rules))
            self._report(origin, record, result, machine)
            self._carry_out(origin, machine, actions)
        finally:
            self._answer_carried_out(origin)  # or never will be: close() goes on

    def _answer_carried_out(self, origin: Origin) -> None:
        """``origin``'s answer is carried out (or never will be): ``close`` goes on."""
        answering = self._answering.pop(origin, None)
        if answering is not None:
            fire(answering, None)

    async def _take_download_slot(self, origin: Origin) -> bool:
        """Take one of the REP9309_CONCURRENT_FETCHES download slots, waiting for one if
        all are in use; False (none taken) if the spider began closing meanwhile."""
        slot = self._download_slots.acquire()
        if slot.called:  # a free one is taken at once: no trip round the event loop
            return True
        logger.debug(
            "The robots.txt of %(origin)s waits for a download slot "
            "(REP9309_CONCURRENT_FETCHES=%(slots)d are in use)",
            {"origin": origin, "slots": self.settings.concurrent_fetches},
            extra={"spider": self.crawler.spider},
        )
        await maybe_deferred_to_future(slot)
        if self._closing():
            self._download_slots.release()
            return False
        return True

    async def _download(self, origin: Origin, trigger: Request | None) -> FetchResult:
        proxy = trigger.meta.get("proxy") if trigger is not None else None
        user_agent = trigger.headers.get(b"User-Agent") if trigger is not None else None
        try:
            return await fetch_robots_txt(
                self.crawler, origin, self.settings, proxy=proxy, user_agent=user_agent
            )
        except Exception as exc:  # a bug or an unexpected middleware error: never crawl blind
            logger.exception("Fetching the robots.txt of %s failed", origin)
            return failed(origin, origin.robots_url, (), global_object_name(type(exc)))

    async def _read(
        self, origin: Origin, result: FetchResult, trigger: Request | None
    ) -> tuple[FetchResult, RobotsTxt | None]:
        """Parse an answered body and send ``robots_parsed``; if that raises, the answer
        counts as unreachable (retried with backoff), so held requests are neither stuck
        until REP9309_DEFER_TIMEOUT nor crawled without rules."""
        if result.outcome not in (AVAILABLE, UNAVAILABLE):
            return result, None
        try:
            body = result.body if result.outcome == AVAILABLE else b""
            rules = RobotsTxt.parse(body, max_size=self.settings.max_size)
            await self._send_robots_parsed(rules, trigger)
        except Exception as exc:
            self.stats.inc_value("robotstxt/answer_errors")
            logger.exception(
                "Handling the robots.txt answer of %s failed; treated as unreachable", origin
            )
            return failed(origin, result.final_url, (), global_object_name(type(exc))), None
        return result, rules

    async def _send_robots_parsed(self, rules: RobotsTxt, trigger: Request | None) -> None:
        signal = getattr(signals, "robots_parsed", None)
        if signal is None:  # Scrapy < 2.18
            return
        manager = self.crawler.signals
        if not any(liveReceivers(getAllReceivers(manager.sender, signal))):
            return  # nobody listens: spare building the parser and the asynchronous send
        # Imported here: it imports Scrapy's parser module, and with it Protego, which a
        # crawl whose robots_parsed nobody listens to never uses.
        from scrapy_rep9309.integration.robotparser import RobotParser

        await manager.send_catch_log_async(
            signal=signal, robotparser=RobotParser(rules), request=trigger
        )

    def _report(
        self, origin: Origin, record: OriginRecord, result: FetchResult, machine: OriginMachine
    ) -> None:
        """Update the origin's report and log the outcome."""
        report = self.accounting.report(origin)
        report.outcome = record.outcome
        report.status = result.status
        if result.refused:
            self._warn_ignored(origin, result)
        now = time.time()
        if result.outcome != UNREACHABLE:
            logger.debug(
                "robots.txt of %s: %s (HTTP %s%s)",
                origin,
                result.outcome,
                result.status,
                f", {len(result.redirects)} redirects" if result.redirects else "",
            )
        elif machine.state is State.STALE:
            logger.info(
                "robots.txt of %s unreachable (%s); using the copy fetched %.0f s ago, %s",
                origin,
                record.last_failure,
                now - record.fetched_at,
                self._next_attempt(record, now),
            )
        else:
            logger.info(
                "robots.txt of %s unreachable (%s): %s held, %s",
                origin,
                record.last_failure,
                requests_count(len(machine.held)),
                self._next_attempt(record, now),
            )

    def _next_attempt(self, record: OriginRecord, now: float) -> str:
        if self._closing():
            return "no further attempt: the spider is closing"
        return f"next attempt in {record.retry_at - now:.1f} s"

    def _warn_ignored(self, origin: Origin, result: FetchResult) -> None:
        self.stats.inc_value(IGNORED_STAT)
        if origin in self._warned_ignored:
            return
        self._warned_ignored.add(origin)
        logger.warning(
            "The robots.txt request of %s was refused before it left, by another downloader "
            "middleware or for want of a download handler (%s): the origin is treated as "
            "having no robots.txt (everything allowed), "
            "as Scrapy's built-in middleware does",
            origin,
            result.error,
        )

    def _release(self, origin: Origin, action: Action) -> None:
        self._wake(action.held, True)
        if self.shared:
            unwritten = self._take_unwritten(origin, action.held)
            self._send_released(origin, unwritten, action.record)
            if any(entry.token in self._held for entry in action.held):
                self._in_order(origin, self._release_shared(origin, action))
        else:
            self._send_released(origin, self._take(origin, action.held), action.record)

    def _send_released(
        self, origin: Origin, taken: list[HeldRequest], record: OriginRecord | None
    ) -> None:
        if not taken:
            return
        if self._handed_over is not None:
            self._end_late(
                origin,
                [(held.request, "closed", closed_before(held.request)) for held in taken],
            )
            return
        if self._closing():
            # A closing engine drops new requests silently: close() returns them,
            # with the copy that decides them.
            self._undelivered.extend(
                Leftover(origin, held.request, held.deadline, record) for held in taken
            )
            return
        if record is not None:
            for held in taken:
                self.released[held.request] = record
        self._send(origin, [(held.request, held.deadline) for held in taken], "released")

    def _send(self, origin: Origin, requests: list[tuple[Request, float]], counter: str) -> None:
        """Hand ``requests`` (with their deadline) to the engine on a fresh call stack
        (counted then)."""
        if not self._outbox:
            self._timers.schedule(("outbox", id(self)), 0, self._flush)
        self._outbox.extend((origin, request, counter, deadline) for request, deadline in requests)

    def _flush(self) -> None:
        engine = self.crawler.engine
        assert engine is not None
        outbox, self._outbox = self._outbox, []
        if self._closing():  # a closing engine would drop them silently: close() decides
            self._keep_for_close(outbox)
            return
        for origin, request, counter, _ in outbox:
            self.accounting.count(origin, counter)
            try:
                engine.crawl(request)
            except Exception as error:  # e.g. a custom scheduler: the others still go
                logger.exception(
                    "Scheduling %s failed; it goes to its errback with the error (what the "
                    "errback returns is discarded)",
                    request,
                )
                expired = counter == "expired"
                # The mark is used here: a copy the errback makes is decided anew.
                reason = IgnoreRequest(request.meta.pop(EXPIRED_META)) if expired else error
                self._spawn(call_errback(request, reason))
        if self._taken_from_store:
            # Fleet: what the takes returned so far got is with the engine now; until
            # this, the store kept it for the others should this process be killed.
            # The store reads which takes when called (now), not when the call runs.
            self._taken_from_store = False
            self._spawn(self.store.handed_over(), busy=False)

    def _keep_for_close(self, outbox: list[tuple[Origin, Request, str, float]]) -> None:
        """Requests the closing engine cannot take any more: close() decides them (an
        expired copy goes to its errback, a released request is saved or closed)."""
        for origin, request, counter, deadline in outbox:
            if counter == "expired":  # the mark used here, as in ``process_request``
                self._expired_late.append((origin, request, request.meta.pop(EXPIRED_META)))
            else:
                record = self.released.pop(request, None)
                self._undelivered.append(Leftover(origin, request, deadline, record))

    def _expire(self, origin: Origin, action: Action) -> None:
        self._wake(action.held, False)
        if self.shared:
            self._send_expired(origin, self._take_unwritten(origin, action.held))
            if any(entry.token in self._held for entry in action.held):
                self._in_order(origin, self._expire_shared(origin, action))
        else:
            self._send_expired(origin, self._take(origin, action.held))

    def _send_expired(self, origin: Origin, taken: list[HeldRequest]) -> None:
        if not taken:
            return
        reason = self.expiry_reason(origin)
        if self._handed_over is not None:
            self._end_late(origin, [(held.request, "expired", reason) for held in taken])
            return
        if self._closing():
            self._expired_late.extend((origin, held.request, reason) for held in taken)
            return
        copies = []
        for held in taken:
            # Through the duplicate filter, as a released request goes (it never went
            # through it): the same URL yielded again later is a duplicate, on a resume
            # too, as with Scrapy's built-in middleware.
            copy = held.request.replace()
            copy.meta[EXPIRED_META] = reason
            copies.append((copy, held.deadline))
        self._send(origin, copies, "expired")

    def _end_late(self, origin: Origin, ending: list[tuple[Request, str, str]]) -> None:
        """A store call that outlived close() (it waited out a stalled store) took these
        requests out of the store after close() had returned its leftovers: no one else
        has them now. Each ends here, once, in its errback with ``reason``."""
        assert self._handed_over is not None
        late = 0
        for request, counter, reason in ending:
            if id(request) in self._handed_over:
                continue  # a leftover close() returned: the middleware ended it
            self._handed_over.add(id(request))
            late += 1
            self.accounting.count(origin, counter)
            if counter == "expired":
                log_given_up(request, reason, self.crawler)
            self._spawn(call_errback(request, IgnoreRequest(reason)), busy=False)
        if late:
            logger.warning(
                "%d held requests of %s came back from the robots.txt store after the "
                "spider closed (the store was slow to answer); they go to their errback",
                late,
                origin,
            )

    def _drop(self, origin: Origin, action: Action) -> None:
        """The spider closed: held requests become leftovers. In a fleet, those the
        store holds stay there, for the other processes to adopt."""
        if self.shared:
            self._leave_in_store(origin, action.held)
        for held in self._take(origin, action.held, forget_in_store=not self.shared):
            self._undelivered.append(Leftover(origin, held.request, held.deadline))

    def _leave_in_store(self, origin: Origin, held: tuple[Held, ...]) -> None:
        """Fleet, closing: forget ours that the store holds, left there for the fleet."""
        left = [entry for entry in held if entry.token in self._stored]
        for entry in left:
            self._held.pop(entry.token, None)
            self._stored.discard(entry.token)
        if left:
            self.stats.inc_value(LEFT_STAT, len(left))

    def _take(
        self, origin: Origin, held: tuple[Held, ...], *, forget_in_store: bool = True
    ) -> list[HeldRequest]:
        """The held requests behind ``held`` (waiters excluded), at once; the store's
        copies are taken out after, in order with the writes that made them."""
        taken = []
        for entry in held:
            item = self._held.pop(entry.token, None)
            if item is not None:
                taken.append(item[1])
        if taken and forget_in_store and self._store_keeps_held:
            tokens = [held.token for held in taken]
            self._in_order(origin, self._forget_in_store(origin, tokens))
        return taken

    def _copy_to_store(self, origin: Origin, held: tuple[Held, ...]) -> None:
        if not self._store_keeps_held:
            return
        for entry in held:
            item = self._held.get(entry.token)
            if item is None or entry.token in self._stored:
                continue
            if self.shared:
                self._copy_to_shared_store_after_load(origin, item[1])
            else:
                self._in_order(origin, self._store_hold(origin, item[1]))

    def _copy_to_shared_store_after_load(self, origin: Origin, held: HeldRequest) -> None:
        """Fleet: a request held while its origin's record is being loaded is written to
        the store only if the answer does not release it (a peer may have stored a
        usable record: then it goes on from memory, neither written nor taken back),
        and at the latest UNWRITTEN_COPY_LIMIT seconds later. Written copies are what a
        process killed meanwhile leaves to the others; the load is one round trip."""
        machine = self.machines.get(origin)
        if machine is None or machine.state is not State.LOADING:
            self._copy_to_shared_store(origin, held)
            return
        unwritten = self._unwritten_copies.get(origin)
        if unwritten is None:
            unwritten = self._unwritten_copies[origin] = []
            self._timers.schedule(
                (origin, "unwritten-copies"),
                UNWRITTEN_COPY_LIMIT,
                self._write_unwritten_copies,
                origin,
            )
        unwritten.append(held)

    def _write_unwritten_copies(self, origin: Origin) -> None:
        self._timers.cancel((origin, "unwritten-copies"))
        for held in self._unwritten_copies.pop(origin, ()):
            if held.token in self._held and held.token not in self._stored:
                self._copy_to_shared_store(origin, held)

    def _take_unwritten(self, origin: Origin, held: tuple[Held, ...]) -> list[HeldRequest]:
        """Fleet: the requests behind ``held`` that have no copy in the store: they are
        released or expired from memory, without a store call."""
        unwritten = self._unwritten_copies.get(origin)
        if not unwritten:
            return []
        tokens = {entry.token for entry in held}
        taken = [item for item in unwritten if item.token in tokens]
        if not taken:
            return []
        remaining = [item for item in unwritten if item.token not in tokens]
        if remaining:
            self._unwritten_copies[origin] = remaining
        else:
            del self._unwritten_copies[origin]
            self._timers.cancel((origin, "unwritten-copies"))
        for item in taken:
            self._held.pop(item.token, None)
        return taken

    def _copy_to_shared_store(self, origin: Origin, held: HeldRequest) -> None:
        """Fleet: requests of an origin held while an earlier write of its requests runs
        join one write, queued behind it; a burst of requests for a new origin costs two
        store round trips in a row, not one per request (each waits for the one before)."""
        unsent = self._unsent_holds.get(origin)
        if unsent is not None:
            unsent.append(held)
            return
        self._unsent_holds[origin] = [held]
        self._in_order(origin, self._store_holds(origin))

    async def _store_holds(self, origin: Origin) -> None:
        """Write the requests gathered for ``origin``, together (the store batches the
        writes that start in the same moment); later ones gather for the next write."""
        unsent = self._unsent_holds.pop(origin, [])
        writes = [deferred_from_coro(self._store_hold(origin, held)) for held in unsent]
        await maybe_deferred_to_future(gatherResults(writes, consumeErrors=True))

    async def _store_hold(self, origin: Origin, held: HeldRequest) -> None:
        self._writes_in_flight.add(held.token)
        try:
            await self.store.hold(str(origin), held)
        except HoldWithdrawn:
            return  # given up unsent at close: this process ends it
        except UnencodableRequest as exc:
            # Kept in this process only (not ``_stored``): released, expired or closed
            # from memory; no other process can take it over.
            self.stats.inc_value(UNENCODABLE_STAT)
            logger.warning(
                "%(request)s cannot be written to the robots.txt store (%(error)s): it is "
                "held in this process only, and no other process can take it over",
                {"request": held.request, "error": exc},
                extra={"spider": self.crawler.spider},
            )
            return
        finally:
            self._writes_in_flight.discard(held.token)
        if held.token in self._held:
            self._stored.add(held.token)

    async def _forget_in_store(self, origin: Origin, tokens: list[Hashable]) -> None:
        await self.store.take_held(str(origin), tokens)
        self._stored.difference_update(tokens)

    def _in_order(self, origin: Origin, coroutine: Any) -> None:
        """Run a store call for ``origin`` after the ones queued before it (a take must
        not overtake the write of what it takes)."""
        previous = self._chains.get(origin)

        async def after_previous() -> None:
            if previous is not None and not previous.called:
                await maybe_deferred_to_future(previous)
            await coroutine

        chain = self._spawn(after_previous())
        self._chains[origin] = chain

        def done(result: Any) -> Any:
            if self._chains.get(origin) is chain:
                del self._chains[origin]
            return result

        chain.addBoth(done)

    def _closing(self) -> bool:
        """Whether the spider is closing or closed: no fetch, retry or release starts."""
        return self._closed or engine_closing(self.crawler)

    def _wake(self, held: tuple[Held, ...], released: bool) -> None:
        for entry in held:
            waiter = self._waiters.pop(entry.token, None)
            if waiter is not None:
                fire(waiter, released)

    def expiry_reason(self, origin: Origin) -> str:
        failure = self.last_failure(origin)
        why = f"{UNREACHABLE}: {failure}" if failure else "no answer yet"
        return (
            f"robots.txt of {origin} still unknown after {self.settings.defer_timeout:g} s ({why})"
        )

    # -- plumbing ----------------------------------------------------------------------

    def _spawn(self, coroutine: Any, *, busy: bool = True) -> Deferred[Any]:
        """Run ``coroutine`` as a task of its own; log what it raises. ``busy`` tasks
        keep the spider open until they end."""
        deferred = deferred_from_coro(coroutine)
        deferred.addErrback(
            lambda failure: logger.error(
                "robots.txt handling failed",
                exc_info=(failure.type, failure.value, failure.getTracebackObject()),
            )
        )
        if busy:
            self._tasks += 1
            deferred.addBoth(self._task_done)
        return deferred

    def _task_done(self, _: Any) -> None:
        self._tasks -= 1

    def _keep(self, origin: Origin, machine: OriginMachine) -> bool:
        if not machine.evictable(time.time()) or origin in self._fetching:
            return True
        return self._pinned(origin)

    def _pinned(self, origin: Origin) -> bool:
        """Whether a request ``origin`` let through waits in the downloader to be sent
        (``sending``). Only requests in the downloader's ``active`` set count: one that
        left it where no hook of the middleware sees it (a later middleware raised in
        ``process_response``, or replaced it with a new request) keeps nothing. Looked
        for here, when an origin could be evicted (at most ``CONCURRENT_REQUESTS`` or so
        requests to look at), rather than kept for every request let through. Scrapy's
        engine reads ``active`` itself (whether the spider is idle): every downloader has it."""
        engine = self.crawler.engine
        if engine is None:
            return False
        return any(request.meta.get(SENDING_META) == origin for request in engine.downloader.active)

    def _forget(self, origin: Origin, machine: OriginMachine) -> None:
        """``origin`` leaves the near-cache: nothing else is kept for it one by one."""
        self._parsed.delete(origin)
        self._triggers.pop(origin, None)
        self._warned_ignored.discard(origin)
        self.accounting.forget(origin)


class ClosedWhileWaiting(IgnoreRequest):
    """A request waiting inside the downloader for its robots.txt: the spider closed."""

    def __init__(self, origin: Origin, deadline: float) -> None:
        super().__init__(closing_reason(origin))
        self.origin = origin
        #: Unix time its wait would have ended.
        self.deadline = deadline


@dataclass(frozen=True, slots=True)
class Leftover:
    """A held request the closing spider could not hand back to the engine."""

    origin: Origin
    request: Request
    #: Unix time its wait would have ended.
    deadline: float
    #: The copy that answered while the spider was closing; None: it never did.
    record: OriginRecord | None = None


def closed_before(request: Request) -> str:
    """Why an allowed request that could not be downloaded before the close ends."""
    return f"Spider closed before {request.url} could be downloaded"


def closing_reason(origin: Origin) -> str:
    return f"Spider closed before the robots.txt of {origin} was known"


def _forget_call(result: Any, running: set[Deferred[Any]], call: Deferred[Any]) -> Any:
    running.discard(call)
    return result


def log_given_up(request: Request, reason: str, crawler: Crawler) -> None:
    """The DEBUG line of a request whose wait for its robots.txt ran out: Scrapy logs no
    IgnoreRequest, so without an errback it is all the request leaves in the log."""
    logger.debug(
        "Gave up on %(request)s: %(reason)s",
        {"request": request, "reason": reason},
        extra={"spider": crawler.spider},
    )


def engine_closing(crawler: Crawler) -> bool:
    """Whether the engine started closing the spider.

    No public API tells; ``ExecutionEngine._slot.closing`` is set from the start of
    ``close_spider_async`` until the end. If it is ever renamed, this says "no",
    which only loses the early give-up, never a decision.
    """
    slot = getattr(crawler.engine, "_slot", None)
    return getattr(slot, "closing", None) is not None


async def call_errback(request: Request, exception: Exception) -> None:
    """Hand ``exception`` to the request's errback the way Scrapy would, output discarded.

    Used when the spider closes with requests still held (the engine no longer accepts
    new requests or items then, so whatever the errback yields is dropped), and for a
    request the scheduler refused to take back.
    """
    import inspect

    from twisted.python.failure import Failure

    # Not let through: no preferences (perhaps another page's, copied with its meta).
    request.meta.pop(CONTENT_USAGE_META, None)
    if request.errback is None:
        return
    failure = Failure(exception)
    failure.request = request  # type: ignore[attr-defined]
    try:
        output: Any = request.errback(failure)
        if inspect.isawaitable(output):
            output = await output
        if hasattr(output, "__aiter__"):
            async for _ in output:
                pass
        elif output is not None and not isinstance(output, Failure) and hasattr(output, "__iter__"):
            for _ in output:
                pass
    except Exception:
        logger.exception("Errback of %s failed", request)
