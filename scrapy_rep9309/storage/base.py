"""What a store offers: versioned origin records, a fetch lease per origin, held requests.

``REP9309_STORE`` names the class (an import path, like ``HTTPCACHE_STORAGE``). The
interface is asynchronous so that a network store never blocks the reactor; the
per-request decision never waits for it, because the driver keeps the rules of fresh
records in process memory (its near-cache) and asks the store only when an origin
has no usable copy there.

- **Records** are versioned: ``save`` is a compare-and-set on the version the writer
  last saw, so two writers sharing the store cannot lose an update.
- **The fetch lease** makes one fetch per origin among everyone sharing the store:
  acquire it with an owner token and a time to live, renew it while fetching, release
  it after. A lease whose owner died expires by itself.
- **Held requests** are the requests waiting for an origin's robots.txt. A store that
  keeps them outside the process serialises them with the ``RequestCodec`` it is
  opened with (Scrapy's ``Request.to_dict`` / ``request_from_dict``). A store whose
  ``keeps_held_requests`` is False (the memory store) is given none: the driver keeps
  its own copy of every held request either way.
- **Changes by others** are announced through the callback given to ``open``, so that
  a process learns about a record another one stored.
- **A store whose calls never wait** (the memory store) may say so with a true
  ``answers_at_once`` attribute: the driver then runs its calls on the spot instead of
  as tasks of their own (a call that waits after all still completes, as a task).
- **A store shared by a fleet** of processes (``RedisStore``) says so with a true
  ``shared`` attribute and offers ``adopt_orphans`` (see ``SharedOriginStore``).
- **Outages**: a call that cannot reach the store raises (``StoreUnavailable``); the
  driver retries it until it succeeds, so the origin machines never see the failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from scrapy_rep9309.policy.record import OriginRecord


class StoreUnavailable(ConnectionError):
    """The store cannot be reached now (the call may succeed if tried again later)."""


class HoldWithdrawn(Exception):
    """``hold`` gave the write up before sending it (``withdraw_unwritten`` at close):
    nothing was written, and nothing will be. Not an outage: trying again is wrong."""


class UnencodableRequest(ValueError):
    """``hold`` cannot write this request: its codec cannot serialise it (a callback that
    is not a spider method, a meta value that cannot be pickled). The caller keeps it
    in its own memory; trying again cannot help."""


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A record as the store has it, with the version a compare-and-set checks."""

    record: OriginRecord
    version: int


@dataclass(frozen=True, slots=True)
class HeldRequest:
    """A request held for an origin: its token, its Unix-time deadline and the request."""

    token: Hashable
    deadline: float
    request: Any


class RequestCodec(Protocol):
    """Turns requests into bytes and back (given by the Scrapy integration)."""

    def encode(self, request: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


#: Called with the key of a record someone else changed, or with EVERY_RECORD.
ChangeCallback = Callable[[str], None]
#: The key a store passes to its ChangeCallback when it may have missed changes (its
#: subscription to them was lost for a while): every record in use is read again.
EVERY_RECORD = ""


class OriginStore(Protocol):
    """The interface ``REP9309_STORE`` classes implement (see docs/how-it-works.md, "Stores").

    Keys are origins as strings: ``"https://a.com"``, ``"http://a.com:8080"``.
    """

    @classmethod
    def from_crawler(cls, crawler: Any) -> OriginStore:
        """Build the store from the crawler's settings (and stats, if it counts anything)."""

    async def open(self, codec: RequestCodec, on_change: ChangeCallback) -> None:
        """Connect; raise to stop the crawl at start-up (with a message naming the setting)."""

    async def close(self) -> None:
        """Disconnect; held requests still in the store stay there (for a peer or a resume)."""

    async def load(self, key: str) -> StoredRecord | None:
        """The record of ``key``, or None. An unreadable record is dropped with a WARNING."""

    async def save(self, key: str, record: OriginRecord, expected: int | None) -> int | None:
        """Write ``record`` if the stored version is ``expected`` (None: no record stored).

        Returns the new version, or None when someone else wrote first (nothing written).
        """

    async def acquire_lease(self, key: str, owner: str, ttl: float) -> bool:
        """Take the fetch lease of ``key`` for ``ttl`` seconds unless someone else has it."""

    async def renew_lease(self, key: str, owner: str, ttl: float) -> bool:
        """Extend our lease; False if it was lost (expired and taken)."""

    async def release_lease(self, key: str, owner: str) -> None:
        """Give the lease back (only if ``owner`` still has it)."""

    async def hold(self, key: str, held: HeldRequest) -> None:
        """Keep ``held`` until it is taken; requests of a key keep their order. Raises
        ``UnencodableRequest`` (keeping nothing) if a store that serialises requests
        cannot serialise this one."""

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        """Remove and return the held requests of ``key`` (only ``tokens``, if given)."""


class SharedOriginStore(OriginStore, Protocol):
    """A store several crawl processes share (a fleet): what the driver does differently.

    - Releasing an origin's held requests takes every request held for it, other
      processes' too (``take_held(key)`` without tokens): whichever process gets the
      answer releases them all, into the shared queue (a closing process takes none:
      it could not crawl them, and they stay for the peers). Requests held only in the
      process (held while the record loaded, and released by its answer) go on
      without a store call.
    - A request of an origin the process knows nothing of is not held: it goes to the
      queue and is decided at download time, from the record the store has.
    - When the spider closes, its held requests stay in the store for the others;
      those a store outage kept in the process (``withdraw_unwritten``) do not.
    - Every few seconds the driver adopts the requests held by processes that are gone.
    """

    shared: bool

    async def load_or_lease(
        self, key: str, owner: str, ttl: float
    ) -> tuple[StoredRecord | None, bool | None]:
        """Optional. ``load``, and when no record is stored, ``acquire_lease`` in the same
        call (the lease's answer; None when a record was stored): a new origin's first
        request costs one round trip instead of two. Without it the driver calls the two."""

    async def withdraw_unwritten(self) -> list[Hashable]:
        """The tokens of the held requests ``hold`` kept in the process because the store
        could not be reached, given up: never written after this. At close, the driver
        decides them itself (errback or ``JOBDIR``), as no other process can see them."""

    async def adopt_orphans(self) -> list[tuple[str, HeldRequest]]:
        """Become the holder of the requests held by processes that stopped or died;
        return them with their keys, original deadlines, and tokens the store chose.
        Also those such a process took (``take_held``) and had not handed over."""

    def handed_over(self) -> Awaitable[None]:
        """Optional. Every request ``take_held`` returned so far (read when called, not
        when awaited) is with the engine now (scheduled, or on its way to its errback). A
        store may keep what it took until then, for ``adopt_orphans`` to give to another
        process if this one dies first (killed between the take and the hand-over, it
        would lose them)."""
