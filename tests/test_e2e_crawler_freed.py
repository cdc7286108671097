"""A finished crawl leaves nothing behind that keeps its crawler alive: a process that
runs crawl after crawl (``CrawlerRunner`` in a service, a test suite) would otherwise
keep every one of them, with their spiders, requests and robots.txt copies."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._redis import RedisServer
from tests.crawl import (
    ADDON_ENABLED,
    BUILTIN_ENABLED,
    OURS_ENABLED,
    CrawlResult,
    crawl_settings,
    make_crawler,
    start_crawl,
)
from tests.servers import ServerPool, rules


@pytest.mark.parametrize(
    "enable",
    [BUILTIN_ENABLED, OURS_ENABLED, ADDON_ENABLED],
    ids=["builtin-for-comparison", "middleware", "addon"],
)
@deferred_f_from_coro_f
async def test_the_crawler_is_freed_after_the_crawl(
    servers: ServerPool, enable: dict[str, Any]
) -> None:
    """One origin with rules (a robots.txt download, a refresh due in 24 h), one that
    answers 503 (its page held, retries armed, then expired at REP9309_DEFER_TIMEOUT).

    The built-in, for comparison, crawls the first only: its ERROR for the 503 (retries
    given up) names the spider, and pytest keeps that log record."""
    site = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    down = servers.add(rules("", status=503))
    plan = [site.url("/page/1"), site.url("/private/1")]
    if enable is not BUILTIN_ENABLED:
        plan.append(down.url("/page/1"))
    freed, _ = await _crawl_and_let_go(
        crawl_settings(enable, {"REP9309_DEFER_TIMEOUT": 0.5}), plan, site.url("/page/1")
    )

    _assert_freed(freed)


@pytest.mark.parametrize("store", ["jobdir", "redis"])
@deferred_f_from_coro_f
async def test_the_crawler_is_freed_with_a_store(
    servers: ServerPool, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same with the state saved under JOBDIR, and with the Redis store (its
    connection, its notifications, its orphan sweep); the 503 origin's page is still held
    when the spider closes (CLOSESPIDER_TIMEOUT): saved, or left in Redis for the fleet."""
    site = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    down = servers.add(rules("", status=503))
    if store == "jobdir":
        more: dict[str, Any] = {"JOBDIR": str(tmp_path / "job")}
        left_at_close = "robotstxt/deferred/saved"
    else:
        redis: RedisServer = request.getfixturevalue("redis_server")
        more = {"REP9309_STORE": "scrapy_rep9309.RedisStore", "REP9309_REDIS_URL": redis.url}
        left_at_close = "robotstxt/fleet/left"
    plan = [site.url("/page/1"), site.url("/private/1"), down.url("/page/1")]
    freed, stats = await _crawl_and_let_go(
        crawl_settings(OURS_ENABLED, more, {"CLOSESPIDER_TIMEOUT": 1.5}), plan, site.url("/page/1")
    )
    assert stats.get(left_at_close) == 1

    _assert_freed(freed)


async def _crawl_and_let_go(
    settings: dict[str, Any], plan: list[str], downloaded: str
) -> tuple[weakref.ref[Crawler], dict[str, Any]]:
    """Crawl ``plan`` (only ``downloaded`` gets a response); keep nothing of the crawl
    but a weak reference to its crawler, and a copy of its stats."""
    crawler = make_crawler(settings)
    result = CrawlResult(started=0.0)
    await start_crawl(crawler, plan=plan, result=result)
    assert result.urls == {downloaded}
    assert crawler.stats is not None
    return weakref.ref(crawler), dict(crawler.stats.get_stats())


def _assert_freed(freed: weakref.ref[Crawler]) -> None:
    gc.collect()
    assert freed() is None, [type(r).__qualname__ for r in gc.get_referrers(freed())]
