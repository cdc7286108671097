"""An answer whose handling raises is retried like an unreachable one; nothing stays stuck."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_rep9309.integration import driver
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from tests._readme import undocumented_stats
from tests.crawl import run_crawl
from tests.servers import ServerPool, rules

PRIVATE_RULES = "User-agent: *\nDisallow: /private\n"
#: A first line our stand-in for a parser bug chokes on.
POISON = "# poison\n"


class _ParserWithABug(RobotsTxt):
    """The real parser, except that it raises on bodies starting with POISON."""

    @classmethod
    def parse(cls, body: bytes | str, max_size: int = 512000) -> RobotsTxt:
        raw = body.encode() if isinstance(body, str) else body
        if raw.startswith(POISON.encode()):
            raise ValueError("a parser bug")
        return RobotsTxt.parse(body, max_size=max_size)


class RaisingRobotsParsedReceiver:
    """An extension whose ``robots_parsed`` receiver always raises."""

    calls = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RaisingRobotsParsedReceiver:
        extension = cls()
        crawler.signals.connect(extension.robots_parsed, signal=signals.robots_parsed)
        return extension

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        type(self).calls += 1
        raise RuntimeError("a robots_parsed receiver bug")


class DupeFilterWithABug(RFPDupeFilter):
    """A user's duplicate filter that raises on one kind of URL."""

    def request_seen(self, request: Request) -> bool:
        if "/bad/" in request.url:
            raise RuntimeError("a duplicate filter bug")
        return super().request_seen(request)


@deferred_f_from_coro_f
async def test_an_answer_that_fails_to_be_handled_is_retried_not_stuck(
    servers: ServerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Our own parser is swapped for one with a bug (the contract is that it never
    # raises, so no real body can make it): Scrapy itself is untouched.
    monkeypatch.setattr(driver, "RobotsTxt", _ParserWithABug)
    site = servers.add([rules(POISON + PRIVATE_RULES), rules(PRIVATE_RULES)])
    public, private = site.url("/public/1"), site.url("/private/1")

    # A defer timeout far beyond the retry delay, so the two cannot be confused on a
    # loaded machine.
    result = await run_crawl(
        [public, private], {"REP9309_RETRY_DELAY": 0.3, "REP9309_DEFER_TIMEOUT": 20}
    )

    assert len(site.robots_fetches) == 2, "retried after the retry delay"
    assert result.urls == {public}
    assert result.forbidden_urls == {private}
    assert result.stat("robotstxt/answer_errors") == 1
    assert result.stat("robotstxt/deferred/expired") == 0
    assert result.duration < 10, "held requests waited for the retry, not REP9309_DEFER_TIMEOUT"
    errors = [
        record
        for record in result.logs
        if record.levelno >= logging.ERROR and record.name.startswith("scrapy_rep9309")
    ]
    assert len(errors) == 1, [record.getMessage() for record in errors]
    assert site.base in errors[0].getMessage()
    assert errors[0].exc_info is not None, "logged with its traceback"
    assert undocumented_stats(set(result.stats)) == set()


@deferred_f_from_coro_f
async def test_a_raising_robots_parsed_receiver_breaks_nothing(servers: ServerPool) -> None:
    if not hasattr(signals, "robots_parsed"):
        pytest.skip("this Scrapy has no robots_parsed signal (added in 2.18)")
    site = servers.add(rules(PRIVATE_RULES))
    public, private = site.url("/public/1"), site.url("/private/1")
    RaisingRobotsParsedReceiver.calls = 0
    extension = f"{__name__}.{RaisingRobotsParsedReceiver.__name__}"

    result = await run_crawl([public, private], {"EXTENSIONS": {extension: 0}})

    assert RaisingRobotsParsedReceiver.calls == 1
    assert result.urls == {public}
    assert result.forbidden_urls == {private}
    assert result.stat("robotstxt/answer_errors") == 0, "Scrapy's send_catch_log caught it"
    assert len(site.robots_fetches) == 1
    assert any(
        record.levelno == logging.ERROR and record.exc_info is not None
        for record in result.logs
        if record.name.startswith("scrapy")
    ), "Scrapy logged the receiver's error"


@deferred_f_from_coro_f
async def test_a_released_request_that_fails_to_schedule_does_not_take_the_others_down(
    servers: ServerPool,
) -> None:
    site = servers.add(rules(PRIVATE_RULES, delay=0.2))
    good = site.urls(["/page/1", "/page/2"])
    bad = site.url("/bad/1")
    dupefilter = f"{__name__}.{DupeFilterWithABug.__name__}"

    result = await run_crawl([good[0], bad, good[1]], {"DUPEFILTER_CLASS": dupefilter})

    assert result.urls == set(good)
    assert result.stat("robotstxt/deferred/released") == 3
    assert result.stat("robotstxt/answer_errors") == 0
    assert len(site.robots_fetches) == 1
    errors = [r for r in result.logs if r.levelno == logging.ERROR and r.exc_info is not None]
    assert any(bad in record.getMessage() for record in errors)
