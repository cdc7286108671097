"""A request sent back to be held never waits inside the downloader, and never bounces forever."""

from __future__ import annotations

from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.crawl import Wait, run_crawl
from tests.servers import ServerPool, rules

ALLOW_ALL = "User-agent: *\n"


@deferred_f_from_coro_f
async def test_requeued_copies_whose_rules_expire_again_do_not_take_a_download_slot(
    servers: ServerPool,
) -> None:
    """Queued requests outlive the 0.5 s TTL and are sent back to be held; the copies,
    released together, wait in the scheduler past the TTL again. Waiting inside the
    downloader for the (slow) third robots.txt would take one of the two download slots
    and stall the other origin; each copy is decided by the robots.txt it was held for."""
    site = servers.add(
        [rules(ALLOW_ALL), rules(ALLOW_ALL), rules(ALLOW_ALL, delay=1.5)], page_delay=0.3
    )
    other = servers.add(page_delay=0.05)
    plan = [site.url("/page/0"), Wait(0.2), *site.urls([f"/page/{n}" for n in range(1, 9)])]
    plan += [Wait(0.9), *other.urls([f"/o/{n}" for n in range(10)])]
    settings = {
        "REP9309_CACHE_TTL": 0.5,
        "CONCURRENT_REQUESTS": 2,
        # Both places may fetch robots.txt (by default one: half of CONCURRENT_REQUESTS),
        # so the other origin's needs no wait for the slow one's to end.
        "REP9309_CONCURRENT_FETCHES": 2,
        "DOWNLOAD_TIMEOUT": 3,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }

    result = await run_crawl(plan, settings)

    assert result.failures == []
    assert len(result.urls) == 9 + 10
    assert result.stat("robotstxt/requeued") >= 1
    assert len(site.robots_fetches) == 3
    slow_answer = site.robots_fetches[2].answered
    assert slow_answer is not None
    assert max(entry.received for entry in other.page_requests) < slow_answer, (
        "a requeued copy waited for the slow robots.txt in a download slot"
    )
    assert result.stat("robotstxt/deferred") == (
        result.stat("robotstxt/deferred/released") + result.stat("robotstxt/deferred/expired")
    )
    assert undocumented_stats(set(result.stats)) == set()
