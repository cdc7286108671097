"""RobotsTxtMiddleware: decide every request by its origin's robots.txt (RFC 9309).

This module only translates Scrapy's signals and middleware hooks: a request whose
origin has no usable copy is handed to the driver to be held (``request_scheduled``,
so it never occupies the downloader while waiting); every request about to be
downloaded is decided by the newest usable copy (``process_request``). What happens
per origin (fetches, retries, releases) is the origin state machine's business
(``policy/machine.py``), carried out by ``driver.py``. docs/how-it-works.md.

A request it lets through carries its URL's usage preferences (``rep9309_content_usage``),
which ``process_response`` combines with the response's ``Content-Usage`` header.
docs/usage-preferences.md.

A spider's own request for an origin's ``/robots.txt`` (a ``SitemapSpider`` reading
sitemaps from it) is held and decided like any other, then answered from the copy that
decided it instead of being downloaded a second time (docs/behaviour.md, "A spider's own
robots.txt request").
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import Request, signals
from scrapy.core.engine import ExecutionEngine
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import CloseSpider, DontCloseSpider, IgnoreRequest
from scrapy.responsetypes import responsetypes
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.python import global_object_name
from twisted.python.failure import Failure

from scrapy_rep9309.integration.accounting import Accounting
from scrapy_rep9309.integration.crawlagent import as_text, crawl_user_agent_source
from scrapy_rep9309.integration.crawldelay import CrawlDelayKeeper
from scrapy_rep9309.integration.driver import (
    CONTENT_USAGE_META,
    EXPIRED_META,
    SENDING_META,
    ClosedWhileWaiting,
    Leftover,
    OriginDriver,
    call_errback,
    closed_before,
    closing_reason,
    engine_closing,
    log_given_up,
)
from scrapy_rep9309.integration.fetch import live_download
from scrapy_rep9309.integration.jobdir import (
    JobState,
    SavedRequest,
    discard_state,
    read_state,
    write_state,
)
from scrapy_rep9309.integration.lastlook import install as install_last_look
from scrapy_rep9309.integration.requestcodec import RequestCodec
from scrapy_rep9309.integration.resilience import PatientStore
from scrapy_rep9309.integration.settings import (
    Rep9309Settings,
    SettingsError,
    check_builtin_disabled,
)
from scrapy_rep9309.integration.startup import log_parser_implementation
from scrapy_rep9309.integration.timers import call_later, call_soon
from scrapy_rep9309.policy.decision import explain, is_allowed, refused, usage_preferences
from scrapy_rep9309.policy.origin import Origin, origin_of_netloc
from scrapy_rep9309.policy.record import AVAILABLE, within_limits
from scrapy_rep9309.rules.matcher import is_robots_txt
from scrapy_rep9309.rules.usage import combine_statements, header_preferences
from scrapy_rep9309.rules.useragent import token_problem

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self  # typing.Self requires Python 3.11

    from scrapy_rep9309.integration.lastlook import ResponseLook
    from scrapy_rep9309.policy.record import OriginRecord
    from scrapy_rep9309.policy.report import OriginReport
    from scrapy_rep9309.rules.robotstxt import Decision
    from scrapy_rep9309.rules.usage import Preference
    from scrapy_rep9309.storage.base import OriginStore

logger = logging.getLogger(__name__)

#: Set on every request that went through the scheduler (survives JOBDIR queues).
SCHEDULED_META = "rep9309_scheduled"
#: On a copy re-scheduled because its origin had no usable copy at download time: how many times.
REQUEUED_META = "rep9309_requeued"
#: Trips back to be held at most, for each of the two reasons (expired in the scheduler:
#: then the request waits in ``process_request``; expired in its download slot's queue:
#: then the newest copy decides it, ``_last_look``).
MAX_REQUEUES = 3
#: Seconds since its fetch within which the newest copy decides a request sent back
#: MAX_REQUEUES times by the last look, past its lifetime: RFC 9309 2.4's bound on the
#: use of a cached copy (a day). Each trip fetched a fresh copy, so it is seconds old.
LAST_LOOK_MAX_AGE = 86400.0
#: How many of a request's trips back (REQUEUED_META) the last look sent it on.
LAST_LOOK_TRIPS_META = "_rep9309_last_look_trips"
#: The URL whose trips the two counters above count: a request that carries them with
#: another URL (a redirect, a request yielded with its parent's meta) has made none.
TRIPS_OF_META = "_rep9309_trips_of"
#: The request's own ``dont_filter`` before its first trip back: the copy sent back has
#: True (the duplicate filter has seen it already), and gets its own back once it is let
#: through, so that what it leads to (a redirect inherits the flag) is filtered as before.
DONT_FILTER_META = "_rep9309_dont_filter"
#: On every request this middleware lets through: the ``fetched_at`` of the robots.txt
#: copy that decided it, so that the last look before sending (``integration/lastlook.py``)
#: knows whether a newer copy has come since.
DECIDED_META = "rep9309_decided_at"
#: With it: until when that copy may decide (Unix time), for the last look at a request
#: whose origin was evicted from memory meanwhile (nothing newer is known then).
DECIDED_UNTIL_META = "_rep9309_decided_until"
#: On a request sent with ``engine.download_async`` (never scheduled) while it is in the
#: downloader: sent back by the last look as the spider closes, it ends there.
DIRECT_META = "_rep9309_direct"
#: In ``response.flags`` of a spider's own robots.txt request answered from the copy
#: this middleware fetched (no download): docs/behaviour.md.
ROBOTS_COPY_FLAG = "rep9309-robots-copy"
ROBOTS_COPY_STAT = "robotstxt/robots_copy_served"
#: On a spider's robots.txt request answered from a copy: the ``dont_cache`` it carries
#: is this middleware's, taken off with this key once the HTTP cache has let it by.
UNCACHED_COPY_META = "_rep9309_uncached_copy"
#: Spider requests for robots.txt downloaded after all: the copy cannot stand in for a
#: download (cut at REP9309_MAX_SIZE, a redirect not followed, refused locally).
ROBOTS_COPY_DOWNLOADED_STAT = "robotstxt/robots_copy_downloaded"
#: Whether CloseSpider raised in ``spider_opened`` closes the spider (the engine's
#: ``open_spider_async``, Scrapy >= 2.14; 2.13 logs it as an error and goes on).
_HONOURS_CLOSE_SPIDER_WHILE_OPENING = hasattr(ExecutionEngine, "open_spider_async")
#: The spider's close reason when the store (REP9309_STORE) could not be opened.
STORE_NOT_OPENED_REASON = "robotstxt_store_not_opened"
FORBIDDEN_MESSAGE = "Forbidden by robots.txt"
USAGE_REFUSED_MESSAGE = "Usage refused by robots.txt"
#: The reason of an http(s) request whose host cannot have a robots.txt (not a host name).
INVALID_HOST_MESSAGE = "Invalid host: no robots.txt can be fetched for it"
_SCHEMES = ("http", "https")
_ROBOTS_TXT_END = "/robots.txt"
#: Scrapy's own offsite policy: it follows every host while ``allowed_domains`` is empty.
_STOCK_OFFSITE_POLICY = (OffsiteMiddleware.should_follow, OffsiteMiddleware.get_host_regex)
#: ``request_scheduled``'s answer for a held request. The engine only checks that it is an
#: IgnoreRequest failure and drops it, so one failure serves them all: a held request
#: then costs no new objects for the garbage collector to track (docs/benchmarks.md,
#: "Holding, per request").
_HELD = Failure(IgnoreRequest("Held until the origin's robots.txt is known"))


class RobotsTxtMiddleware:
    """Obey robots.txt per origin, holding requests outside the downloader while it is unknown."""

    def __init__(self, crawler: Crawler, settings: Rep9309Settings) -> None:
        self.crawler = crawler
        self.settings = settings
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.accounting = Accounting(crawler.stats, settings.cache_size, self._known)
        self.store = _build_store(settings.store, crawler)
        # The driver's store calls wait out outages (docs/fleet.md), until it is closed.
        self._patient_store = PatientStore(self.store, crawler.stats)
        self.driver = OriginDriver(crawler, settings, self._patient_store, self.accounting)
        #: The crawl's offsite middlewares, each with whether its policy is Scrapy's own.
        self._offsite: list[tuple[OffsiteMiddleware, bool]] = []
        self._default_user_agent = as_text(crawler.settings.get("USER_AGENT") or "")
        self._jobdir: str | None = crawler.settings.get("JOBDIR") or None
        self._codec = RequestCodec(None)
        self._crawl_delay_keeper: CrawlDelayKeeper | None = None
        self._closed = False
        #: The JOBDIR state of the paused run until ``_resume`` holds its requests again:
        #: a close before (the store slow to open, or not opening) saves it again.
        self._unresumed: JobState | None = None
        #: From this middleware's spider_idle receiver to the next turn of the event loop.
        self._in_idle_pass = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = Rep9309Settings.from_settings(crawler.settings)
        check_builtin_disabled(crawler.settings)
        log_parser_implementation()
        middleware = cls(crawler, settings)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(middleware.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    # -- signals ---------------------------------------------------------------

    async def spider_opened(self, spider: Spider) -> None:
        self._default_user_agent, source = crawl_user_agent_source(self.crawler.settings, spider)
        self._warn_about_user_agents(source)
        engine = self.crawler.engine
        if engine is not None:
            self._offsite = [
                (mw, (type(mw).should_follow, type(mw).get_host_regex) == _STOCK_OFFSITE_POLICY)
                for mw in engine.downloader.middleware.middlewares
                if isinstance(mw, OffsiteMiddleware)
            ]
            install_last_look(engine.downloader, self._last_look, replace=True)
        self._codec = RequestCodec(spider)
        if self._jobdir:
            # Read before the store opens: until it is resumed, a close saves it again.
            self._unresumed = read_state(self._jobdir)
        not_opened: Exception | None = None
        try:
            await self._patient_store.open(self._codec, self._changed_elsewhere)
        except Exception as exc:
            not_opened = exc
        if self._closed:  # the spider closed while the store opened (it is closed again)
            return
        if not_opened is not None:
            self._stop_without_store(not_opened)
            return
        if self._unresumed is not None:
            await self._resume(self._unresumed)
        self.driver.start_orphan_sweep()

    def _stop_without_store(self, exc: Exception) -> None:
        """The store did not open (raised, or no answer within OPEN_TIMEOUT): the crawl
        stops, its requests held until then ending "closed", rather than going on with
        every origin unknown until REP9309_DEFER_TIMEOUT. CloseSpider from
        ``spider_opened`` closes it before it starts where Scrapy honours that
        (``_HONOURS_CLOSE_SPIDER_WHILE_OPENING``); elsewhere (2.13 logs it and goes
        on) it is closed once it runs. A JOBDIR
        state is not resumed (its records would go through the store) but saved again
        at the close, with the requests this run held, for a run whose store opens
        (``_unresumed``)."""
        logger.error(
            "REP9309_STORE: the robots.txt store %s could not be opened (%s: %s); the "
            "spider closes (%s)",
            global_object_name(type(self.store)),
            global_object_name(type(exc)),
            exc,
            STORE_NOT_OPENED_REASON,
            exc_info=exc,
        )
        close_once_running(self.crawler, STORE_NOT_OPENED_REASON)
        if _HONOURS_CLOSE_SPIDER_WHILE_OPENING:
            raise CloseSpider(STORE_NOT_OPENED_REASON)

    def request_scheduled(
        self, request: Request, spider: Spider | None = None, **signal_arguments: Any
    ) -> Failure | None:
        """Hold the request if its origin has no usable copy (the IgnoreRequest failure
        returned keeps it out of the scheduler); let it through otherwise.

        The failure is returned, not raised: the engine drops the request on either, but
        a raised one leaves the dispatcher holding its traceback, a reference cycle through
        the dispatcher's frame for every held request that only the cyclic garbage
        collector frees (8% more CPU per page on a crawl that held every request,
        docs/benchmarks.md, "Garbage").

        ``**signal_arguments`` takes the dispatcher's ``signal`` and ``sender``: a receiver
        that accepts any keyword spares the dispatcher sorting out which it accepts, on
        every request of the crawl."""
        if self._closed:
            return None
        left_for_close = self.driver.left_for_close
        if left_for_close and request in left_for_close:
            return _HELD  # a leftover of the close already (``process_request``)
        meta = request.meta
        if meta.get("dont_obey_robotstxt") or meta.get(EXPIRED_META):
            return None
        origin = _origin_key(request)
        if origin is None:  # not http(s): never decided; an invalid one: process_request
            return None
        meta[SCHEDULED_META] = True
        driver = self.driver
        record = driver.usable(origin)
        if record is not None:
            if meta.get(REQUEUED_META) and _requeues(request):  # most carry no counter
                driver.released.setdefault(request, record)
            return None
        if request in driver.released or self._dropped_as_offsite(request):
            return None
        if driver.shared and not _requeues(request) and driver.unknown(origin):
            # Fleet: an origin this process knows nothing of goes to the shared queue and
            # is decided at download time (``peek``): a peer may have its record already,
            # and a queue that is not empty keeps the engine from taking in every start
            # URL while the first records load (each held, then released in a burst).
            return None
        if self._in_idle_pass:  # a later spider_idle receiver crawls it (``spider_idle``)
            return None
        driver.hold(origin, request)
        return _HELD

    def spider_idle(self, spider: Spider | None = None) -> None:
        """Stay open while requests are held; close with REP9309_ALL_FORBIDDEN_CLOSE_REASON
        (when set) if robots.txt let no request through.

        A receiver of the same signal that runs after this one may crawl more requests
        (the usual "crawl more when idle" pattern): one held then would leave the engine
        idle when it looks right after the signal, and the spider would close under it.
        Until the next turn of the event loop, ``request_scheduled`` lets such requests
        into the scheduler instead; ``process_request`` sends them back to be held."""
        if self.driver.busy:
            raise DontCloseSpider
        self._in_idle_pass = True
        call_soon(self._idle_pass_over)
        reason = self.settings.all_forbidden_close_reason
        if reason is not None and self.accounting.nothing_allowed():
            raise CloseSpider(reason)

    def _idle_pass_over(self) -> None:
        self._in_idle_pass = False

    async def spider_closed(self, spider: Spider | None = None, reason: str = "") -> None:
        """Save every leftover under JOBDIR; else errback them, deciding first those an
        answer during closing decided (forbidden ones end forbidden).

        Under JOBDIR a leftover is decided after the resume, by the copy saved with it (or
        a newer one), on its way through the scheduler: ended here, it would not have
        reached Scrapy's duplicate filter, so a start request the spider yields again on
        the resume would end a second time."""
        self._closed = True
        leftovers = await self.driver.close()
        if self._jobdir:
            await self._pause(leftovers)
        else:
            for leftover in leftovers:
                await self._end_at_close(leftover)
        await self._patient_store.close()  # calls still waiting out an outage give up
        logger.info(self.accounting.summary(self.stats.get_stats()))
        for line in self.accounting.all_forbidden_warnings():
            logger.warning(line)

    async def _end_at_close(self, leftover: Leftover) -> None:
        """Errback a leftover that is not saved: forbidden if an answer during closing
        forbade it, else closed."""
        if leftover.record is None or not await self._forbidden_at_close(leftover):
            await self._close_unsent(leftover)

    async def _forbidden_at_close(self, leftover: Leftover) -> bool:
        """Decide a request its robots.txt answered for while the spider was closing:
        a forbidden (or usage-refused) one ends here, an allowed one is left to close,
        counted allowed (robots.txt let it through, the close stopped it: its origin is
        not one whose every request robots.txt refused)."""
        assert leftover.record is not None
        try:
            self._decide(leftover.origin, leftover.record, leftover.request, downloading=False)
        except IgnoreRequest as forbidden:
            self.accounting.count(leftover.origin, "released")
            await call_errback(leftover.request, forbidden)
            return True
        self.accounting.report(leftover.origin).allowed += 1
        return False

    async def _close_unsent(self, leftover: Leftover) -> None:
        self.accounting.count(leftover.origin, "closed")
        if leftover.record is None:
            reason = closing_reason(leftover.origin)
        else:
            reason = closed_before(leftover.request)
        await call_errback(leftover.request, IgnoreRequest(reason))

    async def _pause(self, leftovers: list[Leftover]) -> None:
        """Write the records and the held requests under JOBDIR for the resume; a request
        that cannot be serialised is closed (errback), named in one WARNING."""
        now = time.time()
        state = JobState(records=self._records_to_save(now))
        if self._unresumed is not None:
            state.records = {**self._unresumed.records, **state.records}
            state.held = list(self._unresumed.held)
        unsaved: list[Leftover] = []
        saved: list[Leftover] = []
        for leftover in leftovers:
            try:
                data = self._codec.encode(leftover.request)
            except Exception:  # e.g. a lambda callback, an unpicklable meta value
                unsaved.append(leftover)
                continue
            remaining = max(0.0, leftover.deadline - now)
            state.held.append(SavedRequest(str(leftover.origin), remaining, data))
            saved.append(leftover)
        if unsaved:
            logger.warning(
                "%d held requests cannot be saved for the resume (they cannot be "
                "serialised, e.g. a lambda callback) and go to their errback: %s",
                len(unsaved),
                ", ".join(str(leftover.request) for leftover in unsaved),
            )
            for leftover in unsaved:
                await self._end_at_close(leftover)
        try:
            path = write_state(self._jobdir, state, now)
        except OSError as exc:  # a full disk, a JOBDIR removed or read-only meanwhile
            await self._not_saved(exc, saved)
            return
        for leftover in saved:
            self.accounting.count(leftover.origin, "saved")
        logger.info(
            "Saved the robots.txt state for the resume: %d origins, %d held requests, in %s",
            len(state.records),
            len(state.held),
            path,
        )

    async def _not_saved(self, error: OSError, leftovers: list[Leftover]) -> None:
        """The state could not be written: the held requests end here, and the state of
        an earlier pause is removed, so that a resume does not take it up; unless this
        run never resumed it (its store did not open): it stands as it was, whole (the
        write is atomic)."""
        assert self._jobdir is not None
        try:
            if self._unresumed is not None:
                earlier = "the state file of the earlier pause, never resumed, is left as it was"
            else:
                discard_state(self._jobdir)
                earlier = "every robots.txt is fetched again on a resume"
        except OSError as removal:
            earlier = (
                f"the state of an earlier pause could not be removed either ({removal}): "
                "remove it before resuming"
            )
        logger.warning(
            "Could not save the robots.txt state in %s (%s: %s): the %d held requests go "
            "to their errback, and %s",
            self._jobdir,
            type(error).__name__,
            error,
            len(leftovers),
            earlier,
        )
        for leftover in leftovers:
            await self._end_at_close(leftover)

    def _records_to_save(self, now: float) -> dict[str, OriginRecord]:
        """The records restored at the start, updated by this run's: the REP9309_CACHE_SIZE
        most recently fetched, and every one in backoff besides (never dropped: forgetting
        one would refetch a failing server at once)."""
        records = self.driver.records()
        if len(records) <= self.settings.cache_size:
            return records
        newest_first = sorted(records.items(), key=lambda item: -item[1].fetched_at)
        kept = dict(newest_first[: self.settings.cache_size])
        kept.update((key, record) for key, record in records.items() if record.in_backoff(now))
        return kept

    async def _resume(self, state: JobState) -> None:
        """Restore the saved records (a store that already has newer ones keeps them) and
        hold the saved requests again, in their order, with the defer time they had left."""
        now = time.time()
        # Held to this run's settings: a copy is used no longer than REP9309_CACHE_TTL,
        # a request held no longer than REP9309_DEFER_TIMEOUT, whatever the file says.
        # A store shared by a fleet keeps its own records: a peer may have superseded a
        # saved copy, which may even have left the store since; it must not come back.
        records = (
            {}
            if self.driver.shared
            else {
                key: within_limits(record, self.settings, now)
                for key, record in state.records.items()
            }
        )
        self.driver.restore(records)
        # The driver has the records now (``records()`` gives them back for the pause,
        # unless a newer copy superseded one): only the held requests wait.
        self._unresumed = JobState(held=state.held)
        for key, record in records.items():
            try:
                await self._patient_store.save(key, record, None)  # waits out an outage
            except Exception as exc:  # a store bug: the record stays in the driver only
                logger.warning(
                    "REP9309_STORE: could not restore the saved robots.txt record of %s "
                    "(%s: %s); it is fetched again when needed",
                    key,
                    type(exc).__name__,
                    exc,
                )
        if self._closed:  # meanwhile: the close saved the held requests again
            return
        self._unresumed = None  # from here on, what it held is held again (no await)
        unrestored: list[str] = []  # "<origin>: <why>", for the WARNING
        for saved in state.held:
            origin = Origin.from_url(saved.origin)
            if origin is None:
                unrestored.append(f"{saved.origin}: not an http(s) origin")
                continue
            try:
                request = self._codec.decode(saved.data)
            except Exception as exc:
                unrestored.append(f"{saved.origin}: {type(exc).__name__}: {exc}")
                continue
            remaining = min(saved.remaining, self.settings.defer_timeout)
            self.driver.hold(origin, request, deadline=now + remaining)
        if unrestored:
            logger.warning(
                "%d saved held requests could not be restored (the spider changed?): %s",
                len(unrestored),
                "; ".join(unrestored),
            )
        if state.records or state.held:
            logger.info(
                "Resumed the robots.txt state: %d origins, %d held requests",
                len(state.records),
                len(state.held) - len(unrestored),
            )

    def _warn_about_user_agents(self, source: str) -> None:
        """One WARNING per user agent of the crawl that no robots.txt group can name
        (RFC 9309 2.2.1), saying where it comes from: such a crawl silently obeys the
        ``*`` groups only."""
        agents = [(source, self._default_user_agent)]
        if self.settings.user_agent:
            agents = [("ROBOTSTXT_USER_AGENT", self.settings.user_agent)]
        agents += [
            ("REP9309_EXTRA_USER_AGENTS", agent) for agent in self.settings.extra_user_agents
        ]
        for setting, agent in agents:
            problem = token_problem(agent)
            if problem is not None:
                logger.warning("scrapy-rep9309: %s: %s", setting, problem)

    def _changed_elsewhere(self, key: str) -> None:
        """A store shared with other processes says another one changed ``key``'s record."""
        self.driver.changed_elsewhere(key)

    # -- downloader middleware ------------------------------------------------

    async def process_request(
        self, request: Request, spider: Spider | None = None
    ) -> Request | Response | None:
        parts = urlparse_cached(request)
        meta = request.meta
        # A decision is this request's own: not one copied with another request's meta.
        meta.pop(DECIDED_META, None)
        meta.pop(DECIDED_UNTIL_META, None)
        # Nor is a pin (a copy a later downloader middleware made before the original was
        # sent: the original's pin ends as it leaves the downloader, ``driver._pinned``).
        meta.pop(SENDING_META, None)
        # So is "came from the scheduler" (``request_scheduled`` sets it on each trip): a
        # request sent with ``engine.download_async`` with another's meta did not.
        scheduled = meta.pop(SCHEDULED_META, False)
        if scheduled:
            meta.pop(DIRECT_META, None)  # one sent directly before: not now
        else:
            meta[DIRECT_META] = True
        # And the ``dont_cache`` of a robots.txt copy: this request came with the copy's
        # meta (a meta refresh, a retry, ``meta=response.meta``) before the HTTP cache
        # let the copy by (``_robots_copy`` marks it again if it is a copy too).
        if meta.pop(UNCACHED_COPY_META, None):
            meta.pop("dont_cache", None)
        if parts.scheme not in _SCHEMES or meta.get("dont_obey_robotstxt"):
            meta.pop(CONTENT_USAGE_META, None)  # not decided: none come from another's meta
            return None
        # Used once: a copy the errback makes (a request tried again) is decided anew.
        expired = meta.pop(EXPIRED_META, None)
        if expired:
            meta.pop(CONTENT_USAGE_META, None)  # not let through: none of another's
            log_given_up(request, expired, self.crawler)
            raise IgnoreRequest(expired)
        origin = origin_of_netloc(parts.scheme, parts.netloc)
        if origin is None:
            # Not left to the download to fail: a proxy, or a fetching API given the
            # absolute URL, may read it as a host whose robots.txt was never asked.
            self.stats.inc_value("robotstxt/invalid_origin")
            meta.pop(CONTENT_USAGE_META, None)  # not let through: none of another's
            logger.debug(
                "Refused %(request)s: its host is not a valid host name, so it has no "
                "robots.txt to obey",
                {"request": request},
                extra={"spider": self.crawler.spider},
            )
            raise IgnoreRequest(INVALID_HOST_MESSAGE)
        driver = self.driver
        record = driver.decisive(origin, request)
        if record is None and driver.shared:
            record = await driver.peek(origin)
        if record is None:
            if scheduled and _scheduler_trips(request) < MAX_REQUEUES:
                return self._requeue(request)
            try:
                record = await driver.wait(origin, request)
            except ClosedWhileWaiting as closed:
                if not scheduled:  # engine.download_async: its caller's
                    self.accounting.count(origin, "closed")
                    raise
                # From the scheduler: it ends like the requests held outside, saved
                # under JOBDIR or errback'd at close; the engine drops this copy.
                copy = _past_the_filter(request)  # saved under JOBDIR: filter seen it
                driver.leave_for_close(origin, copy, closed.deadline)
                return copy
        self._decide(origin, record, request)
        dont_filter = meta.pop(DONT_FILTER_META, None)  # back from its trips (``_requeue``)
        if dont_filter is not None and meta.get(TRIPS_OF_META) == request.url:
            request.dont_filter = dont_filter
        if request.url.endswith(_ROBOTS_TXT_END) and _asks_for_robots_txt(request):
            copy = self._robots_copy(origin, record, request)
            if copy is not None:
                return copy
        if driver.sending(origin):
            meta[SENDING_META] = origin
        return None

    def _last_look(self, request: Request) -> ResponseLook | None:
        """Just before ``request`` is sent (after any wait in its download slot's queue):
        the newest usable copy of its origin's robots.txt still decides it.

        The copy that let it through (``DECIDED_META``) is the usual answer, at the cost
        of a look-up. A newer copy decides it again (IgnoreRequest if it forbids it). No
        usable copy (it expired meanwhile, a refresh is under way) raises
        ``NoUsableCopy``: ``process_exception`` sends the request back to be held. An
        origin evicted from memory meanwhile knows nothing newer: the copy that decided
        stands while it is usable (``DECIDED_UNTIL_META``), and no longer, however many
        trips the request made (whether a refresh failed since was forgotten with it).

        After ``MAX_REQUEUES`` trips back from here (trips from the scheduler are counted
        apart) for an origin still in memory, each fresh copy expired before the slot let
        the request go: a lifetime shorter than the slot's delay, which would send it back
        forever. The newest copy then decides it, past its lifetime (``LAST_LOOK_MAX_AGE``),
        if no refresh has failed since; else (the origin fails now) it is held again.

        A robots.txt download (not decided here) gets its size bound, and a look at its
        response (``live_download``)."""
        meta = request.meta
        decided_at = meta.get(DECIDED_META)
        if decided_at is None:  # not decided here: skipped, robots.txt, no valid origin
            return live_download(request)
        origin = _origin_key(request)
        if origin is None:
            return None
        self._left_the_queue(request)  # now, sent or sent back
        record = self.driver.usable(origin)
        if record is None:
            if not self._known(origin):
                # Evicted meanwhile: nothing newer is known, nor whether a refresh failed.
                if time.time() < meta.get(DECIDED_UNTIL_META, 0.0):
                    return None  # its copy is still usable
                raise NoUsableCopy(origin)
            if _last_look_trips(request) < MAX_REQUEUES:
                raise NoUsableCopy(origin)
            # Sent back enough: the newest copy decides, if fetched within RFC 9309's day.
            record = self.driver.newest_answer(origin)
            if (
                record is None
                or record.failures
                or record.fetched_at <= time.time() - LAST_LOOK_MAX_AGE
            ):
                raise NoUsableCopy(origin)  # none, or its refresh failed: held again
        if record.fetched_at == decided_at:
            return None
        self.accounting.take_back_allowed(origin)  # counted again, or forbidden
        self._decide(origin, record, request)
        return None

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> Request | None:
        """The last look found no usable copy: the request goes back to be held (or, sent
        with ``engine.download_async``, to wait for the copy here)."""
        self._left_the_queue(request)
        if not isinstance(exception, NoUsableCopy):
            return None
        self.accounting.take_back_allowed(exception.origin)
        if request.meta.get(DIRECT_META) and engine_closing(self.crawler):
            # Sent back to engine.download_async's loop as the spider closes, it would be
            # added to the engine's requests in progress after they emptied, and end there
            # again (Scrapy then fires its closing twice: AlreadyCalledError). It ends
            # here, like a request that waited for its robots.txt when the spider closed.
            self.accounting.count(exception.origin, "deferred")
            self.accounting.count(exception.origin, "closed")
            raise IgnoreRequest(closing_reason(exception.origin))
        logger.debug(
            "%(request)s waited in its download slot until the robots.txt copy of "
            "%(origin)s was no longer usable: sent back to wait for a fresh one",
            {"request": request, "origin": exception.origin},
            extra={"spider": self.crawler.spider},
        )
        return self._requeue(request, at_last_look=True)

    def _robots_copy(
        self, origin: Origin, record: OriginRecord, request: Request
    ) -> Response | None:
        """The answer to a spider's own request for ``origin``'s robots.txt, from the copy
        that decided it: the status and body it was fetched with, at the URL it was
        fetched from (the final one after redirects), flagged ``ROBOTS_COPY_FLAG``. None
        (download it) when the copy cannot stand in for a download: cut at
        REP9309_MAX_SIZE, a redirect that was not followed, no status (refused locally)."""
        status = record.status
        body = record.body
        whole = not record.truncated  # records of earlier versions: ``OriginRecord.from_dict``
        if status is None or not (200 <= status < 300 or 400 <= status < 500) or not whole:
            self.stats.inc_value(ROBOTS_COPY_DOWNLOADED_STAT)
            logger.debug(
                "Downloading %(request)s: the robots.txt copy of %(origin)s cannot stand in "
                "for it (%(why)s)",
                {
                    "request": request,
                    "origin": origin,
                    "why": f"HTTP {status}" if whole else "cut at REP9309_MAX_SIZE",
                },
                extra={"spider": self.crawler.spider},
            )
            return None
        url = record.redirected_to or request.url
        response_class = responsetypes.from_args(url=url, body=body)
        # Not a download: Scrapy's HTTP cache must not store it over the real answer (it
        # would be replayed as a copy fetched now, with none of the answer's headers).
        # Taken off again in ``process_response``, after the cache's: a request made
        # with this response's meta is cached as usual.
        # Marked in the meta, not kept here: RetryMiddleware may answer the copy with a
        # copy of the request, whose answer is the one ``process_response`` sees.
        meta = request.meta
        if not meta.get("dont_cache") or meta.get(UNCACHED_COPY_META):
            meta["dont_cache"] = True
            meta[UNCACHED_COPY_META] = True
        self.stats.inc_value(ROBOTS_COPY_STAT)
        logger.debug(
            "Answered %(request)s from the robots.txt copy of %(origin)s (HTTP %(status)s, "
            "fetched %(age).0f s ago), not downloaded",
            {
                "request": request,
                "origin": origin,
                "status": status,
                "age": max(0.0, time.time() - record.fetched_at),
            },
            extra={"spider": self.crawler.spider},
        )
        return response_class(
            url=url, status=status, body=body, flags=[ROBOTS_COPY_FLAG], request=request
        )

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        """Combine the robots.txt preferences ``_decide`` left on the request with the
        response's ``Content-Usage`` header, the most restrictive way, and count them."""
        self._left_the_queue(request)  # answered by a later middleware (an HTTP cache)
        if response.flags and request.meta.pop(UNCACHED_COPY_META, None):  # ``_robots_copy``
            request.meta.pop("dont_cache", None)
        robots = request.meta.get(CONTENT_USAGE_META)
        if robots is None:
            return response
        header = response.headers.getlist(b"Content-Usage")
        if (not header and not robots) or _skipped(request):  # the first: nothing to add
            return response
        preferences = combine_statements(robots, header_preferences(header)) if header else robots
        if preferences:
            request.meta[CONTENT_USAGE_META] = preferences
            origin = _origin_key(request)
            if origin is not None:
                self.accounting.content_usage(origin, preferences)
        return response

    def _left_the_queue(self, request: Request) -> None:
        """``request`` left the downloader's queue (its last look; or answered or refused by
        a downloader middleware after this one): the origin it kept in memory need not
        stay. Ways out that no hook here sees end the pin too (``driver._pinned``)."""
        request.meta.pop(SENDING_META, None)

    def origin_reports(self) -> list[OriginReport]:
        """Per-origin outcome and counters so far, sorted by origin: of the origins in
        memory (REP9309_CACHE_SIZE); the close summary counts the forgotten ones too."""
        return self.accounting.reports()

    def _known(self, origin: Origin) -> bool:
        """Whether the driver still keeps ``origin`` (then its report is kept too)."""
        return origin in self.driver.machines

    # -- decisions --------------------------------------------------------------

    def _decide(
        self, origin: Origin, record: OriginRecord, request: Request, *, downloading: bool = True
    ) -> None:
        """Let ``request`` through, with its usage preferences in its meta, or raise
        IgnoreRequest: forbidden, or refused for a REP9309_REQUIRE_USAGE label.

        Not ``downloading`` (the spider closed before it could be): only the refusal is
        decided; an allowed request is neither counted allowed nor given its meta."""
        # An available robots.txt decides by its rules, an empty one too (it allows all);
        # the other outcomes decide by themselves, whatever body came with them.
        rules = self.driver.rules(origin, record) if record.outcome == AVAILABLE else None
        user_agent = self._user_agent(request)
        extra = self.settings.extra_user_agents
        if not is_allowed(record.outcome, rules, request.url, user_agent, extra):
            # The same decision again, with its reason: only forbidden requests pay for it.
            decision = explain(record.outcome, rules, request.url, user_agent, extra).decision
            self.accounting.count(origin, "forbidden")
            report = self.accounting.report(origin)
            if report.first_refusal is None:
                report.first_refusal = _refusal_text(decision, extra)
            logger.debug(
                "Forbidden by robots.txt: %(request)s "
                "(%(rule)s, line %(line)s of %(robots)s%(for)s)",
                {
                    "request": request,
                    "rule": None if decision is None else decision.rule,
                    "line": None if decision is None else decision.line,
                    "robots": origin.robots_url,
                    "for": _forbidden_for(decision, extra),
                },
                extra={"spider": self.crawler.spider},
            )
            request.meta.pop(CONTENT_USAGE_META, None)  # not let through: none of another's
            raise IgnoreRequest(FORBIDDEN_MESSAGE)
        usage = usage_preferences(record.outcome, rules, request.url, user_agent, extra)
        refusing = refused(usage, self.settings.require_usage) if usage else ()
        if refusing:
            report = self.accounting.report(origin)
            if report.first_refusal is None:
                decision = explain(record.outcome, rules, request.url, user_agent, extra).decision
                report.first_refusal = _usage_refusal_text(refusing[0], decision)
            self._refuse(origin, request, usage, refusing)
        if not downloading:
            return
        self.accounting.report(origin).allowed += 1
        meta = request.meta
        meta[DECIDED_META] = record.fetched_at
        meta[DECIDED_UNTIL_META] = record.usable_until(self.settings.stale_ttl)
        meta[CONTENT_USAGE_META] = {p.label: p.value for p in usage} if usage else {}
        if rules is not None and self.settings.crawl_delay:
            delay = rules.crawl_delay(user_agent)
            if delay:
                keeper = self._crawl_delay_keeper or self._start_keeping_crawl_delays()
                if keeper is not None:
                    keeper.raise_for(
                        request, min(delay, self.settings.crawl_delay_max), self.crawler.spider
                    )

    def _start_keeping_crawl_delays(self) -> CrawlDelayKeeper | None:
        """REP9309_CRAWL_DELAY's keeper, made for the first request an origin's Crawl-delay
        applies to: that may come before ``spider_opened`` (an item pipeline downloading in
        its ``open_spider``), once the engine and its downloader exist."""
        engine = self.crawler.engine
        if engine is None:
            return None
        # Held here: the signal manager keeps only a weak reference to receivers.
        self._crawl_delay_keeper = CrawlDelayKeeper(engine.downloader, self.settings.cache_size)
        self.crawler.signals.connect(
            self._crawl_delay_keeper.response_downloaded, signal=signals.response_downloaded
        )
        return self._crawl_delay_keeper

    def _refuse(
        self,
        origin: Origin,
        request: Request,
        usage: tuple[Preference, ...],
        refusing: tuple[Preference, ...],
    ) -> NoReturn:
        """Refuse a request whose robots.txt preference refuses a required label."""
        self.accounting.count(origin, "usage_refused")
        self.accounting.report(origin).add_usage({p.label: p.value for p in usage})
        stated = ", ".join(f"{p.label}={p.value}" for p in refusing)
        reasons = "; ".join(f"{p.label}={p.value} by {p.rule}, line {p.line}" for p in refusing)
        logger.debug(
            "Usage refused by robots.txt: %(request)s (%(reasons)s of %(robots)s; "
            "REP9309_REQUIRE_USAGE requires %(required)s)",
            {
                "request": request,
                "reasons": reasons,
                "robots": origin.robots_url,
                "required": ", ".join(self.settings.require_usage),
            },
            extra={"spider": self.crawler.spider},
        )
        request.meta.pop(CONTENT_USAGE_META, None)  # not let through: none of another's
        raise IgnoreRequest(f"{USAGE_REFUSED_MESSAGE}: {stated}")

    def _user_agent(self, request: Request) -> str:
        """ROBOTSTXT_USER_AGENT, else the request's own header, else the crawl's."""
        if self.settings.user_agent:
            return self.settings.user_agent
        headers = request.headers
        if not headers:  # the usual case: UserAgentMiddleware comes after this one
            return self._default_user_agent
        header = headers.get(b"User-Agent")
        if header:
            return as_text(header)
        return self._default_user_agent

    def _dropped_as_offsite(self, request: Request) -> bool:
        """Whether OffsiteMiddleware drops this request in the same signal (no fetch for it).

        Asked for every request about to be held. Scrapy's own policy follows everything
        while the spider lists no ``allowed_domains`` (it matches hosts against an empty
        pattern), so it is not called then: a look-up instead of a regular expression per
        held request. A subclass that overrides ``should_follow`` or ``get_host_regex``
        is always asked."""
        if not self._offsite or request.dont_filter or request.meta.get("allow_offsite"):
            return False
        spider = self.crawler.spider
        for offsite, stock in self._offsite:
            if stock and not getattr(spider, "allowed_domains", None):
                continue
            if not offsite.should_follow(request, spider):
                return True
        return False

    def _requeue(self, request: Request, *, at_last_look: bool = False) -> Request:
        """A copy for the engine to schedule again, so that it is held, not waited for here.

        Trips from the last look are counted apart: each of the two loops (a copy that
        expires in the scheduler, one that expires in the download slot's queue) has its
        own bound, so the one's trips never make the other wait inside the downloader."""
        self.stats.inc_value("robotstxt/requeued")
        copy = _past_the_filter(request)
        meta = copy.meta
        meta[REQUEUED_META] = _requeues(request) + 1
        meta[LAST_LOOK_TRIPS_META] = _last_look_trips(request) + at_last_look
        return copy


