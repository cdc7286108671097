"""REP9309_CRAWL_DELAY turns an origin's Crawl-delay into its slot's minimum delay."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from scrapy import Request
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import NO_RANDOM_DELAY, run_crawl
from tests.servers import ServerPool, rules

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
