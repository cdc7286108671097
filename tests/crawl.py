"""Run one real Scrapy crawl and collect everything a test asserts on.

The crawl uses the real engine, scheduler, downloader and middlewares; only
the spider is ours: it sends a given plan of requests (``Wait`` entries pause
the plan, so a test can act "during the crawl") and records every response
and every errback failure with its time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.settings import default_settings
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.python.failure import Failure

BUILTIN = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
OURS = "scrapy_rep9309.RobotsTxtMiddleware"
ADDON = "scrapy_rep9309.Addon"
FORBIDDEN_MESSAGE = "Forbidden by robots.txt"
#: Exact download delays: DOWNLOAD_DELAY_JITTER replaced RANDOMIZE_DOWNLOAD_DELAY in Scrapy 2.19.
NO_RANDOM_DELAY: dict[str, object] = (
    {"DOWNLOAD_DELAY_JITTER": 0}
    if hasattr(default_settings, "DOWNLOAD_DELAY_JITTER")
    else {"RANDOMIZE_DOWNLOAD_DELAY": False}
)

#: Settings that keep every end-to-end crawl to a few seconds.
FAST_SETTINGS: dict[str, Any] = {
    "ROBOTSTXT_OBEY": True,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "DEBUG",
    "DOWNLOAD_TIMEOUT": 2,
    "CLOSESPIDER_TIMEOUT": 25,
    "REP9309_RETRY_DELAY": 0.2,
    "REP9309_RETRY_MAX_DELAY": 1,
    "REP9309_DEFER_TIMEOUT": 8,
    # Cache-Control lifetimes as sites send them (not at least 60 s): tests drive
    # expiry with max-age=1 or 2.
    "REP9309_MIN_TTL": 0.001,
}

#: How users enable this project's middleware by hand.
OURS_ENABLED: dict[str, Any] = {"DOWNLOADER_MIDDLEWARES": {BUILTIN: None, OURS: 100}}
#: How users enable it with the add-on.
ADDON_ENABLED: dict[str, Any] = {"ADDONS": {ADDON: 0}}
#: Scrapy's own middleware (the default), for contrast and for the benchmark.
BUILTIN_ENABLED: dict[str, Any] = {}

_CAPTURED_LOGGERS = ("scrapy", "scrapy_rep9309")


@dataclass(frozen=True)
class Wait:
    """Pause the spider's plan of requests for ``seconds``."""

    seconds: float


PlanItem = str | Request | Wait
#: Meta key of a plan request: the name, in THEN_ACTIONS, of a function called once its
#: response is recorded (to act on an event of the crawl, not at a time a slow machine
#: may not keep). A name, so that the request can still be serialised (Redis, JOBDIR).
THEN_META = "test_then"
THEN_ACTIONS: dict[str, Callable[[], object]] = {}


@dataclass(frozen=True)
class Seen:
    url: str
    status: int
    time: float
    request: Request


@dataclass(frozen=True)
class Failed:
    url: str
    exception: BaseException
    time: float
    request: Request

    @property
    def message(self) -> str:
        return str(self.exception)


@dataclass
class CrawlResult:
    """Everything observable about one finished crawl (times: ``time.monotonic``)."""

    started: float
    finished: float = 0.0
    spider_closed_at: float = 0.0
    close_reason: str | None = None
    responses: list[Seen] = field(default_factory=list)
    failures: list[Failed] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    logs: list[logging.LogRecord] = field(default_factory=list)
    downloaded_requests: list[Request] = field(default_factory=list)
    robots_parsed: list[tuple[Any, Request]] = field(default_factory=list)
    middlewares: list[Any] = field(default_factory=list)
    # Scrapy's signal manager holds receivers weakly: the recorders live here.
    receivers: list[Any] = field(default_factory=list, repr=False)

    @property
    def duration(self) -> float:
        return self.finished - self.started

    @property
    def urls(self) -> set[str]:
        """URLs of every response the spider received."""
        return {seen.url for seen in self.responses}

    @property
    def failed_urls(self) -> set[str]:
        return {failed.url for failed in self.failures}

    @property
    def forbidden_urls(self) -> set[str]:
        """URLs whose errback got ``IgnoreRequest("Forbidden by robots.txt")``."""
        return {
            failed.url
            for failed in self.failures
            if isinstance(failed.exception, IgnoreRequest) and failed.message == FORBIDDEN_MESSAGE
        }

    @property
    def ignored_urls(self) -> set[str]:
        """URLs whose errback got any ``IgnoreRequest`` (forbidden or expired)."""
        return {f.url for f in self.failures if isinstance(f.exception, IgnoreRequest)}

    def failure_for(self, url: str) -> Failed:
        matches = [failed for failed in self.failures if failed.url == url]
        assert len(matches) == 1, f"{len(matches)} failures for {url}: {self.failures}"
        return matches[0]

    def messages(self, level: int = logging.DEBUG, logger_prefix: str = "") -> list[str]:
        return [
            record.getMessage()
            for record in self.logs
            if record.levelno == level and record.name.startswith(logger_prefix)
        ]

    def logs_after_closing(self) -> list[logging.LogRecord]:
        """Records from the engine's "Closing spider" line onwards."""
        for index, record in enumerate(self.logs):
            if record.getMessage().startswith("Closing spider"):
                return self.logs[index:]
        return []

    def close_summary(self) -> str:
        """The middleware's close summary line (INFO, "robots.txt: N origins (...)...")."""
        (summary,) = [
            record.getMessage()
            for record in self.logs_after_closing()
            if record.name.startswith("scrapy_rep9309")
            and record.levelno == logging.INFO
            and record.getMessage().startswith("robots.txt: ")
        ]
        return summary

    def stat(self, name: str) -> Any:
        return self.stats.get(name, 0)

    def robotstxt_stats(self) -> dict[str, Any]:
        return {key: value for key, value in self.stats.items() if key.startswith("robotstxt/")}

    def middleware(self, cls: type) -> Any:
        """The running instance of a downloader middleware class."""
        matches = [mw for mw in self.middlewares if isinstance(mw, cls)]
        assert len(matches) == 1, f"{cls} not enabled: {self.middlewares}"
        return matches[0]

    def robots_requests(self) -> list[Request]:
        """robots.txt requests as they reached the downloader (meta, headers)."""
        return [r for r in self.downloaded_requests if r.url.endswith("/robots.txt")]