class NoUsableCopy(Exception):
    """Raised by the last look: the origin has no usable robots.txt copy at send time."""

    def __init__(self, origin: Origin) -> None:
        super().__init__(f"No usable robots.txt copy of {origin} at download time")
        self.origin = origin


def _skipped(request: Request) -> bool:
    """Requests this middleware never decides: opted out, or not http(s)."""
    if request.meta.get("dont_obey_robotstxt"):
        return True
    scheme = request.url.split(":", 1)[0].lower()
    return scheme not in _SCHEMES


def _asks_for_robots_txt(request: Request) -> bool:
    """Whether ``request`` is a GET of its origin's ``/robots.txt`` (the one rule of which
    URLs that is, ``is_robots_txt``): what the copy this middleware fetched can answer."""
    return request.method == "GET" and is_robots_txt(request.url)


def _refusal_text(decision: Decision | None, extra_user_agents: tuple[str, ...]) -> str:
    """The rule, line and group that forbade a request, for the origin's report."""
    if decision is None or decision.rule is None:
        return "no rule (the robots.txt forbids everything)"
    forbidden_for = _forbidden_for(decision, extra_user_agents)
    return f"{decision.rule} (line {decision.line}, {_group(decision)}{forbidden_for})"


def _usage_refusal_text(preference: Preference, decision: Decision | None) -> str:
    """The usage preference that refused a request, with its line and group."""
    group = "" if decision is None else f", {_group(decision)}"
    return f"{preference.rule} (line {preference.line}{group}; REP9309_REQUIRE_USAGE)"


