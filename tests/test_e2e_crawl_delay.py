"""REP9309_CRAWL_DELAY turns an origin's Crawl-delay into its slot's minimum delay."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request
from scrapy.utils.defer import (
    deferred_f_from_coro_f,
)

from tests.crawl import NO_RANDOM_DELAY, Wait, run_crawl
from tests.pipelines import DOWNLOADING_AT_OPEN
from tests.servers import ServerPool, rules

if TYPE_CHECKING:
    pass

PAGES = [f"/page/{n}" for n in range(4)]


@pytest.mark.parametrize(
    ("robots_delay", "settings", "min_gap", "max_gap"),
    [
        (0.5, {"REP9309_CRAWL_DELAY": True}, 0.45, 1.0),
        (30, {"REP9309_CRAWL_DELAY": True, "REP9309_CRAWL_DELAY_MAX": 0.3}, 0.25, 0.8),
        (0.5, {}, 0.0, 0.2),
    ],
    ids=["applied", "capped", "off-by-default"],
)
@deferred_f_from_coro_f
async def test_crawl_delay_spaces_page_downloads(
    servers: ServerPool,
    robots_delay: float,
    settings: dict[str, Any],
    min_gap: float,
    max_gap: float,
) -> None:
    site = servers.add(rules(f"User-agent: *\nCrawl-delay: {robots_delay}\n"))

    result = await run_crawl(site.urls(PAGES), {**NO_RANDOM_DELAY, **settings})

    assert len(result.responses) == len(PAGES)
    times = sorted(entry.received for entry in site.page_requests)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert all(min_gap <= gap <= max_gap for gap in gaps), gaps


@deferred_f_from_coro_f
async def test_crawl_delay_reaches_a_download_slot_not_made_yet(servers: ServerPool) -> None:
    """Pages with a ``download_slot`` of their own: no download made that slot before the
    first page (robots.txt went through the origin's), so the delay is set on the slot
    as the downloader makes it (on Scrapy 2.13 making it used to fail with a TypeError)."""
    site = servers.add(rules("User-agent: *\nCrawl-delay: 0.5\n"))
    plan = [Request(url, meta={"download_slot": "pages"}) for url in site.urls(PAGES)]

    result = await run_crawl(plan, {**NO_RANDOM_DELAY, "REP9309_CRAWL_DELAY": True})

    assert len(result.responses) == len(PAGES), result.failures
    times = sorted(entry.received for entry in site.page_requests)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert all(0.45 <= gap <= 1.0 for gap in gaps), gaps


#: Scrapy's delay jitter, wide: draws from 0.1 to 1.9 times the delay (0.5 to 1.5 before 2.19).
WIDE_JITTER = (
    {"DOWNLOAD_DELAY_JITTER": 0.9}
    if "RANDOMIZE_DOWNLOAD_DELAY" not in NO_RANDOM_DELAY
    else {"RANDOMIZE_DOWNLOAD_DELAY": True}
)


@pytest.mark.parametrize(
    "settings",
    [WIDE_JITTER, {"AUTOTHROTTLE_ENABLED": True, "AUTOTHROTTLE_START_DELAY": 1.0}],
    ids=["jitter", "autothrottle"],
)
@deferred_f_from_coro_f
async def test_crawl_delay_is_a_minimum_gap_under_jitter_and_autothrottle(
    servers: ServerPool, settings: dict[str, Any]
) -> None:
    """Scrapy draws each gap between 1 - jitter and 1 + jitter times the slot's delay, and
    AutoThrottle lowers the delay after every response (to a few milliseconds against a
    local server): neither may bring two requests closer than the Crawl-delay."""
    site = servers.add(rules("User-agent: *\nCrawl-delay: 1\n"))
    pages = [f"/page/{n}" for n in range(7)]

    result = await run_crawl(site.urls(pages), {"REP9309_CRAWL_DELAY": True, **settings})

    assert len(result.responses) == len(pages)
    times = sorted(entry.received for entry in site.page_requests)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    # 0.75: room for a request that reached the server late, far above a draw of 0.1.
    assert min(gaps) >= 0.75, gaps


@deferred_f_from_coro_f
async def test_crawl_delay_holds_in_a_slot_shared_with_another_origin(servers: ServerPool) -> None:
    """Two origins on one host (two ports) share Scrapy's download slot: A states
    Crawl-delay 1.5, B none and answers slowly. AutoThrottle lowers the slot's delay on
    B's responses too; the slot keeps A's Crawl-delay all the same."""
    a = servers.add(rules("User-agent: *\nCrawl-delay: 1.5\n"))
    b = servers.add(host=a.host, page_delay=1.6)
    plan: list[Any] = [a.url("/a/first"), b.url("/b/first"), Wait(4)]
    for n in range(3):
        plan += [b.url(f"/b/{n}"), *a.urls([f"/a/{n}-0", f"/a/{n}-1"])]
    settings = {
        "REP9309_CRAWL_DELAY": True,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 0.5,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 8,
        "DOWNLOAD_TIMEOUT": 10,
    }

    result = await run_crawl(plan, settings)

    assert len(result.responses) == 11
    times = sorted(entry.received for entry in a.page_requests)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 1.2, gaps


@deferred_f_from_coro_f
async def test_crawl_delay_spaces_downloads_made_before_spider_opened(
    servers: ServerPool,
) -> None:
    """An item pipeline downloads two pages in its ``open_spider``, before the middleware
    hears ``spider_opened``: the origin's Crawl-delay keeps them apart like any others
    (it used to be set up at ``spider_opened``, and they went out back to back)."""
    site = servers.add(rules("User-agent: *\nCrawl-delay: 1.5\n"))
    settings = {
        **NO_RANDOM_DELAY,
        "REP9309_CRAWL_DELAY": True,
        "PIPELINE_URLS": site.urls(["/config/0", "/config/1"]),
        "ITEM_PIPELINES": DOWNLOADING_AT_OPEN,
    }

    result = await run_crawl([], settings)

    times = [entry.received for entry in site.page_requests]
    assert [entry.path for entry in site.page_requests] == ["/config/0", "/config/1"]
    assert times[1] - times[0] >= 1.2, times
    assert result.stats.get("robotstxt/forbidden", 0) == 0
