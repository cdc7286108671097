"""A store chosen by REP9309_STORE drives the crawl: the interface is asynchronous, and a
store that really waits (as a network store does) changes timing, never decisions.
Held requests survive a round trip through Scrapy's request serialisation."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_rep9309.integration.requestcodec import RequestCodec
from scrapy_rep9309.policy.record import OriginRecord
from scrapy_rep9309.storage.base import HeldRequest, StoredRecord
from scrapy_rep9309.storage.memory import MemoryStore
from tests.crawl import Wait, ours_class, run_crawl
from tests.servers import Reply, ServerPool, rules

PRIVATE = "User-agent: *\nDisallow: /private\n"


class SlowStore(MemoryStore):
    """The memory store behind a 20 ms round trip per call, counting calls; held
    requests go through Scrapy's serialisation as a network store's would."""

    keeps_held_requests = True

    calls: Counter[str] = Counter()
    opened = 0
    closed = 0

    async def open(self, codec: Any, on_change: Any) -> None:
        type(self).opened += 1
        self._codec = codec

    async def close(self) -> None:
        type(self).closed += 1

    async def _trip(self, name: str) -> None:
        type(self).calls[name] += 1
        await asyncio.sleep(0.02)

    async def load(self, key: str) -> StoredRecord | None:
        await self._trip("load")
        return await super().load(key)

    async def save(self, key: str, record: OriginRecord, expected: int | None) -> int | None:
        await self._trip("save")
        return await super().save(key, record, expected)

    async def acquire_lease(self, key: str, owner: str, ttl: float) -> bool:
        await self._trip("acquire_lease")
        return await super().acquire_lease(key, owner, ttl)

    async def hold(self, key: str, held: HeldRequest) -> None:
        await self._trip("hold")
        encoded = HeldRequest(held.token, held.deadline, self._codec.encode(held.request))
        await super().hold(key, encoded)

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        await self._trip("take_held")
        taken = await super().take_held(key, tokens)
        return [
            HeldRequest(held.token, held.deadline, self._codec.decode(held.request))
            for held in taken
        ]


@deferred_f_from_coro_f
async def test_a_store_that_waits_changes_timing_not_decisions(servers: ServerPool) -> None:
    answering = servers.add(rules(PRIVATE, delay=0.2))
    failing = servers.add([Reply(503, "busy"), rules(PRIVATE)])
    paths = ["/a", "/b", "/private/c"]
    plan = [*answering.urls(paths), *failing.urls(paths), Wait(0.5), answering.url("/d")]
    SlowStore.calls.clear()
    SlowStore.opened = SlowStore.closed = 0
    store = f"{__name__}.{SlowStore.__name__}"

    result = await run_crawl(plan, {"REP9309_STORE": store, "REP9309_RETRY_DELAY": 0.3})

    allowed = {site.url(path) for site in (answering, failing) for path in ("/a", "/b")}
    assert result.urls == allowed | {answering.url("/d")}
    assert result.forbidden_urls == {answering.url("/private/c"), failing.url("/private/c")}
    assert len(answering.robots_fetches) == 1
    assert len(failing.robots_fetches) == 2
    assert (SlowStore.opened, SlowStore.closed) == (1, 1)
    assert SlowStore.calls["hold"] == 6
    assert SlowStore.calls["acquire_lease"] == 3, "one lease per fetch"
    assert SlowStore.calls["save"] == 3
    assert result.stat("robotstxt/deferred") == result.stat("robotstxt/deferred/released") == 6
    middleware = result.middleware(ours_class())
    assert isinstance(middleware.store, SlowStore)


class CountingMemoryStore(MemoryStore):
    """The default store, counting the calls that give it copies of held requests."""

    holds = 0
    takes = 0

    async def hold(self, key: str, held: HeldRequest) -> None:
        type(self).holds += 1
        await super().hold(key, held)

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        type(self).takes += 1
        return await super().take_held(key, tokens)


@deferred_f_from_coro_f
async def test_the_memory_store_gets_no_copy_of_held_requests(servers: ServerPool) -> None:
    """keeps_held_requests = False reaches the driver through the wrapper that waits out
    store outages: in one process the driver's own copy is the only one read."""
    site = servers.add(rules(PRIVATE, delay=0.2))
    CountingMemoryStore.holds = CountingMemoryStore.takes = 0
    store = f"{__name__}.{CountingMemoryStore.__name__}"

    result = await run_crawl(site.urls(["/a", "/b", "/private/c"]), {"REP9309_STORE": store})

    assert result.urls == {site.url("/a"), site.url("/b")}
    assert result.forbidden_urls == {site.url("/private/c")}
    assert result.stat("robotstxt/deferred") == result.stat("robotstxt/deferred/released") == 3
    assert (CountingMemoryStore.holds, CountingMemoryStore.takes) == (0, 0)


class _Spider(Spider):
    name = "codec"

    def parse_item(self, response: Any) -> None:
        pass

    def on_error(self, failure: Any) -> None:
        pass


def test_held_requests_round_trip_through_scrapy_serialisation() -> None:
    spider = _Spider()
    request = Request(
        "https://a.com/x?y=1",
        callback=spider.parse_item,
        errback=spider.on_error,
        priority=7,
        meta={"depth": 3, "proxy": "http://p:8080"},
        cb_kwargs={"page": 2},
        dont_filter=True,
    )
    codec = RequestCodec(spider)

    copy = codec.decode(codec.encode(request))

    assert copy.url == request.url
    assert copy.callback == spider.parse_item and copy.errback == spider.on_error
    assert (copy.priority, copy.meta, copy.cb_kwargs) == (7, request.meta, {"page": 2})
    assert copy.dont_filter