def _group(decision: Decision) -> str:
    """``User-agent: a, b``: the group(s) that applied, as written."""
    return f"User-agent: {', '.join(decision.user_agents) or '*'}"


def _forbidden_for(decision: Decision | None, extra_user_agents: tuple[str, ...]) -> str:
    """Who forbade (``", for Google-Extended"``), when the crawl obeys several user agents."""
    if not extra_user_agents or decision is None or decision.forbidden_for is None:
        return ""
    return f", for {decision.forbidden_for}"


def _past_the_filter(request: Request) -> Request:
    """A copy of ``request`` for the scheduler again, with ``dont_filter=True`` (the
    duplicate filter has seen it), that gets the request's own flag back once it is let
    through (``DONT_FILTER_META``): what it leads to (a redirect inherits the flag) is
    filtered as before. Trip counters carried with another URL's meta are dropped."""
    copy = request.replace(dont_filter=True)
    meta = copy.meta
    if meta.get(TRIPS_OF_META) != request.url:  # its first trip: none of another's
        for key in (REQUEUED_META, LAST_LOOK_TRIPS_META):
            meta.pop(key, None)
        meta[TRIPS_OF_META] = request.url
        meta[DONT_FILTER_META] = request.dont_filter
    elif DONT_FILTER_META not in meta:  # its own flag is back since its last trip
        meta[DONT_FILTER_META] = request.dont_filter
    return copy


