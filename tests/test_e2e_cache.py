"""Cached rules expire (TTL, Cache-Control), are evicted (LRU), or are used stale."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.crawl import Wait, run_crawl
from tests.servers import Reply, ServerPool, rules

A_FORBIDDEN = "User-agent: *\nDisallow: /a\n"
B_FORBIDDEN = "User-agent: *\nDisallow: /b\n"


@pytest.mark.parametrize(
    ("ttl", "cache_control"),
    [(1, None), (86400, "max-age=1"), (1, "max-age=3600")],
    ids=["ttl", "max-age-shortens", "max-age-never-lengthens"],
)
@deferred_f_from_coro_f
async def test_expired_rules_are_refetched_and_applied(
    servers: ServerPool, ttl: float, cache_control: str | None
) -> None:
    headers = {"Cache-Control": cache_control} if cache_control else {}
    site = servers.add([rules(B_FORBIDDEN, headers=headers), rules(A_FORBIDDEN)])
    before = site.urls(["/a/1", "/b/1"])
    after = site.urls(["/a/2", "/b/2"])

    result = await run_crawl([*before, Wait(1.5), *after], {"REP9309_CACHE_TTL": ttl})

    assert len(site.robots_fetches) == 2
    assert result.urls == {site.url("/a/1"), site.url("/b/2")}
    assert result.forbidden_urls == {site.url("/b/1"), site.url("/a/2")}
    assert result.stat("robotstxt/refreshed") >= 1
    assert undocumented_stats(set(result.stats)) == set()


@deferred_f_from_coro_f
async def test_least_recently_used_origin_is_evicted_and_refetched(servers: ServerPool) -> None:
    first = servers.add(rules(A_FORBIDDEN))
    second = servers.add(rules(B_FORBIDDEN))
    plan = [
        first.url("/b/1"),
        Wait(0.4),
        second.url("/a/1"),
        Wait(0.4),
        first.url("/b/2"),
        first.url("/a/2"),
    ]

    result = await run_crawl(plan, {"REP9309_CACHE_SIZE": 1})

    assert len(first.robots_fetches) == 2
    assert len(second.robots_fetches) == 1
    assert result.stat("robotstxt/evicted") >= 1
    assert undocumented_stats(set(result.stats)) == set()
    assert result.urls == {first.url("/b/1"), second.url("/a/1"), first.url("/b/2")}
    assert result.forbidden_urls == {first.url("/a/2")}


@deferred_f_from_coro_f
async def test_stale_copy_used_while_refresh_is_unreachable(servers: ServerPool) -> None:
    site = servers.add([rules(A_FORBIDDEN), Reply(503, "busy")])
    before = site.urls(["/a/1", "/b/1"])
    after = site.urls(["/a/2", "/b/2"])

    result = await run_crawl(
        [*before, Wait(1.5), *after], {"REP9309_CACHE_TTL": 1, "REP9309_DEFER_TIMEOUT": 20}
    )

    assert len(site.robots_fetches) >= 2
    assert result.urls == {site.url("/b/1"), site.url("/b/2")}
    assert result.forbidden_urls == {site.url("/a/1"), site.url("/a/2")}
    assert result.stat("robotstxt/deferred/expired") == 0
    assert result.duration < 12, "the stale rules answer at once; nothing waits for expiry"
