"""A slow or failing store changes timing, never the two promises: every held request
ends downloaded, forbidden or errback'd, once, and counted; nothing is fetched without
a usable copy. The driver keeps every held request itself; the store holds a copy.

Found by review: each scenario here lost a request (or fetched with a stale copy) when
the driver waited for the store before it could release, expire or drop a request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Sequence
from typing import Any

from scrapy import Request
from scrapy.core.scheduler import Scheduler
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet import reactor
from twisted.internet.task import deferLater

from scrapy_rep9309.policy.record import AVAILABLE, UNREACHABLE, OriginRecord
from scrapy_rep9309.storage.base import HeldRequest, StoreUnavailable
from scrapy_rep9309.storage.memory import MemoryStore
from tests.crawl import (
    OURS_ENABLED,
    CrawlResult,
    Wait,
    crawl_settings,
    make_crawler,
    run_crawl,
    start_crawl,
)
from tests.servers import Reply, ServerPool, rules

PRIVATE = "User-agent: *\nDisallow: /private\n"


def adds_up(result: CrawlResult) -> bool:
    ends = ("released", "expired", "closed", "saved")
    return result.stat("robotstxt/deferred") == sum(
        result.stat(f"robotstxt/deferred/{end}") for end in ends
    )


class SlowHolds(MemoryStore):
    """A network store: writing a held request takes 0.3 s."""

    keeps_held_requests = True

    delay = 0.3

    async def hold(self, key: str, held: HeldRequest) -> None:
        await asyncio.sleep(self.delay)
        await super().hold(key, held)


class VerySlowHolds(SlowHolds):
    delay = 1.0


class SlowTakes(MemoryStore):
    keeps_held_requests = True

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        await asyncio.sleep(1.0)
        return await super().take_held(key, tokens)


class OneFailedTake(MemoryStore):
    """The store is unreachable for one call."""

    keeps_held_requests = True

    failed = False

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        if not type(self).failed:
            type(self).failed = True
            raise ConnectionError("the store is down for a moment")
        return await super().take_held(key, tokens)


class SlowClosingScheduler(Scheduler):
    """A scheduler whose close() takes a while (e.g. flushing a large JOBDIR queue)."""

    def close(self, reason: str) -> Any:
        super().close(reason)
        return deferLater(reactor, 0.3, lambda: None)


def store(cls: type) -> str:
    return f"{__name__}.{cls.__name__}"


@deferred_f_from_coro_f
async def test_an_origin_is_not_evicted_while_its_request_is_being_stored(
    servers: ServerPool,
) -> None:
    failing = servers.add(Reply(503, "busy"))
    answering = servers.add(rules(PRIVATE))

    result = await run_crawl(
        [failing.url("/a"), answering.url("/b")],
        {
            "REP9309_STORE": store(SlowHolds),
            "REP9309_CACHE_SIZE": 1,
            "REP9309_DEFER_TIMEOUT": 3,
            "REP9309_RETRY_DELAY": 1,
        },
    )

    assert result.urls == {answering.url("/b")}
    assert failing.url("/a") in result.ignored_urls, "the held request reached its errback"
    assert adds_up(result), result.robotstxt_stats()


@deferred_f_from_coro_f
async def test_a_store_write_still_running_at_close_loses_nothing(servers: ServerPool) -> None:
    site = servers.add(rules(PRIVATE, delay=0.5))

    result = await run_crawl(
        [site.url("/a")], {"REP9309_STORE": store(VerySlowHolds), "CLOSESPIDER_TIMEOUT": 0.3}
    )
    await asyncio.sleep(1.2)  # the store finishes the write after the crawl

    assert result.close_reason == "closespider_timeout"
    assert result.failed_urls == {site.url("/a")}, "the held request reached its errback"
    assert adds_up(result), result.robotstxt_stats()


@deferred_f_from_coro_f
async def test_a_release_while_the_store_is_slow_and_the_spider_closes_loses_nothing(
    servers: ServerPool,
) -> None:
    site = servers.add(rules(PRIVATE, delay=0.8))

    result = await run_crawl(
        [site.url("/a")],
        {
            "REP9309_STORE": store(SlowTakes),
            "CLOSESPIDER_TIMEOUT": 0.5,
            "SCHEDULER": f"{__name__}.{SlowClosingScheduler.__name__}",
        },
    )
    await asyncio.sleep(1.2)

    assert result.close_reason == "closespider_timeout"
    assert result.failed_urls == {site.url("/a")}
    assert result.failure_for(site.url("/a")).message == (
        f"Spider closed before {site.url('/a')} could be downloaded"
    )
    assert adds_up(result), result.robotstxt_stats()


@deferred_f_from_coro_f
async def test_a_store_blip_while_releasing_loses_nothing(servers: ServerPool) -> None:
    OneFailedTake.failed = False
    site = servers.add(rules(PRIVATE, delay=0.2))

    result = await run_crawl(
        site.urls(["/a", "/private/b"]), {"REP9309_STORE": store(OneFailedTake)}
    )

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/b")}
    assert adds_up(result), result.robotstxt_stats()


@deferred_f_from_coro_f
async def test_a_retry_keeps_the_triggering_requests_user_agent(servers: ServerPool) -> None:
    site = servers.add([Reply(503, "busy"), rules(PRIVATE)])
    request = Request(site.url("/a"), headers={"User-Agent": "CustomBot/1.0"})

    await run_crawl([request], {"REP9309_RETRY_DELAY": 0.3})

    agents = [entry.headers.get("User-Agent") for entry in site.robots_fetches]
    assert agents == ["CustomBot/1.0", "CustomBot/1.0"]


class AlwaysDown(MemoryStore):
    """A store that never answers, counting the calls that reach it."""

    calls = 0

    async def load(self, key: str) -> Any:
        type(self).calls += 1
        raise StoreUnavailable("down for good")


@deferred_f_from_coro_f
async def test_store_calls_waiting_out_an_outage_stop_when_the_spider_closes(
    servers: ServerPool,
) -> None:
    """The driver's store calls are tried again after 0.5, 1, 2, then every 5 s while the
    store is down, until the spider closes: then they give up (they went on for as long
    as the process lived, calling a store already closed)."""
    site = servers.add(rules(PRIVATE))

    result = await run_crawl(
        [site.url("/a")], {"REP9309_STORE": store(AlwaysDown), "CLOSESPIDER_TIMEOUT": 1}
    )
    calls_at_close = AlwaysDown.calls
    await asyncio.sleep(3.0)  # a call would be due at 3.5 s

    assert result.close_reason == "closespider_timeout"
    assert site.log == [], "nothing was crawled without a copy"
    assert site.url("/a") in result.ignored_urls
    assert calls_at_close >= 2
    assert AlwaysDown.calls == calls_at_close
    assert adds_up(result), result.robotstxt_stats()


class PeerSavesFirst(MemoryStore):
    """Another process stores its own record of an origin just before our first save of
    it (a compare-and-set conflict); ``peer_record`` says what it stores."""

    #: What the store holds at the end, for the test to look at.
    last: MemoryStore | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        type(self).last = self
        self._peer_saved: set[str] = set()

    def peer_record(self, ours: OriginRecord) -> OriginRecord:
        raise NotImplementedError

    async def save(self, key: str, record: OriginRecord, expected: int | None) -> int | None:
        if key not in self._peer_saved:
            self._peer_saved.add(key)
            await super().save(key, self.peer_record(record), expected)
        return await super().save(key, record, expected)


class PeerWritesFirst(PeerSavesFirst):
    """The peer's answer forbids everything and was fetched ``peer_offset`` seconds after
    ours (or before it, when negative)."""

    peer_offset = 1.0

    def peer_record(self, ours: OriginRecord) -> OriginRecord:
        return OriginRecord(
            AVAILABLE,
            200,
            b"User-agent: *\nDisallow: /\n",
            fetched_at=ours.fetched_at + self.peer_offset,
            expires_at=ours.expires_at + self.peer_offset,
        )


class OlderPeerWritesFirst(PeerWritesFirst):
    peer_offset = -100.0


class PeerReachedItWhileWeCouldNot(PeerSavesFirst):
    """Another process stored a fresh answer (Disallow: /private) a second before our
    fetch ended unreachable: it got the lease after ours lapsed (a stalled process)."""

    def peer_record(self, ours: OriginRecord) -> OriginRecord:
        return OriginRecord(
            AVAILABLE,
            200,
            PRIVATE.encode(),
            fetched_at=ours.fetched_at - 1,
            expires_at=ours.fetched_at + 3600,
        )


@deferred_f_from_coro_f
async def test_a_newer_record_stored_first_by_someone_else_decides(servers: ServerPool) -> None:
    """Our save loses the compare-and-set to a newer record: it is adopted, and decides
    the requests our own answer had released (the newest copy decides)."""
    site = servers.add(rules(PRIVATE))

    result = await run_crawl(
        site.urls(["/page/1", "/private/1"]), {"REP9309_STORE": store(PeerWritesFirst)}
    )

    assert result.urls == set()
    assert result.forbidden_urls == set(site.urls(["/page/1", "/private/1"]))
    assert site.page_requests == []
    assert len(site.robots_fetches) == 1
    assert adds_up(result)


@deferred_f_from_coro_f
async def test_an_older_record_stored_first_by_someone_else_is_written_over(
    servers: ServerPool,
) -> None:
    """Our save loses the compare-and-set to an older record: ours is written over it
    and decides."""
    site = servers.add(rules(PRIVATE))

    result = await run_crawl(
        site.urls(["/page/1", "/private/1"]), {"REP9309_STORE": store(OlderPeerWritesFirst)}
    )

    assert result.urls == {site.url("/page/1")}
    assert result.forbidden_urls == {site.url("/private/1")}
    stored = await OlderPeerWritesFirst.last.load(site.base)  # type: ignore[union-attr]
    assert stored is not None and stored.record.body == PRIVATE.encode()
    assert adds_up(result)


class AdoptsAfterTheClose(MemoryStore):
    """A fleet's store whose first look for orphaned requests answers only after the
    spider closed, taking one over (as Redis does when it answers late)."""

    shared = True
    keeps_held_requests = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._looked = False

    async def adopt_orphans(self) -> list[tuple[str, HeldRequest]]:
        if self._looked:
            return []
        self._looked = True
        await asyncio.sleep(1.0)
        orphan = Request("http://127.0.0.9:9/orphan")
        return [("http://127.0.0.9:9", HeldRequest("orphan", time.time() + 60, orphan))]


@deferred_f_from_coro_f
async def test_requests_taken_over_after_the_close_are_left_to_the_fleet(
    servers: ServerPool,
) -> None:
    """They were held by a closed origin machine, which ignores requests: never ended,
    nor counted as left (found by a second reviewer driving the machine at random).
    Counted as taken over and left, they stay in the store for the fleet."""
    site = servers.add(rules(PRIVATE))
    settings = crawl_settings(
        OURS_ENABLED, {"REP9309_STORE": store(AdoptsAfterTheClose), "CLOSESPIDER_TIMEOUT": 0.3}
    )
    crawler = make_crawler(settings)

    await start_crawl(crawler, plan=[Wait(3.0), site.url("/a")], result=CrawlResult(0.0))
    await asyncio.sleep(1.5)

    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    assert stats.get("robotstxt/fleet/adopted") == stats.get("robotstxt/fleet/left") == 1


class PeerFailedJustAfterUs(PeerSavesFirst):
    """Another process, with no copy of its own, stored its failure to reach the server
    (a second after our fetch answered) just before our fresh answer."""

    def peer_record(self, ours: OriginRecord) -> OriginRecord:
        at = ours.fetched_at + 1
        return OriginRecord(UNREACHABLE, 503, b"", at, at, 1, at + 60, "HTTP 503")


@deferred_f_from_coro_f
async def test_our_fresh_answer_stands_over_a_later_failure_stored_first(
    servers: ServerPool,
) -> None:
    """The mirror case (found by the second round): our fresh answer is written over the
    peer's failure, and decides; the fleet keeps a usable copy."""
    site = servers.add(rules(PRIVATE))

    result = await run_crawl(
        [site.url("/page/1"), Wait(1.0), site.url("/page/2"), site.url("/private/2")],
        {"REP9309_STORE": store(PeerFailedJustAfterUs), "REP9309_DEFER_TIMEOUT": 3},
    )

    assert result.urls == {site.url("/page/1"), site.url("/page/2")}
    assert result.forbidden_urls == {site.url("/private/2")}
    stored = await PeerFailedJustAfterUs.last.load(site.base)  # type: ignore[union-attr]
    assert stored is not None and stored.record.outcome == AVAILABLE
    assert len(site.robots_fetches) == 1
    assert adds_up(result)


@deferred_f_from_coro_f
async def test_a_fresh_answer_stored_first_stands_over_our_failure_to_reach_the_server(
    servers: ServerPool,
) -> None:
    """Our fetch ends unreachable (503) a second after another process stored a fresh
    answer: the fresh copy stands and decides (found by a second reviewer: a process
    frozen past its lease wrote its late timeout over the peer's copy, and the fleet had
    none until a third fetch)."""
    site = servers.add(Reply(503, "down"))

    result = await run_crawl(
        site.urls(["/page/1", "/private/1"]),
        {"REP9309_STORE": store(PeerReachedItWhileWeCouldNot), "REP9309_DEFER_TIMEOUT": 5},
    )

    assert result.urls == {site.url("/page/1")}
    assert result.forbidden_urls == {site.url("/private/1")}
    assert len(site.robots_fetches) == 1
    assert adds_up(result)
    assert result.close_summary().startswith(
        "robots.txt: 1 origins (1 available, 0 unavailable, 0 unreachable, 0 pending)"
    ), result.close_summary()
