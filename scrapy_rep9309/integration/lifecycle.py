"""The life of each origin's robots.txt: fetched once at a time, cached, refreshed, retried.

``RobotsLifecycle`` knows nothing about held requests: the middleware asks it
for a usable record, asks for a fetch when there is none, and is called back
with every answer. Retries after an unreachable answer only happen while the
middleware says requests still wait for that origin.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.python import global_object_name

from scrapy_rep9309.integration.fetch import fetch_robots_txt
from scrapy_rep9309.integration.robotparser import RobotParser
from scrapy_rep9309.integration.timers import Timers
from scrapy_rep9309.policy.fetchresult import FetchResult, failed
from scrapy_rep9309.policy.record import (
    AVAILABLE,
    UNAVAILABLE,
    OriginRecord,
    record_after_fetch,
)
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.storage.memory import LRUCache, MemoryOriginStore, OriginStore

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    from scrapy_rep9309.integration.settings import Rep9309Settings
    from scrapy_rep9309.policy.origin import Origin

logger = logging.getLogger(__name__)

#: Called with each fetch's origin, the record now stored and the raw result.
AnswerCallback = Callable[["Origin", OriginRecord, FetchResult], Awaitable[None]]


class RobotsLifecycle:
    """Per-origin robots.txt records, the fetches that renew them and their backoff timers."""

    def __init__(
        self,
        crawler: Crawler,
        settings: Rep9309Settings,
        *,
        on_answer: AnswerCallback,
        still_wanted: Callable[[Origin], bool],
    ) -> None:
        self.crawler = crawler
        self.settings = settings
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self.store: OriginStore = MemoryOriginStore(
            settings.cache_size, on_evict=self._evicted, keep=self._keep
        )
        self._parsed: LRUCache[str, tuple[float, RobotsTxt]] = LRUCache(settings.cache_size)
        self._on_answer = on_answer
        self._still_wanted = still_wanted
        self._timers = Timers()
        self._fetching: dict[Origin, Deferred[None]] = {}
        # Origins requests wait for (a fetch running or a retry pending), by store
        # key, with the request that lends the fetch its proxy and User-Agent.
        self._triggers: dict[str, Request] = {}
        self._closed = False

    @property
    def busy(self) -> bool:
        """Whether a fetch is running."""
        return bool(self._fetching)

    def usable_record(self, origin: Origin) -> OriginRecord | None:
        """The record requests of ``origin`` can be decided by now, if any."""
        record = self.store.get(str(origin))
        if record is not None and record.is_usable(time.time(), self.settings.stale_ttl):
            return record
        return None

    def last_failure(self, origin: Origin) -> str | None:
        record = self.store.get(str(origin))
        return None if record is None else record.last_failure

    def rules(self, origin: Origin, record: OriginRecord) -> RobotsTxt:
        """The parsed rules of ``record`` (parsed once per fetched body)."""
        key = str(origin)
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == record.fetched_at:
            return cached[1]
        rules = RobotsTxt.parse(record.body, max_size=self.settings.max_size)
        self._parsed.put(key, (record.fetched_at, rules))
        return rules

    def request_fetch(self, origin: Origin, trigger: Request) -> None:
        """Make sure a fetch runs or is scheduled (after a backoff) for ``origin``.

        ``trigger`` lends its ``proxy`` meta and User-Agent header to the fetch.
        """
        self._triggers.setdefault(str(origin), trigger)
        retry_timer = ("retry", origin)
        if origin in self._fetching or self._timers.pending(retry_timer):
            return
        record = self.store.get(str(origin))
        wait = 0.0 if record is None else record.retry_at - time.time()
        if record is not None and record.failures and wait > 0:
            self._timers.schedule(retry_timer, wait, self._retry, origin)
        else:
            self._start(origin)

    def close(self) -> None:
        """Stop: cancel every timer; answers arriving later are dropped."""
        self._closed = True
        self._timers.cancel_all()

    def _retry(self, origin: Origin) -> None:
        """Backoff over: fetch again if requests still wait (else the next one will ask)."""
        if self._still_wanted(origin):
            self._start(origin)
        else:
            self._triggers.pop(str(origin), None)

    def _start(self, origin: Origin) -> None:
        if self._closed or origin in self._fetching:
            return
        record = self.store.get(str(origin))
        if record is not None and record.answered and not record.failures:
            self.stats.inc_value("robotstxt/refreshed")
        fetch = deferred_from_coro(self._fetch(origin, self._triggers.get(str(origin))))
        fetch.addErrback(self._failed, origin)
        if not fetch.called:
            self._fetching[origin] = fetch

    def _failed(self, failure: Failure, origin: Origin) -> None:
        logger.error(
            "Handling the robots.txt of %s failed",
            origin,
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )

    async def _fetch(self, origin: Origin, trigger: Request | None) -> None:
        proxy = trigger.meta.get("proxy") if trigger is not None else None
        user_agent = trigger.headers.get(b"User-Agent") if trigger is not None else None
        try:
            result = await fetch_robots_txt(
                self.crawler, origin, self.settings, proxy=proxy, user_agent=user_agent
            )
        except Exception as exc:  # a bug or an unexpected middleware error: never crawl blind
            logger.exception("Fetching the robots.txt of %s failed", origin)
            error = global_object_name(type(exc))
            result = failed(origin, origin.robots_url, (), error)
        finally:
            self._fetching.pop(origin, None)
        if not self._closed:
            await self._answer(origin, result, trigger)

    async def _answer(self, origin: Origin, result: FetchResult, trigger: Request | None) -> None:
        """Apply ``result``; if that raises, apply an "unreachable" answer instead.

        Parsing, a ``robots_parsed`` receiver or releasing held requests may fail
        (a bug, a pathological body): the origin is then retried with backoff, so
        its held requests are neither stuck until REP9309_DEFER_TIMEOUT nor
        crawled without rules.
        """
        previous = self.store.get(str(origin))
        try:
            await self._apply(origin, previous, result, trigger)
        except Exception as exc:
            self.stats.inc_value("robotstxt/answer_errors")
            logger.exception(
                "Handling the robots.txt answer of %s failed; treated as unreachable", origin
            )
            unreachable = failed(origin, result.final_url, (), global_object_name(type(exc)))
            await self._apply(origin, previous, unreachable, trigger)

    async def _apply(
        self,
        origin: Origin,
        previous: OriginRecord | None,
        result: FetchResult,
        trigger: Request | None,
    ) -> None:
        """Store the outcome, schedule a retry if still needed, and tell the middleware."""
        now = time.time()
        key = str(origin)
        record = record_after_fetch(previous, result, self.settings, now)
        self.store.put(key, record)
        if result.outcome in (AVAILABLE, UNAVAILABLE):
            await self._send_robots_parsed(self.rules(origin, record), trigger)
        if self._closed:
            return
        usable = record.is_usable(now, self.settings.stale_ttl)
        if not usable:  # scheduled first: a failing middleware callback cannot prevent it
            if self._still_wanted(origin):
                self._timers.schedule(("retry", origin), record.retry_at - now, self._retry, origin)
            else:
                self._triggers.pop(key, None)
        await self._on_answer(origin, record, result)
        if usable:
            self._triggers.pop(key, None)

    async def _send_robots_parsed(self, rules: RobotsTxt, trigger: Request | None) -> None:
        signal = getattr(signals, "robots_parsed", None)
        if signal is None:  # Scrapy < 2.18
            return
        await self.crawler.signals.send_catch_log_async(
            signal=signal, robotparser=RobotParser(rules), request=trigger
        )

    def _keep(self, key: str, record: OriginRecord) -> bool:
        """Records the store must not evict yet.

        A record in backoff holds the only memory of when the server may be asked
        again (and how many times it failed); one that requests wait for is the
        "previous copy" its next answer builds on. Evicting either would refetch at
        once and restart the backoff: the failing server would be hammered.
        """
        return record.retry_at > time.time() or key in self._triggers

    def _evicted(self, key: str) -> None:
        self.stats.inc_value("robotstxt/evicted")
        self._parsed.delete(key)
