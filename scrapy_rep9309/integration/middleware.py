"""RobotsTxtMiddleware: decide every request by its origin's robots.txt (RFC 9309).

Requests whose origin's robots.txt is not known yet are taken out of the
engine's flow in the ``request_scheduled`` signal (held in ``HeldRequests``),
so they never occupy the downloader while waiting; they are handed back to the
engine once the fetch answers. Requests of known origins are decided in
``process_request``. The README section "How it works" describes the flow.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_rep9309.integration.crawlagent import crawl_user_agent
from scrapy_rep9309.integration.crawldelay import raise_slot_delay
from scrapy_rep9309.integration.lifecycle import RobotsLifecycle
from scrapy_rep9309.integration.settings import Rep9309Settings, check_builtin_disabled
from scrapy_rep9309.integration.timers import Timers
from scrapy_rep9309.policy.holding import HeldRequests
from scrapy_rep9309.policy.origin import Origin, origin_of_netloc
from scrapy_rep9309.policy.record import AVAILABLE, UNREACHABLE, OriginRecord
from scrapy_rep9309.policy.report import OriginReport, summary_line

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from typing_extensions import Self  # typing.Self requires Python 3.11

    from scrapy_rep9309.policy.fetchresult import FetchResult

logger = logging.getLogger(__name__)

#: Set on every request that went through the scheduler (survives JOBDIR queues).
SCHEDULED_META = "rep9309_scheduled"
#: On a copy re-scheduled because its origin became unknown after scheduling: how many times.
REQUEUED_META = "rep9309_requeued"
#: A copy is decided by the robots.txt it was held for (or let through with), so in
#: memory it comes back once at most; a disk queue (JOBDIR) loses that link, and then
#: this many trips back at most, before it waits in ``process_request`` instead.
MAX_REQUEUES = 3
#: Reason why a held request waited too long; ``process_request`` ignores it with that reason.
EXPIRED_META = "rep9309_expired"
FORBIDDEN_MESSAGE = "Forbidden by robots.txt"
_SCHEMES = ("http", "https")
_EXPIRY_TIMER = "expiry"
#: OriginReport counter -> the crawl stat counting the same requests.
_STATS = {
    "forbidden": "robotstxt/forbidden",
    "deferred": "robotstxt/deferred",
    "released": "robotstxt/deferred/released",
    "expired": "robotstxt/deferred/expired",
    "closed": "robotstxt/deferred/closed",
}
WAIT_POLL_INTERVAL = 1.0


class RobotsTxtMiddleware:
    """Obey robots.txt per origin, holding requests outside the downloader while it is unknown."""

    def __init__(self, crawler: Crawler, settings: Rep9309Settings) -> None:
        self.crawler = crawler
        self.settings = settings
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self.lifecycle = RobotsLifecycle(
            crawler, settings, on_answer=self._answered, still_wanted=self._waiting
        )
        self._held = HeldRequests()
        self._timers = Timers()
        self._waiters: dict[Origin, list[Deferred[None]]] = {}
        # Requests handed back after a fetch, with the record they waited for:
        # they are decided by it while it is valid, even if it was evicted meanwhile
        # (with a small REP9309_CACHE_SIZE, origins would otherwise evict each
        # other's rules before their requests reach the downloader, forever).
        self._released: weakref.WeakKeyDictionary[Request, OriginRecord] = (
            weakref.WeakKeyDictionary()
        )
        self._reports: dict[Origin, OriginReport] = {}
        self._offsite: list[OffsiteMiddleware] = []
        self._default_user_agent = str(crawler.settings.get("USER_AGENT") or "")
        self._closed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = Rep9309Settings.from_settings(crawler.settings)
        check_builtin_disabled(crawler.settings)
        middleware = cls(crawler, settings)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(middleware.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    # -- signals ---------------------------------------------------------------

    def spider_opened(self, spider: Spider) -> None:
        self._default_user_agent = crawl_user_agent(self.crawler.settings, spider)
        engine = self.crawler.engine
        if engine is not None:
            self._offsite = [
                mw
                for mw in engine.downloader.middleware.middlewares
                if isinstance(mw, OffsiteMiddleware)
            ]

    def request_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """Hold the request (raising IgnoreRequest keeps it out of the scheduler) if its
        origin's robots.txt is not known; let it through otherwise."""
        if self._closed or _skipped(request) or request.meta.get(EXPIRED_META):
            return
        origin = _origin_key(request)
        if origin is None:  # counted in process_request
            return
        request.meta[SCHEDULED_META] = True
        record = self.lifecycle.usable_record(origin)
        if record is not None:
            if request.meta.get(REQUEUED_META):
                self._released.setdefault(request, record)
            return
        if request in self._released:
            return
        if self._dropped_as_offsite(request):
            return
        self._hold(origin, request)
        raise IgnoreRequest(f"Held until the robots.txt of {origin} is known")

    def spider_idle(self, spider: Spider | None = None) -> None:
        if len(self._held) or self.lifecycle.busy:
            raise DontCloseSpider

    async def spider_closed(self, spider: Spider | None = None, reason: str = "") -> None:
        self._closed = True
        self.lifecycle.close()
        self._timers.cancel_all()
        for waiters in self._waiters.values():
            for waiter in waiters:
                _fire(waiter)
        self._waiters.clear()
        for entry in self._held.drain():
            self._count(entry.origin, "closed")
            await _call_errback(entry.request, IgnoreRequest(_closing_reason(entry.origin)))
        logger.info(summary_line(self._reports.values(), self.stats.get_stats()))

    # -- downloader middleware ------------------------------------------------

    async def process_request(
        self, request: Request, spider: Spider | None = None
    ) -> Request | None:
        if _skipped(request):
            return None
        expired = request.meta.get(EXPIRED_META)
        if expired:
            raise IgnoreRequest(expired)
        origin = self._origin_of(request)
        if origin is None:
            return None
        record = self._released.pop(request, None)
        if record is not None and not request.meta.get(REQUEUED_META):
            # Expired while queued: the current robots.txt decides (a requeued copy
            # keeps the one it came back for, so it never bounces twice).
            if not record.is_usable(time.time(), self.settings.stale_ttl):
                record = None
        if record is None:
            record = self.lifecycle.usable_record(origin)
        if record is None:
            if request.meta.get(SCHEDULED_META) and _requeues(request) < MAX_REQUEUES:
                return self._requeue(request)
            record = await self._wait_for_record(origin, request)
        self._decide(origin, record, request)
        return None

    def origin_reports(self) -> list[OriginReport]:
        """Per-origin outcome and counters so far, sorted by origin."""
        return sorted(
            (dataclasses.replace(report) for report in self._reports.values()),
            key=lambda report: report.origin,
        )

    # -- decisions --------------------------------------------------------------

    def _decide(self, origin: Origin, record: OriginRecord, request: Request) -> None:
        if record.outcome != AVAILABLE:
            return
        rules = self.lifecycle.rules(origin, record)
        user_agent = self._user_agent(request)
        if not rules.allowed(request.url, user_agent):
            # The same decision again, with its reason: only forbidden requests pay for it.
            decision = rules.explain(request.url, user_agent)
            self._count(origin, "forbidden")
            logger.debug(
                "Forbidden by robots.txt: %(request)s (%(rule)s, line %(line)s of %(robots)s)",
                {
                    "request": request,
                    "rule": decision.rule,
                    "line": decision.line,
                    "robots": origin.robots_url,
                },
                extra={"spider": self.crawler.spider},
            )
            raise IgnoreRequest(FORBIDDEN_MESSAGE)
        if self.settings.crawl_delay:
            delay = rules.crawl_delay(user_agent)
            engine = self.crawler.engine
            if delay and engine is not None:
                raise_slot_delay(
                    engine.downloader, request, min(delay, self.settings.crawl_delay_max)
                )

    def _user_agent(self, request: Request) -> str:
        """ROBOTSTXT_USER_AGENT, else the request's own header, else the crawl's."""
        if self.settings.user_agent:
            return self.settings.user_agent
        header = request.headers.get(b"User-Agent")
        if header:
            return header.decode("latin-1")
        return self._default_user_agent

    def _origin_of(self, request: Request) -> Origin | None:
        origin = _origin_key(request)
        if origin is None:
            self.stats.inc_value("robotstxt/invalid_origin")
        return origin

    def _dropped_as_offsite(self, request: Request) -> bool:
        """Whether OffsiteMiddleware drops this request in the same signal (no fetch for it)."""
        if not self._offsite or request.dont_filter or request.meta.get("allow_offsite"):
            return False
        spider = self.crawler.spider
        return any(not mw.should_follow(request, spider) for mw in self._offsite)

    # -- holding ------------------------------------------------------------------

    def _hold(self, origin: Origin, request: Request) -> None:
        deadline = time.monotonic() + self.settings.defer_timeout
        self._held.hold(origin, request, deadline)
        self._count(origin, "deferred")
        self.lifecycle.request_fetch(origin, request)
        if not self._timers.pending(_EXPIRY_TIMER):
            self._timers.schedule(_EXPIRY_TIMER, self.settings.defer_timeout, self._expire)

    def _requeue(self, request: Request) -> Request:
        """A copy for the engine to schedule again, so that it is held, not waited for here."""
        self.stats.inc_value("robotstxt/requeued")
        copy = request.replace(dont_filter=True)
        copy.meta[REQUEUED_META] = _requeues(request) + 1
        return copy

    def _release(self, origin: Origin, record: OriginRecord) -> None:
        engine = self.crawler.engine
        assert engine is not None
        if _engine_closing(self.crawler):
            return  # a closing engine drops new requests silently; spider_closed errbacks them
        for entry in self._held.release(origin):
            self._count(origin, "released")
            self._released[entry.request] = record
            try:
                engine.crawl(entry.request)
            except Exception:  # e.g. a custom scheduler or dupefilter: the others still go
                logger.exception("Scheduling the released request %s failed", entry.request)

    def _expire(self) -> None:
        """Send requests held REP9309_DEFER_TIMEOUT to their errback (via process_request)."""
        engine = self.crawler.engine
        assert engine is not None
        if _engine_closing(self.crawler):
            return  # left held: spider_closed hands them to their errback
        for entry in self._held.expire(time.monotonic()):
            self._count(entry.origin, "expired")
            copy = entry.request.replace(dont_filter=True)
            copy.meta[EXPIRED_META] = self._expiry_reason(entry.origin)
            engine.crawl(copy)
        deadline = self._held.next_deadline()
        if deadline is not None:
            self._timers.schedule(_EXPIRY_TIMER, deadline - time.monotonic(), self._expire)

    def _expiry_reason(self, origin: Origin) -> str:
        failure = self.lifecycle.last_failure(origin)
        if failure:
            why = f"{UNREACHABLE}: {failure}"
        else:
            why = "no answer yet"
        return (
            f"robots.txt of {origin} still unknown after {self.settings.defer_timeout:g} s ({why})"
        )

    async def _wait_for_record(self, origin: Origin, request: Request) -> OriginRecord:
        """For requests never scheduled (``engine.download_async``): wait here instead.

        Such a request sits in the engine's in-progress set, which the engine waits
        to empty before it closes the spider: wake up every WAIT_POLL_INTERVAL
        seconds to give up if the spider is closing.
        """
        deadline = time.monotonic() + self.settings.defer_timeout
        self._count(origin, "deferred")
        while True:
            record = self.lifecycle.usable_record(origin)
            if record is not None:
                self._count(origin, "released")
                return record
            if self._closed or _engine_closing(self.crawler):
                self._count(origin, "closed")
                raise IgnoreRequest(_closing_reason(origin))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._count(origin, "expired")
                raise IgnoreRequest(self._expiry_reason(origin))
            self.lifecycle.request_fetch(origin, request)
            waiter: Deferred[None] = Deferred()
            self._waiters.setdefault(origin, []).append(waiter)
            timer = ("wait", id(waiter))
            self._timers.schedule(timer, min(remaining, WAIT_POLL_INTERVAL), _fire, waiter)
            await maybe_deferred_to_future(waiter)
            self._timers.cancel(timer)
            waiters = self._waiters.get(origin)
            if waiters and waiter in waiters:
                waiters.remove(waiter)

    # -- answers ------------------------------------------------------------------------

    def _waiting(self, origin: Origin) -> bool:
        return bool(self._held.count(origin) or self._waiters.get(origin))

    async def _answered(self, origin: Origin, record: OriginRecord, result: FetchResult) -> None:
        """A fetch ended: report it, release held requests if it is usable, wake waiters."""
        report = self._report(origin)
        report.outcome = record.outcome
        report.status = result.status
        now = time.time()
        self._log_outcome(origin, result, record, now)
        if record.is_usable(now, self.settings.stale_ttl):
            self._release(origin, record)
        for waiter in self._waiters.pop(origin, []):
            _fire(waiter)

    def _log_outcome(
        self, origin: Origin, result: FetchResult, record: OriginRecord, now: float
    ) -> None:
        held = self._held.count(origin)
        if result.outcome != UNREACHABLE:
            logger.debug(
                "robots.txt of %s: %s (HTTP %s%s)",
                origin,
                result.outcome,
                result.status,
                f", {len(result.redirects)} redirects" if result.redirects else "",
            )
        elif record.answered:
            logger.info(
                "robots.txt of %s unreachable (%s); using the copy fetched %.0f s ago, "
                "next attempt in %.1f s",
                origin,
                record.last_failure,
                now - record.fetched_at,
                record.retry_at - now,
            )
        else:
            logger.info(
                "robots.txt of %s unreachable (%s): %d requests held, next attempt in %.1f s",
                origin,
                record.last_failure,
                held,
                record.retry_at - now,
            )

    # -- bookkeeping ------------------------------------------------------------------

    def _report(self, origin: Origin) -> OriginReport:
        report = self._reports.get(origin)
        if report is None:
            report = self._reports[origin] = OriginReport(str(origin))
        return report

    def _count(self, origin: Origin, counter: str) -> None:
        """Count one request in the crawl stats and in its origin's report alike, so the
        two always agree (``deferred == released + expired + closed`` in both)."""
        self.stats.inc_value(_STATS[counter])
        report = self._report(origin)
        setattr(report, counter, getattr(report, counter) + 1)