class PlanSpider(Spider):
    """Sends ``plan`` in order and records what comes back in ``result``."""

    name = "e2e"
    plan: Sequence[PlanItem] = ()
    result: CrawlResult

    async def start(self) -> AsyncIterator[Request]:
        for item in self.plan:
            if isinstance(item, Wait):
                await asyncio.sleep(item.seconds)
                continue
            yield self._prepared(item)

    def _prepared(self, item: str | Request) -> Request:
        request = Request(item) if isinstance(item, str) else item
        return request.replace(
            callback=request.callback or self.parse,
            errback=request.errback or self.on_error,
        )

    def parse(self, response: Response, **kwargs: Any) -> None:
        self.result.responses.append(
            Seen(response.url, response.status, time.monotonic(), response.request)
        )
        then = response.meta.get(THEN_META)
        if then is not None:
            THEN_ACTIONS.pop(then)()

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        self.result.failures.append(Failed(request.url, failure.value, time.monotonic(), request))


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self._records = records

    def emit(self, record: logging.LogRecord) -> None:
        self._records.append(record)


def crawl_settings(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """FAST_SETTINGS overlaid with each layer in turn."""
    merged = dict(FAST_SETTINGS)
    for layer in layers:
        merged.update(layer)
    return merged


def ours_class() -> type:
    """This project's middleware class, imported only when a test runs."""
    return load_object(OURS)


def make_crawler(settings: Mapping[str, Any], spider_cls: type[Spider] = PlanSpider) -> Crawler:
    return Crawler(spider_cls, dict(settings))


async def start_crawl(crawler: Crawler, **spider_kwargs: Any) -> None:
    """Run ``crawler`` to its end (``crawl_async`` is Scrapy >= 2.14)."""
    if hasattr(crawler, "crawl_async"):
        await crawler.crawl_async(**spider_kwargs)
    else:
        await maybe_deferred_to_future(crawler.crawl(**spider_kwargs))


async def run_crawl(
    plan: Iterable[PlanItem],
    settings: Mapping[str, Any] | None = None,
    *,
    enable: Mapping[str, Any] = OURS_ENABLED,
    spider_cls: type[Spider] = PlanSpider,
) -> CrawlResult:
    """Crawl ``plan`` with FAST_SETTINGS + ``enable`` + ``settings``; wait for the end.

    ``spider_cls`` (PlanSpider by default) is created with ``plan`` and ``result``."""
    crawler = make_crawler(crawl_settings(enable, settings or {}), spider_cls)
    result = CrawlResult(started=time.monotonic())
    _connect_recorders(crawler, result)
    handler = _ListHandler(result.logs)
    root = logging.getLogger()
    previous_levels = {name: logging.getLogger(name).level for name in _CAPTURED_LOGGERS}
    root.addHandler(handler)
    for name in _CAPTURED_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        await start_crawl(crawler, plan=list(plan), result=result)
    finally:
        root.removeHandler(handler)
        for name, level in previous_levels.items():
            logging.getLogger(name).setLevel(level)
        result.finished = time.monotonic()
        result.stats = _stats_of(crawler)
    return result


def _stats_of(crawler: Crawler) -> dict[str, Any]:
    """The crawl's stats; empty when it failed before its stats collector existed."""
    try:
        stats = crawler.stats
    except RuntimeError:  # Scrapy >= 2.19: a late attribute not set yet
        return {}
    return dict(stats.get_stats()) if stats is not None else {}


def _connect_recorders(crawler: Crawler, result: CrawlResult) -> None:
    def engine_started() -> None:
        result.middlewares = list(crawler.engine.downloader.middleware.middlewares)

    def request_reached_downloader(request: Request, spider: Spider) -> None:
        result.downloaded_requests.append(request)

    def robots_parsed(robotparser: Any, request: Request) -> None:
        result.robots_parsed.append((robotparser, request))

    def spider_closed(spider: Spider, reason: str) -> None:
        result.spider_closed_at = time.monotonic()
        result.close_reason = reason

    result.receivers.extend(
        [engine_started, request_reached_downloader, robots_parsed, spider_closed]
    )
    crawler.signals.connect(engine_started, signal=signals.engine_started)
    crawler.signals.connect(request_reached_downloader, signal=signals.request_reached_downloader)
    if hasattr(signals, "robots_parsed"):
        crawler.signals.connect(robots_parsed, signal=signals.robots_parsed)
    crawler.signals.connect(spider_closed, signal=signals.spider_closed)
