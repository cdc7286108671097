"""``scrapy robots URL [URL ...]``: fetch robots.txt as a crawl would, and explain URLs.

Unlike ``python -m scrapy_rep9309 check``, the robots.txt goes through a real
crawler and engine with the project's settings (user agent, proxy and download
middlewares, timeouts), fetched by the middleware's own ``fetch_robots_txt``:
what this prints is what the middleware would see.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.utils.conf import build_component_list
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.misc import load_object
from scrapy.utils.project import inside_project
from scrapy.utils.spider import DefaultSpider, spidercls_for_request
from twisted.internet.defer import DeferredList
from twisted.internet.task import LoopingCall

from scrapy_rep9309.integration.crawlagent import crawl_user_agent
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.policy.record import AVAILABLE
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.tools.explain import (
    as_sent,
    describe_fetch,
    describe_licenses,
    describe_user_agent,
    exit_status,
    judge,
)

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from scrapy_rep9309.policy.fetchresult import FetchResult
    from scrapy_rep9309.tools.explain import Verdict

logger = logging.getLogger(__name__)

EXIT_FAILED = 2
PROGRESS_INTERVAL = 5.0


class OriginFetches:
    """Fetches each origin's robots.txt through a crawler's engine, concurrently, with progress."""

    def __init__(self, crawler: Crawler, origins: list[Origin]) -> None:
        from scrapy_rep9309.integration.settings import Rep9309Settings

        self.crawler = crawler
        self.origins = origins
        self.results: dict[Origin, FetchResult] = {}
        self.failures: dict[Origin, str] = {}
        self.settings = Rep9309Settings.from_settings(_obeying(crawler.settings))

    async def run(self) -> None:
        started = time.monotonic()
        progress = LoopingCall(self._log_waiting, started)
        progress.start(PROGRESS_INTERVAL, now=False)
        try:
            fetches = [deferred_from_coro(self._fetch(origin)) for origin in self.origins]
            await maybe_deferred_to_future(DeferredList(fetches, consumeErrors=True))
        finally:
            progress.stop()

    async def _fetch(self, origin: Origin) -> None:
        from scrapy_rep9309.integration.fetch import fetch_robots_txt

        logger.info("Fetching %s", origin.robots_url)
        try:
            result = await fetch_robots_txt(self.crawler, origin, self.settings)
        except Exception as exc:
            logger.exception("Fetching %s failed", origin.robots_url)
            self.failures[origin] = f"{type(exc).__qualname__}: {exc}"
            return
        self.results[origin] = result
        logger.info(
            "Fetched %s: %s (%s)",
            origin.robots_url,
            result.outcome,
            result.error if result.status is None else f"status {result.status}",
        )

    def _log_waiting(self, started: float) -> None:
        waiting = [origin.robots_url for origin in self.origins if not self._done(origin)]
        if waiting:
            logger.info(
                "Still waiting for %s (%.0f s)", ", ".join(waiting), time.monotonic() - started
            )

    def _done(self, origin: Origin) -> bool:
        return origin in self.results or origin in self.failures


def _obeying(settings: BaseSettings) -> BaseSettings:
    """The settings with ROBOTSTXT_OBEY on: the report says what obeying *would* do."""
    copy = settings.copy()
    copy.frozen = False  # a private deep copy: the crawler's own settings stay frozen
    copy.set("ROBOTSTXT_OBEY", True, priority="cmdline")
    return copy


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_LEVEL": "INFO"}

    def syntax(self) -> str:
        return "[options] <url> [<url> ...]"

    def short_desc(self) -> str:
        return "Fetch robots.txt as scrapy-rep9309 would and explain why URLs are allowed"

    def long_desc(self) -> str:
        return (
            "Fetch the robots.txt of each URL's origin through Scrapy's engine with the "
            "project's settings and scrapy-rep9309's rules (redirects, status handling, "
            "size limit), report the fetch outcome, and say for each URL whether it is "
            "allowed, which rule decided, which group applied and its usage preferences, "
            "with REP9309_EXTRA_USER_AGENTS and REP9309_REQUIRE_USAGE applied as in a "
            "crawl. Exit status: 0 when all would be downloaded, 1 when any is disallowed "
            "or refused (an unreachable robots.txt disallows them), 2 on bad input or "
            "when the fetch could not be made at all."
        )

    def add_options(self, parser: ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--spider", dest="spider", help="use this spider's settings")
        parser.add_argument(
            "--user-agent",
            dest="user_agent",
            metavar="UA",
            # No colon in it: Scrapy's help formatter turns a line ending in one into a
            # title-cased, underlined heading.
            help="product token or User-Agent to decide for; by default ROBOTSTXT_USER_AGENT, "
            "else the User-Agent of DEFAULT_REQUEST_HEADERS, else USER_AGENT",
        )

    def run(self, args: list[str], opts: Namespace) -> None:
        if not args:
            raise UsageError("give at least one URL")
        origins = _origins_of(args)
        assert self.crawler_process is not None
        spidercls = self._spider_class(args[0], opts.spider)
        fetches: list[OriginFetches] = []
        self.crawler_process.crawl(_robots_spider(spidercls, list(origins), fetches.append))
        self.crawler_process.start()
        if not fetches or self.crawler_process.bootstrap_failed:
            self.exitcode = EXIT_FAILED
            return
        self.exitcode = self._report(fetches[0], origins, opts.user_agent)

    def _spider_class(self, url: str, name: str | None) -> type[Spider]:
        assert self.crawler_process is not None
        loader = self.crawler_process.spider_loader
        if name:
            try:
                return loader.load(name)
            except KeyError:
                message = f"no spider named {name!r} in this project"
                raise UsageError(message, print_help=False) from None
        return spidercls_for_request(loader, Request(url), DefaultSpider)

    def _report(
        self, fetches: OriginFetches, origins: dict[Origin, list[str]], user_agent: str | None
    ) -> int:
        agent = (
            user_agent
            or fetches.settings.user_agent
            or crawl_user_agent(fetches.crawler.settings, fetches.crawler.spider)
        )
        extra = fetches.settings.extra_user_agents
        required = fetches.settings.require_usage
        verdicts: list[Verdict] = []
        blocks: list[str] = []
        for origin, urls in origins.items():
            if origin in fetches.failures:
                blocks.append(
                    f"robots.txt  {origin.robots_url}\n  error     {fetches.failures[origin]}"
                )
                continue
            result = fetches.results[origin]
            rules = (
                RobotsTxt.parse(result.body, max_size=fetches.settings.max_size)
                if result.outcome == AVAILABLE
                else None
            )
            lines = [
                *describe_fetch(origin.robots_url, result),
                *describe_licenses(rules),
                describe_user_agent(agent, rules, extra),
            ]
            for url in urls:
                verdict = judge(url, agent, result.outcome, rules, extra, required)
                verdicts.append(verdict)
                lines += ["", *verdict.lines()]
            blocks.append("\n".join(lines))
        unobeyed = _why_the_project_does_not_obey(fetches.crawler.settings)
        if unobeyed is not None:
            blocks.append(f"note      this project's crawls {unobeyed}: they do not obey this")
        print("\n\n".join(blocks))
        return EXIT_FAILED if fetches.failures else exit_status(verdicts)


def _why_the_project_does_not_obey(settings: BaseSettings) -> str | None:
    """What keeps the project's crawls from obeying what this command says (found by a
    reviewer: with ROBOTSTXT_OBEY off, the report said "disallowed" and nothing more).
    Outside a project nothing is said: there is no crawl to disagree with."""
    if not inside_project():
        return None
    if not settings.getbool("ROBOTSTXT_OBEY"):
        return "have ROBOTSTXT_OBEY = False"
    enabled = build_component_list(settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
    if any(_is_this_middleware(component) for component in enabled):
        return None
    return "do not use scrapy-rep9309's middleware (Scrapy's built-in decides)"


def _is_this_middleware(component: Any) -> bool:
    from scrapy_rep9309.integration.middleware import RobotsTxtMiddleware

    try:
        cls = load_object(component) if isinstance(component, str) else component
    except (ImportError, NameError, ValueError):
        return False
    return isinstance(cls, type) and issubclass(cls, RobotsTxtMiddleware)


def _origins_of(urls: list[str]) -> dict[Origin, list[str]]:
    """URLs grouped by origin, in the order given; UsageError for anything not http(s)."""
    origins: dict[Origin, list[str]] = {}
    for typed in urls:
        url = as_sent(typed)  # the origin and the verdict of what a crawl sends
        origin = Origin.from_url(url)
        if origin is None:
            raise UsageError(f"not an absolute http(s) URL: {typed!r}", print_help=False)
        origins.setdefault(origin, []).append(url)
    return origins


def _robots_spider(
    base: type[Spider], origins: list[Origin], created: Callable[[OriginFetches], Any]
) -> type[Spider]:
    """``base`` (for its settings), whose start fetches the robots.txt files and yields nothing."""

    async def start(self: Spider) -> AsyncIterator[Any]:
        try:
            fetches = OriginFetches(self.crawler, origins)
        except ValueError as exc:  # a bad REP9309_ setting, named in the message
            logger.error("%s", exc)
            return
        created(fetches)
        await fetches.run()
        return
        yield  # an async generator that yields no request

    return type(f"Robots{base.__name__}", (base,), {"start": start, "__module__": __name__})
