"""A store whose calls wait out outages, so that the origin machines never see one.

A store call that fails because the store cannot be reached (``StoreUnavailable``,
a connection or timeout error) is tried again after 0.5, 1, 2, then every 5 seconds,
until it succeeds or the spider closes. Meanwhile the effect that needed it simply
has not happened yet: a load, a lease, a release. Requests of origins without a
usable copy in memory therefore stay held (never dropped, never crawled blind),
origins with one keep being decided from memory, and everything resumes when the
store answers again. One ERROR is logged per outage, and one INFO when it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy_rep9309.integration.waiting import sleep, within
from scrapy_rep9309.policy.record import OriginRecord
from scrapy_rep9309.storage.base import StoredRecord, StoreUnavailable

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from scrapy_rep9309.storage.base import (
        ChangeCallback,
        HeldRequest,
        OriginStore,
        RequestCodec,
    )

logger = logging.getLogger(__name__)

#: Seconds between attempts; the last one repeats.
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0)
#: Seconds the store's ``open`` may take: one that has not opened by then stops the
#: crawl, as one that raised does (a network store without a connect timeout).
OPEN_TIMEOUT = 60.0
#: Seconds the store's ``close`` may take before the spider closes without waiting.
CLOSE_TIMEOUT = 30.0
#: Stat counting store calls that failed (each attempt).
ERRORS_STAT = "robotstxt/store/errors"
_OUTAGES = (StoreUnavailable, ConnectionError, TimeoutError)
_T = TypeVar("_T")


class PatientStore:
    """Wraps the crawl's store for the driver; the middleware keeps the store itself."""

    def __init__(self, store: OriginStore, stats: StatsCollector) -> None:
        self.inner = store
        self._stats = stats
        self._down = False
        self._closed = False
        self._opened = False
        #: Store methods whose bug (``_unless_buggy``) was logged already.
        self._bugs_logged: set[str] = set()

    @property
    def shared(self) -> bool:
        """Whether other processes use the same store (see ``SharedOriginStore``)."""
        return bool(getattr(self.inner, "shared", False))

    @property
    def keeps_held_requests(self) -> bool:
        """Whether the store wants a copy of held requests (the memory store does not)."""
        return bool(getattr(self.inner, "keeps_held_requests", True))

    @property
    def answers_at_once(self) -> bool:
        """Whether the store's calls complete without waiting (the memory store's)."""
        return bool(getattr(self.inner, "answers_at_once", False))

    async def open(self, codec: RequestCodec, on_change: ChangeCallback) -> None:
        """Open the store, OPEN_TIMEOUT seconds at most: raises what its ``open`` raised,
        or TimeoutError. A store that did not open is not used, nor closed."""
        try:
            await within(lambda: self.inner.open(codec, on_change), OPEN_TIMEOUT)
        except Exception:
            self._closed = True
            raise
        self._opened = True
        if self._closed:  # the spider closed while the store opened: close it now
            self._closed = False
            await self.close()

    async def close(self) -> None:
        """Calls still waiting for the store give up (with a neutral answer); the store
        closes, CLOSE_TIMEOUT seconds at most (the spider's close must not hang on it)."""
        self._closed = True
        if not self._opened:
            return  # not opened (yet: ``open`` closes it when it returns)
        self._opened = False
        try:
            await within(self.inner.close, CLOSE_TIMEOUT)
        except TimeoutError:
            logger.warning(
                "The robots.txt store %r did not close within %g s: the spider closes "
                "without waiting for it",
                self.inner,
                CLOSE_TIMEOUT,
            )

    async def load(self, key: str) -> StoredRecord | None:
        return await self._patiently(lambda: self._load(key), None)

    async def try_load(self, key: str) -> StoredRecord | None:
        """One attempt, None if the store cannot be reached (never waits an outage out)."""
        try:
            stored = await self._load(key)
        except _OUTAGES as exc:
            self._failed(exc)
            return None
        self._answered()
        return stored

    async def _load(self, key: str) -> StoredRecord | None:
        return await self._unless_buggy(
            "load", lambda: self.inner.load(key), _is_stored_or_none, None, "no record stored"
        )

    async def load_or_lease(
        self, key: str, owner: str, ttl: float
    ) -> tuple[StoredRecord | None, bool | None]:
        """The store's ``load_or_lease`` (the Redis store's: the record, or when there is
        none the fetch lease, in one call); a plain ``load`` for a store without it."""
        load_or_lease = getattr(self.inner, "load_or_lease", None)
        if load_or_lease is None:
            return await self.load(key), None
        return await self._patiently(
            lambda: self._unless_buggy(
                "load_or_lease",
                lambda: load_or_lease(key, owner, ttl),
                _is_load_or_lease_answer,
                (None, None),
                "no record stored, the lease still to ask for",
            ),
            (None, None),
        )

    async def save(self, key: str, record: OriginRecord, expected: int | None) -> int | None:
        return await self._patiently(lambda: self.inner.save(key, record, expected), None)

    async def acquire_lease(self, key: str, owner: str, ttl: float) -> bool:
        return await self._patiently(
            lambda: self._unless_buggy(
                "acquire_lease",
                lambda: self.inner.acquire_lease(key, owner, ttl),
                _is_bool,
                True,
                "the lease granted",
            ),
            False,
        )

    async def renew_lease(self, key: str, owner: str, ttl: float) -> bool:
        return await self._patiently(lambda: self.inner.renew_lease(key, owner, ttl), False)

    async def release_lease(self, key: str, owner: str) -> None:
        await self._patiently(lambda: self.inner.release_lease(key, owner), None)

    async def hold(self, key: str, held: HeldRequest) -> None:
        # A store may keep a hold in the process while it is down (the Redis store
        # does): its success says nothing about the outage being over.
        await self._patiently(lambda: self.inner.hold(key, held), None, proves_up=False)

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        return await self._patiently(lambda: self.inner.take_held(key, tokens), [])

    async def withdraw_unwritten(self) -> list[Hashable]:
        # Local: what the store kept in the process, no call that an outage could fail.
        withdraw = getattr(self.inner, "withdraw_unwritten", None)
        return [] if withdraw is None else await withdraw()

    def handed_over(self) -> Awaitable[None]:
        """Called as the store's own (it reads which takes when called), not waited out:
        the store tries a failed drop again itself."""
        handed_over = getattr(self.inner, "handed_over", None)
        return _done() if handed_over is None else handed_over()

    async def adopt_orphans(self) -> list[tuple[str, HeldRequest]]:
        adopt = getattr(self.inner, "adopt_orphans", None)
        if adopt is None:
            return []
        return await self._patiently(adopt, [])

    async def _patiently(
        self, call: Callable[[], Awaitable[_T]], closed: _T, *, proves_up: bool = True
    ) -> _T:
        """``call()`` until it succeeds; ``closed`` once the spider closed."""
        attempt = 0
        while not self._closed:
            try:
                result = await call()
            except _OUTAGES as exc:
                if self._closed:
                    break
                self._failed(exc)
                await sleep(RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)])
                attempt += 1
                continue
            if proves_up:
                self._answered()
            return result
        return closed

    async def _unless_buggy(
        self,
        name: str,
        call: Callable[[], Awaitable[_T]],
        valid: Callable[[Any], bool],
        neutral: _T,
        meaning: str,
    ) -> _T:
        """``await call()``, unless the store has a bug there: an exception that is not an
        outage's, or an answer of the wrong type, is answered ``neutral`` (one ERROR per
        method). For an origin's first look both mean "fetch robots.txt yourself": safe,
        where waiting for an answer that never comes left the origin's requests held
        until they expired. (A look for a peer's newer record keeps the copy it has.)"""
        try:
            answer = await call()
        except _OUTAGES:
            raise
        except Exception as exc:
            self._buggy(name, f"{type(exc).__name__}: {exc}", meaning, exc)
            return neutral
        if not valid(answer):
            self._buggy(name, f"it returned {answer!r}", meaning, None)
            return neutral
        return answer

    def _buggy(self, name: str, what: str, meaning: str, exc: Exception | None) -> None:
        self._stats.inc_value(ERRORS_STAT)
        if name in self._bugs_logged:
            logger.debug("REP9309_STORE %r: %s() failed again (%s)", self.inner, name, what)
            return
        self._bugs_logged.add(name)
        logger.error(
            "REP9309_STORE %r: %s() failed (%s), a bug in the store; taken as %s "
            "(logged once per method)",
            self.inner,
            name,
            what,
            meaning,
            exc_info=exc,
        )

    def _failed(self, exc: BaseException) -> None:
        self._stats.inc_value(ERRORS_STAT)
        if self._down:
            logger.debug("robots.txt store still unavailable: %s", exc)
            return
        self._down = True
        logger.error(
            "The robots.txt store %r is unavailable (%s): requests of origins without a "
            "usable robots.txt in this process are held, and the store is tried again "
            "every few seconds",
            self.inner,
            exc,
        )

    def _answered(self) -> None:
        if self._down:
            self._down = False
            logger.info("The robots.txt store %r answers again", self.inner)

    def __repr__(self) -> str:
        return f"<PatientStore {self.inner!r}>"


async def _done() -> None:
    """Nothing to wait for."""


def _is_stored_or_none(answer: Any) -> bool:
    return answer is None or (
        isinstance(answer, StoredRecord) and isinstance(answer.record, OriginRecord)
    )


def _is_load_or_lease_answer(answer: Any) -> bool:
    return (
        isinstance(answer, tuple)
        and len(answer) == 2
        and _is_stored_or_none(answer[0])
        and (answer[1] is None or isinstance(answer[1], bool))
    )


def _is_bool(answer: Any) -> bool:
    return isinstance(answer, bool)
