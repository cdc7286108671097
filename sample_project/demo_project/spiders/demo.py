"""The ``demo`` spider: crawls the local demo web and prints what robots.txt did.

Run ``scrapy crawl demo`` (this plugin), ``scrapy crawl demo -s
DEMO_MIDDLEWARE=builtin`` (Scrapy's built-in middleware) or ``scrapy crawl
demo -s ROBOTSTXT_OBEY=False`` and compare the tables.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as BuiltinMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future

from demo_project.localweb import DemoWeb, build_demo_web
from demo_project.middleware_switch import apply_demo_middleware
from demo_project.summary import OriginRow, render_server_log, render_table

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

FORBIDDEN_MESSAGE = "Forbidden by robots.txt"


class DemoSpider(Spider):
    name = "demo"

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        apply_demo_middleware(settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.response_received, signal=signals.response_received)
        # Fixed ports (DEMO_PORT_BASE) make a paused crawl (JOBDIR) find the same origins
        # when it resumes; DEMO_SLOW_DELAY leaves time to press Ctrl-C while it waits.
        spider.web = build_demo_web(
            slow_delay=crawler.settings.getfloat("DEMO_SLOW_DELAY", 3.0),
            port_base=crawler.settings.getint("DEMO_PORT_BASE", 0),
        )
        return spider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.web: DemoWeb = build_demo_web()
        self.pages: Counter[str] = Counter()
        self.forbidden: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.robots_statuses: dict[str, list[int]] = {}

    async def start(self) -> AsyncIterator[Any]:
        self.web.start()
        for name, site in self.web.sites.items():
            self.logger.info("demo web: %-6s %s  %s", name, self.web.origin(name), site.about)
        yield Request(self.web.url("shop"), errback=self.refused)

    def parse(self, response: Response) -> Any:
        self.pages[self._origin(response.url)] += 1
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse, errback=self.refused)

    def refused(self, failure: Failure) -> None:
        """Count requests that never became pages: forbidden by robots.txt, or failed."""
        url = failure.request.url  # type: ignore[attr-defined]
        if failure.check(IgnoreRequest) and FORBIDDEN_MESSAGE in str(failure.value):
            self.forbidden[self._origin(url)] += 1
        else:
            self.failed[self._origin(url)] += 1
            self.logger.warning("%s: %s", url, failure.getErrorMessage())

    def response_received(self, response: Response, request: Request, **kwargs: Any) -> None:
        """Note robots.txt statuses as any middleware's fetches return (for the built-in)."""
        first_url = request.meta.get("redirect_urls", [request.url])[0]
        if first_url.endswith("/robots.txt"):
            self.robots_statuses.setdefault(self._origin(first_url), []).append(response.status)

    async def closed(self, reason: str) -> None:
        print(self.summary())
        await maybe_deferred_to_future(self.web.stop())

    def summary(self) -> str:
        handler, reports = self._robots_handler()
        rows = [self._row(name, reports) for name, site in self.web.sites.items() if site.pages]
        return "\n".join(
            [
                "",
                f"robots.txt handled by: {handler}",
                "",
                render_table(rows),
                "",
                "What each server saw, in order:",
                render_server_log(self.web),
                "",
            ]
        )

    def _row(self, name: str, reports: dict[str, Any] | None) -> OriginRow:
        origin = self.web.origin(name)
        if reports is not None:
            report = reports.get(origin)
            robots = _describe_report(report)
            deferred = str(report.deferred) if report else "0"
            released = str(report.released) if report else "0"
        else:
            robots = self._describe_observed(origin)
            deferred = released = "-"
        return OriginRow(
            site=name,
            origin=origin,
            robots=robots,
            pages=str(self.pages[origin]),
            forbidden=str(self.forbidden[origin]),
            deferred=deferred,
            released=released,
            failed=str(self.failed[origin]),
        )

    def _robots_handler(self) -> tuple[str, dict[str, Any] | None]:
        """Which robots.txt middleware ran, and this plugin's per-origin reports if it did."""
        from scrapy_rep9309 import RobotsTxtMiddleware

        assert self.crawler.engine is not None
        for middleware in self.crawler.engine.downloader.middleware.middlewares:
            if isinstance(middleware, RobotsTxtMiddleware):
                reports = {report.origin: report for report in middleware.origin_reports()}
                return "scrapy_rep9309.RobotsTxtMiddleware (RFC 9309)", reports
            if isinstance(middleware, BuiltinMiddleware):
                return "Scrapy's built-in RobotsTxtMiddleware (every status parsed)", None
        return "nothing (ROBOTSTXT_OBEY is False)", None

    def _describe_observed(self, origin: str) -> str:
        statuses = self.robots_statuses.get(origin)
        if not statuses:
            return "not fetched"
        return "HTTP " + ",".join(str(status) for status in statuses)

    def _origin(self, url: str) -> str:
        site = self.web.site_of(url)
        return self.web.origin(site.name) if site else url


def _describe_report(report: Any) -> str:
    if report is None:
        return "not fetched"
    if report.status is None:
        return report.outcome
    return f"{report.outcome} ({report.status})"