def _skipped(request: Request) -> bool:
    """Requests this middleware never decides: opted out, or not http(s)."""
    if request.meta.get("dont_obey_robotstxt"):
        return True
    scheme = request.url.split(":", 1)[0].lower()
    return scheme not in _SCHEMES


def _requeues(request: Request) -> int:
    return int(request.meta.get(REQUEUED_META) or 0)


def _closing_reason(origin: Origin) -> str:
    return f"Spider closed before the robots.txt of {origin} was known"


def _origin_key(request: Request) -> Origin | None:
    parts = urlparse_cached(request)
    return origin_of_netloc(parts.scheme, parts.netloc)


def _engine_closing(crawler: Crawler) -> bool:
    """Whether the engine started closing the spider.

    No public API tells; ``ExecutionEngine._slot.closing`` is set from the start of
    ``close_spider_async`` until the end. If it is ever renamed, this says "no",
    which only loses the early give-up, never a decision.
    """
    slot = getattr(crawler.engine, "_slot", None)
    return getattr(slot, "closing", None) is not None


def _fire(waiter: Deferred[None]) -> None:
    if not waiter.called:
        waiter.callback(None)


async def _call_errback(request: Request, exception: Exception) -> None:
    """Hand ``exception`` to the request's errback the way Scrapy would, output discarded.

    Used when the spider closes with requests still held: the engine no longer
    accepts new requests or items then, so whatever the errback yields is dropped.
    """
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
        logger.exception("Errback of %s failed while the spider was closing", request)