def _requeues(request: Request) -> int:
    return _own_trips(request, REQUEUED_META)


def _last_look_trips(request: Request) -> int:
    return _own_trips(request, LAST_LOOK_TRIPS_META)


def _own_trips(request: Request, key: str) -> int:
    """A trip counter of ``request``'s own: 0 if it came with another URL's meta."""
    meta = request.meta
    if meta.get(TRIPS_OF_META) != request.url:
        return 0
    return int(meta.get(key) or 0)


def _scheduler_trips(request: Request) -> int:
    return _requeues(request) - _last_look_trips(request)


def _origin_key(request: Request) -> Origin | None:
    parts = urlparse_cached(request)
    return origin_of_netloc(parts.scheme, parts.netloc)


def _build_store(store_class: type, crawler: Crawler) -> OriginStore:
    """REP9309_STORE's store, as Scrapy builds its components; a ``from_crawler`` that
    returns nothing names the setting."""
    from_crawler = getattr(store_class, "from_crawler", None)
    if from_crawler is None:
        return build_from_crawler(store_class, crawler)
    store = from_crawler(crawler)
    if store is None:
        raise SettingsError(
            f"Invalid value for REP9309_STORE: {global_object_name(store_class)}.from_crawler "
            "returned None"
        )
    return store


def close_once_running(crawler: Crawler, reason: str, tries: int = 1200) -> None:
    """Close the crawl's spider with ``reason`` once its engine runs (closing it while
    it opens would cut its start-up short), unless it closed or started closing before;
    looked at every 50 ms, a minute at most."""
    engine = crawler.engine
    if engine is None or getattr(engine, "spider", None) is None or engine_closing(crawler):
        return
    if not getattr(engine, "running", False):
        if tries > 0:
            call_later(0.05, close_once_running, crawler, reason, tries - 1)
        return
    close_async = getattr(engine, "close_spider_async", None)
    if close_async is not None:
        deferred_from_coro(close_async(reason=reason))
    else:
        engine.close_spider(crawler.spider, reason)
