"""Crawls with ``REP9309_STORE = "scrapy_rep9309.RedisStore"`` against a real redis-server:
two crawlers sharing one Redis fetch each robots.txt once between them and release each
other's held requests; a record that does not parse is refetched; Redis unreachable at
start-up stops the crawl; Redis restarted (and emptied) during a crawl: nothing crawled
that the rules in memory forbid, nothing lost, one ERROR, and back to normal."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.connection import Connection, parse_url
from scrapy import Request
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy_redis.connection import get_redis_from_settings
from twisted.internet import reactor

import scrapy_rep9309
from scrapy_rep9309.integration.jobdir import read_state
from scrapy_rep9309.integration.settings import RedisStoreSettings, SettingsError
from scrapy_rep9309.policy.record import AVAILABLE, OriginRecord
from scrapy_rep9309.storage.redisstore import RedisOriginStore
from tests._readme import undocumented_stats
from tests._redis import RedisServer
from tests.crawl import (
    OURS_ENABLED,
    THEN_ACTIONS,
    THEN_META,
    CrawlResult,
    PlanItem,
    Wait,
    crawl_settings,
    make_crawler,
    ours_class,
    run_crawl,
    start_crawl,
)
from tests.servers import Reply, ServerPool, closed_port, hang, rules

PRIVATE = "User-agent: *\nDisallow: /private\n"
STORE = "scrapy_rep9309.RedisStore"


def _redis(server: RedisServer, **more: Any) -> dict[str, Any]:
    return {"REP9309_STORE": STORE, "REP9309_REDIS_URL": server.url, **more}


def _decided(*results: CrawlResult) -> list[str]:
    """Every URL that got a response or a Forbidden errback, in every crawl, repeated."""
    urls = [seen.url for result in results for seen in result.responses]
    return urls + [
        failed.url
        for result in results
        for failed in result.failures
        if failed.url in result.forbidden_urls
    ]


def test_redis_store_is_exported_lazily() -> None:
    import scrapy_rep9309

    assert issubclass(scrapy_rep9309.RedisStore, RedisOriginStore)


@pytest.mark.parametrize(
    ("values", "name"),
    [
        ({"REP9309_REDIS_URL": "http://localhost:6379"}, "REP9309_REDIS_URL"),
        ({"REP9309_REDIS_URL": "redis://"}, "REP9309_REDIS_URL"),
        ({"REP9309_REDIS_URL": "redis://host:port/0"}, "REP9309_REDIS_URL"),
        ({"REP9309_REDIS_URL": 6379}, "REP9309_REDIS_URL"),
        ({"REP9309_REDIS_URL": "redis://localhost:6379/0?db=x"}, "REP9309_REDIS_URL"),
        ({"REP9309_REDIS_URL": "redis://localhost/0?socket_timeout=abc"}, "REP9309_REDIS_URL"),
        ({"REDIS_URL": "redis://localhost/0?health_check_interval=x"}, "REDIS_URL"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"REDIS_PORT": "six"}, "REDIS_PORT"),
        ({"REDIS_HOST": "queue", "REDIS_PORT": 70000}, "REDIS_PORT"),
        ({"REDIS_DB": -1}, "REDIS_DB"),
        ({"REDIS_HOST": "user@queue"}, "REDIS_HOST"),
        ({"REDIS_PARAMS": {"port": "six"}}, r"REDIS_PARAMS\['port'\]"),
        ({"REDIS_PARAMS": {"url": "localhost:6379"}}, r"REDIS_PARAMS\['url'\]"),
        ({"REDIS_PARAMS": {"unix_socket_path": "redis.sock"}}, "unix_socket_path"),
        ({"REDIS_PARAMS": 5}, "REDIS_PARAMS"),
        ({"REP9309_REDIS_PREFIX": ""}, "REP9309_REDIS_PREFIX"),
        ({"REP9309_REDIS_PREFIX": "my prefix"}, "REP9309_REDIS_PREFIX"),
    ],
)
def test_redis_settings_are_checked_at_start_up(values: dict[str, Any], name: str) -> None:
    with pytest.raises(SettingsError, match=name):
        RedisStoreSettings.from_settings(Settings(values))


def test_redis_url_defaults_to_scrapy_redis_then_localhost() -> None:
    assert RedisStoreSettings.from_settings(Settings()).url == "redis://localhost:6379/0"
    shared = Settings({"REDIS_URL": "redis://queue:6379/2"})
    assert RedisStoreSettings.from_settings(shared).url == "redis://queue:6379/2"
    both = Settings({"REDIS_URL": "redis://queue/2", "REP9309_REDIS_URL": "rediss://r:1/0"})
    assert RedisStoreSettings.from_settings(both) == RedisStoreSettings("rediss://r:1/0")
    assert RedisStoreSettings.from_settings(Settings()).prefix == "rep9309"


@pytest.mark.parametrize(
    ("values", "url"),
    [
        ({"REDIS_HOST": "queue"}, "redis://queue:6379/0"),
        ({"REDIS_HOST": "queue", "REDIS_PORT": "6380", "REDIS_DB": 2}, "redis://queue:6380/2"),
        ({"REDIS_HOST": "::1"}, "redis://[::1]:6379/0"),
        (
            {"REDIS_PARAMS": {"host": "q", "port": 7000, "db": 3, "password": "p@ss:w/rd"}},
            "redis://:p%40ss%3Aw%2Frd@q:7000/3",
        ),
        (
            {"REDIS_PARAMS": {"host": "q", "ssl": True, "username": "crawler"}},
            "rediss://crawler:@q:6379/0",
        ),
        ({"REDIS_PARAMS": {"host": "q"}, "REDIS_HOST": "h"}, "redis://h:6379/0"),
        ({"REDIS_PARAMS": {"url": "redis://p/1"}}, "redis://p/1"),
        ({"REDIS_PARAMS": {"url": "redis://p/1"}, "REDIS_URL": "redis://u/2"}, "redis://u/2"),
        ({"REDIS_URL": "redis://u/2", "REDIS_HOST": "h", "REDIS_PORT": 1}, "redis://u:1/2"),
        ({"REDIS_URL": "redis://u:7/2", "REDIS_HOST": "h", "REDIS_PORT": 1}, "redis://u:7/2"),
        (
            {"REDIS_PARAMS": {"unix_socket_path": "/run/redis.sock", "db": 1}},
            "unix:///run/redis.sock?db=1",
        ),
        ({"REDIS_PARAMS": '{"host": "from-json"}'}, "redis://from-json:6379/0"),
        ({"REDIS_PARAMS": {"socket_timeout": 30, "encoding": "utf-8"}}, "redis://localhost:6379/0"),
        ({"REDIS_HOST": "", "REDIS_PORT": None}, "redis://localhost:6379/0"),
        # redis-py takes from the URL what it says, the rest from the other settings
        ({"REDIS_URL": "redis://queue", "REDIS_DB": 5}, "redis://queue/5"),
        (
            {"REDIS_URL": "redis://queue", "REDIS_PARAMS": {"password": "pw", "db": 3}},
            "redis://:pw@queue/3",
        ),
        (
            {"REDIS_URL": "redis://:own@queue/1", "REDIS_PARAMS": {"password": "pw", "db": 3}},
            "redis://:own@queue/1",
        ),
        ({"REDIS_URL": "unix:///run/redis.sock", "REDIS_DB": 4}, "unix:///run/redis.sock?db=4"),
        # a socket wins over a host, as in redis-py
        (
            {"REDIS_PARAMS": {"unix_socket_path": "/run/redis.sock"}, "REDIS_HOST": "h"},
            "unix:///run/redis.sock",
        ),
        ({"REDIS_HOST": "fe80::1%12"}, "redis://[fe80::1%2512]:6379/0"),
        (
            {
                "REDIS_PARAMS": {
                    "host": "q",
                    "ssl": True,
                    "ssl_cert_reqs": "none",
                    "ssl_check_hostname": False,
                }
            },
            "rediss://q:6379/0?ssl_cert_reqs=none&ssl_check_hostname=no",
        ),
        ({"REDIS_PARAMS": {"host": "q", "ssl_cert_reqs": "none"}}, "redis://q:6379/0"),
    ],
)
@pytest.mark.filterwarnings("ignore:Call to '__init__':DeprecationWarning")  # scrapy-redis's
def test_without_redis_url_the_store_uses_where_scrapy_redis_connects(
    values: dict[str, Any], url: str
) -> None:
    """scrapy-redis also reads REDIS_HOST, REDIS_PORT, REDIS_DB and REDIS_PARAMS (the
    single settings win over REDIS_PARAMS) and hands them to redis-py, which takes from a
    URL what it says and the rest from them: a fleet configured that way shares its
    queue's Redis, not one on localhost. The URL means to redis-py what they do."""
    assert RedisStoreSettings.from_settings(Settings(values)).url == url
    assert _where_the_url_connects(url) == _where_scrapy_redis_connects(values)
    with_own = Settings({**values, "REP9309_REDIS_URL": "redis://own:1/0"})
    assert RedisStoreSettings.from_settings(with_own).url == "redis://own:1/0"


def _where_scrapy_redis_connects(values: dict[str, Any]) -> dict[str, Any]:
    """Where the client scrapy-redis builds from ``values`` connects, and how."""
    pool = get_redis_from_settings(Settings(values)).connection_pool
    return _where(pool.connection_kwargs, pool.connection_class.__name__)


def _where_the_url_connects(url: str) -> dict[str, Any]:
    kwargs = parse_url(url)
    return _where(kwargs, kwargs.pop("connection_class", Connection).__name__)


def _where(kwargs: dict[str, Any], connection_class: str) -> dict[str, Any]:
    if kwargs.get("path"):
        where: dict[str, Any] = {"path": kwargs["path"]}
    else:
        where = {"host": kwargs.get("host") or "localhost", "port": int(kwargs.get("port") or 6379)}
    where["db"] = int(kwargs.get("db") or 0)
    where["login"] = (kwargs.get("username") or None, kwargs.get("password") or None)
    where["class"] = connection_class
    if connection_class == "SSLConnection":
        # redis-py's defaults, for the options a URL leaves out
        where["tls"] = (
            kwargs.get("ssl_cert_reqs") or "required",
            kwargs.get("ssl_check_hostname", True),
        )
    return where


@deferred_f_from_coro_f
async def test_unreachable_redis_stops_the_crawl_at_start_up(servers: ServerPool) -> None:
    site = servers.add(rules(PRIVATE))
    url = f"redis://127.0.0.1:{closed_port()}/0"

    with pytest.raises(Exception, match="REP9309_REDIS_URL") as raised:
        await run_crawl([site.url("/a")], {"REP9309_STORE": STORE, "REP9309_REDIS_URL": url})

    assert url in str(raised.value)
    assert site.log == [], "nothing was crawled"


@deferred_f_from_coro_f
async def test_a_crawl_on_the_redis_store(servers: ServerPool, redis_server: RedisServer) -> None:
    answering = servers.add(rules(PRIVATE, delay=0.2))
    failing = servers.add([Reply(503, "busy"), rules(PRIVATE)])
    paths = ["/a", "/b", "/private/c"]
    plan = [*answering.urls(paths), *failing.urls(paths), Wait(0.5), answering.url("/d")]

    result = await run_crawl(plan, _redis(redis_server, REP9309_RETRY_DELAY=0.3))

    allowed = {site.url(path) for site in (answering, failing) for path in ("/a", "/b")}
    assert result.urls == allowed | {answering.url("/d")}
    assert result.forbidden_urls == {answering.url("/private/c"), failing.url("/private/c")}
    assert (len(answering.robots_fetches), len(failing.robots_fetches)) == (1, 2)
    assert result.stat("robotstxt/deferred") == result.stat("robotstxt/deferred/released") == 6
    client = redis_server.client()
    assert client.exists(f"rep9309:record:{answering.base}")
    assert not client.keys("rep9309:held:*"), "every held request was taken"
    assert not client.keys("rep9309:lease:*"), "every lease was released"
    assert not client.exists(f"rep9309:alive:{result.middleware(ours_class()).store.me}")


@deferred_f_from_coro_f
async def test_a_lease_taken_for_a_fetch_that_never_starts_goes_back_at_close(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    """The one robots.txt download slot is taken by a robots.txt that never answers; the
    second origin's fetch, leased already, waits for it until the spider closes and never
    starts. Its lease went back only when it timed out (REP9309_FETCH_TIMEOUT, else
    DOWNLOAD_TIMEOUT: 180 s by default), and the fleet's other processes waited for it
    meanwhile (found by a second reviewer)."""
    hanging = servers.add(hang())
    waiting = servers.add()
    # The second origin's request comes once the first's fetch has the slot: their loads
    # and leases are Redis round trips, which may answer in either order.
    plan = [hanging.url("/page/0"), Wait(0.3), waiting.url("/page/0")]
    settings = {"CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 3, "REP9309_CONCURRENT_FETCHES": 1}

    result = await run_crawl(plan, _redis(redis_server, **settings))

    assert waiting.robots_fetches == [] and result.close_reason == "closespider_timeout"
    assert not redis_server.client().keys("rep9309:lease:*"), "every lease was released"


@deferred_f_from_coro_f
async def test_a_lease_whose_answer_comes_during_the_close_goes_back_once_saved(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    """The robots.txt answers at 3 s, while the spider closes (from 1 s: the engine waits
    for the download). The answer is saved, then its lease given back: that release ran
    after the store had closed, and the lease stayed for its time to live (found by a
    second reviewer)."""
    site = servers.add(rules(PRIVATE, delay=3.0))
    settings = {"CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 30}

    await run_crawl(site.urls(["/a", "/private/b"]), _redis(redis_server, **settings))

    client = redis_server.client()
    assert client.exists(f"rep9309:record:{site.base}")
    assert not client.keys("rep9309:lease:*"), "every lease was released"


@pytest.mark.parametrize("outcome", ["answered", "expired"])
@deferred_f_from_coro_f
async def test_held_requests_redis_cannot_store_end_in_their_process(
    servers: ServerPool, redis_server: RedisServer, outcome: str
) -> None:
    """Requests whose meta cannot be pickled (here a lock) cannot be written to Redis:
    each is held in its process only, with a WARNING, and ends there like any held
    request, released when robots.txt answers or expired at REP9309_DEFER_TIMEOUT.
    Before, the release took only what Redis held and dropped them: never downloaded,
    never errback'd."""
    robots = rules(PRIVATE, delay=0.5) if outcome == "answered" else Reply(503, "busy")
    site = servers.add(robots)
    plan = [
        Request(url, meta={"unpicklable": threading.Lock()})
        for url in site.urls(["/a", "/b", "/private/c"])
    ]
    settings = _redis(redis_server, REP9309_DEFER_TIMEOUT=1.5)

    result = await run_crawl(plan, settings)

    if outcome == "answered":
        assert result.urls == set(site.urls(["/a", "/b"]))
        assert result.forbidden_urls == {site.url("/private/c")}
    else:
        assert result.urls == set()
        assert result.ignored_urls == set(site.urls(["/a", "/b", "/private/c"]))
        assert result.stat("robotstxt/deferred/expired") == 3
    assert result.stat("robotstxt/store/unencodable") >= 1
    warnings = result.messages(logging.WARNING, "scrapy_rep9309")
    assert any("cannot be written to the robots.txt store" in line for line in warnings)
    assert result.messages(logging.ERROR, "scrapy_rep9309") == []
    assert undocumented_stats(set(result.stats)) == set()


@deferred_f_from_coro_f
async def test_a_crawl_finds_the_redis_of_scrapy_redis_host_and_port_settings(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    site = servers.add(rules(PRIVATE))
    settings = {"REP9309_STORE": STORE, "REDIS_HOST": "127.0.0.1", "REDIS_PORT": redis_server.port}

    result = await run_crawl([site.url("/a"), site.url("/private/b")], settings)

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/b")}
    assert redis_server.client().exists(f"rep9309:record:{site.base}")


@deferred_f_from_coro_f
async def test_two_crawlers_share_fetches_and_release_each_others_requests(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    slow = [servers.add(rules(PRIVATE, delay=0.8)) for _ in range(3)]
    plans = [
        [site.url(f"/{crawler}/{n}") for site in slow for n in range(3)]
        + [site.url(f"/private/{crawler}") for site in slow]
        for crawler in ("one", "two")
    ]

    results = await asyncio.gather(*(run_crawl(plan, _redis(redis_server)) for plan in plans))

    decided = _decided(*results)
    assert sorted(decided) == sorted(plans[0] + plans[1]), "each request decided exactly once"
    assert [len(site.robots_fetches) for site in slow] == [1, 1, 1]
    assert all(not path.startswith("/private") for s in slow for path in s.crawled_paths())
    released_for_peers = sum(r.stat("robotstxt/fleet/released_for_peers") for r in results)
    assert released_for_peers > 0, "whoever got the answer released the other's requests"


@deferred_f_from_coro_f
async def test_origins_whose_record_is_in_redis_hold_nothing(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    sites = [servers.add(rules(PRIVATE)) for _ in range(3)]
    paths = ["/a", "/b", "/private/c"]
    await run_crawl([site.url("/first") for site in sites], _redis(redis_server))

    later = await run_crawl(
        [url for site in sites for url in site.urls(paths)], _redis(redis_server)
    )

    assert later.urls == {site.url(path) for site in sites for path in ("/a", "/b")}
    assert later.forbidden_urls == {site.url("/private/c") for site in sites}
    assert [len(site.robots_fetches) for site in sites] == [1, 1, 1], "the peer's records"
    assert later.stat("robotstxt/deferred") == 0, "decided at download time, never held"
    assert not redis_server.client().keys("rep9309:held:*")
    # Counted by the outcome of the peer's copies (it used to read "3 pending").
    assert later.close_summary().startswith(
        "robots.txt: 3 origins (3 available, 0 unavailable, 0 unreachable, 0 pending)"
    ), later.close_summary()


@deferred_f_from_coro_f
async def test_crawls_under_different_prefixes_share_nothing(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    """REP9309_REDIS_PREFIX: two crawls on one Redis (say, two user agents) keep their
    records and keys apart: each fetches robots.txt itself."""
    site = servers.add(rules(PRIVATE))
    paths = ["/a", "/private/b"]

    for prefix in ("crawl-a", "crawl:b"):
        result = await run_crawl(
            site.urls(paths), _redis(redis_server, REP9309_REDIS_PREFIX=prefix)
        )
        assert result.urls == {site.url("/a")}
        assert result.forbidden_urls == {site.url("/private/b")}

    assert len(site.robots_fetches) == 2
    client = redis_server.client()
    assert client.exists(f"crawl-a:record:{site.base}")
    assert client.exists(f"crawl:b:record:{site.base}")
    assert not client.keys("rep9309:*")


#: Records no version of this store writes: its data, its version, its Redis type.
UNREADABLE_RECORDS: dict[str, Callable[[Any, str], None]] = {
    "garbage data": lambda client, key: client.hset(key, mapping={"v": 7, "d": b"garbage"}),
    "version not a number": lambda client, key: client.hset(
        key, mapping={"v": "not-a-number", "d": b'{"outcome":"available"}\n'}
    ),
    # Deeper than the JSON parser goes, yet within the header's size limit.
    "header nested too deep": lambda client, key: client.hset(
        key, mapping={"v": 7, "d": b"[" * 2000 + b"]" * 2000 + b"\nUser-agent: *\n"}
    ),
    "a string, not a hash": lambda client, key: client.set(key, "not a record"),
    # Found by a second reviewer: each stopped the origin for good (the first request's
    # errback got AttributeError or OverflowError, the others expired, nothing fetched).
    "a version without data": lambda client, key: client.hset(key, mapping={"v": 7}),
    "a time too large for a float": lambda client, key: client.hset(
        key,
        mapping={
            "v": 7,
            "d": b'{"outcome":"available","status":200,"fetched_at":1'
            + b"0" * 400
            + b',"expires_at":1,"failures":0,"retry_at":0,"last_failure":null,'
            b'"truncated":false}\nUser-agent: *\n',
        },
    ),
}


@pytest.mark.parametrize("damage", list(UNREADABLE_RECORDS))
@deferred_f_from_coro_f
async def test_an_unreadable_record_is_ignored_and_fetched_again(
    servers: ServerPool, redis_server: RedisServer, damage: str
) -> None:
    """An unreadable record (whatever is wrong with it) is dropped with one WARNING and
    the robots.txt fetched again: never an error in the requests, nor an outage retried
    for ever."""
    site = servers.add(rules(PRIVATE))
    UNREADABLE_RECORDS[damage](redis_server.client(), f"rep9309:record:{site.base}")

    result = await run_crawl([site.url("/a"), site.url("/private/b")], _redis(redis_server))

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/b")}
    assert len(site.robots_fetches) == 1
    assert result.stat("robotstxt/store/corrupt") == 1
    warnings = result.messages(logging.WARNING, "scrapy_rep9309")
    assert any("unreadable" in message and site.base in message for message in warnings)


@deferred_f_from_coro_f
async def test_a_held_requests_key_of_another_type_is_deleted_and_nothing_hangs(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    """Like a record key holding a string, an origin's held-requests key holding one is
    deleted with a WARNING. Found by a second reviewer: Redis refused the write of every
    request held for that origin, the refusal was never handed to them, and the crawl
    hung until CLOSESPIDER_TIMEOUT with nothing downloaded and no errback."""
    site = servers.add(rules(PRIVATE, delay=1.0))
    redis_server.client().set(f"rep9309:held:{site.base}", "not a hash")

    result = await run_crawl(
        [site.url("/a"), site.url("/private/b")],
        _redis(redis_server, REP9309_DEFER_TIMEOUT=4, CLOSESPIDER_TIMEOUT=20),
    )

    assert result.duration < 15
    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/b")}
    assert result.stat("robotstxt/store/held_unreadable") == 1
    warnings = result.messages(logging.WARNING, "scrapy_rep9309")
    assert any("another Redis type" in message and site.base in message for message in warnings)


@pytest.mark.parametrize("jobdir", [False, True], ids=["errback", "jobdir"])
@deferred_f_from_coro_f
async def test_requests_held_while_redis_is_down_are_not_left_to_the_fleet_at_close(
    servers: ServerPool, own_redis_server: RedisServer, tmp_path: Any, jobdir: bool
) -> None:
    """Redis goes away once the first page is downloaded, and the spider closes at 6 s:
    the requests held meanwhile never reached Redis, so no peer can see them. They end
    here, like any request still held at close: in their errback with the reason, or
    saved under JOBDIR."""
    known = servers.add(rules(PRIVATE))
    newcomer = servers.add(rules(PRIVATE))
    held = newcomer.urls(["/a", "/b", "/private/c"])
    THEN_ACTIONS["stop-redis"] = own_redis_server.stop
    first = Request(known.url("/1"), meta={THEN_META: "stop-redis"})
    plan = [first, Wait(3.0), *held]
    settings = _redis(own_redis_server, REP9309_DEFER_TIMEOUT=30, CLOSESPIDER_TIMEOUT=6)
    if jobdir:
        settings["JOBDIR"] = str(tmp_path / "job")

    result = await run_crawl(plan, settings)

    assert result.urls == {known.url("/1")}
    assert newcomer.page_requests == []
    assert result.stat("robotstxt/fleet/left") == 0
    # The first page waited for its robots.txt too (then released).
    assert result.stat("robotstxt/deferred") == 1 + len(held)
    assert result.stat("robotstxt/deferred/released") == 1
    if jobdir:
        assert result.stat("robotstxt/deferred/saved") == len(held)
        assert len(read_state(tmp_path / "job").held) == len(held)
    else:
        assert result.ignored_urls == set(held)
        assert all("Spider closed" in failure.message for failure in result.failures)
        assert result.stat("robotstxt/deferred/closed") == len(held)
    errors = result.messages(logging.ERROR, "scrapy_rep9309")
    assert not any("lost to the fleet" in message for message in errors), errors


@deferred_f_from_coro_f
async def test_a_closing_process_leaves_the_requests_of_its_peers_to_them(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    """A fetches the origin's robots.txt (3 s) and starts closing at 1.5 s; B holds a
    request for the origin meanwhile. The answer comes while A closes: A leaves its own
    request to the fleet and B's where it is, in Redis, where B, which is still crawling,
    releases it itself. A closing process that took B's request would only have written it back to
    Redis as its own leftover, and B, holding nothing, would have finished without it."""
    site = servers.add(rules(PRIVATE, delay=3.0))
    settings = _redis(redis_server, DOWNLOAD_TIMEOUT=20, REP9309_DEFER_TIMEOUT=60)

    a, b = await asyncio.gather(
        run_crawl([site.url("/a")], {**settings, "CLOSESPIDER_TIMEOUT": 1.5}),
        run_crawl([Wait(0.5), site.url("/peer")], {**settings, "CLOSESPIDER_TIMEOUT": 30}),
    )

    assert site.url("/peer") in b.urls, "B's request is downloaded in B's crawl"
    assert a.stat("robotstxt/fleet/released_for_peers") == 0
    assert a.stat("robotstxt/fleet/left") == 1
    # A's own request, left in Redis, may reach B's release too; nothing goes twice.
    assert b.urls <= set(site.urls(["/a", "/peer"]))
    assert sorted(entry.path for entry in site.page_requests) == sorted(site.crawled_paths())
    assert len(site.robots_fetches) == 1


@deferred_f_from_coro_f
@pytest.mark.parametrize(
    ("answer", "stall", "a_closes"),
    [(4.0, 3.0, 3.2), (2.0, 1.8, 2.5)],
    ids=["answer-while-closing", "take-sent-before-closing"],
)
async def test_a_release_the_stalled_store_carries_out_after_the_close_ends_each_request_once(
    servers: ServerPool, own_redis_server: RedisServer, answer: float, stall: float, a_closes: float
) -> None:
    """Redis stalls (SIGSTOP) just before A gets the answer, and A closes; Redis wakes up
    at 11 s. Each request ends once, none is lost, none is fetched twice:

    - the answer comes while A closes: A takes nothing from Redis, its request and B's
      stay there, and B, crawling on, releases both once Redis answers;
    - A sent its take (every request of the origin) before it began closing: the take
      answers after the close, and A ends what it took in its errback, B's request
      included (docs/fleet.md: the window a closing process's take can still hit).
    """
    site = servers.add(rules(PRIVATE, delay=answer))
    pid = own_redis_server.process.pid
    reactor.callLater(stall, os.kill, pid, signal.SIGSTOP)  # type: ignore[attr-defined]
    reactor.callLater(11.0, os.kill, pid, signal.SIGCONT)  # type: ignore[attr-defined]
    settings = _redis(own_redis_server, DOWNLOAD_TIMEOUT=20, REP9309_DEFER_TIMEOUT=60)

    a, b = await asyncio.gather(
        run_crawl([site.url("/a")], {**settings, "CLOSESPIDER_TIMEOUT": a_closes}),
        run_crawl([Wait(0.5), site.url("/peer")], {**settings, "CLOSESPIDER_TIMEOUT": 40}),
    )

    ends = [seen.url for seen in a.responses + b.responses]
    ends += [failure.url for failure in a.failures + b.failures]
    assert sorted(ends) == sorted(site.urls(["/a", "/peer"])), "each ends once"
    assert all("Spider closed before" in failure.message for failure in a.failures + b.failures)
    paths = [entry.path for entry in site.page_requests]
    assert len(paths) == len(set(paths)), "none fetched twice"
    assert a.responses == []
    assert not own_redis_server.client().keys("rep9309:held:*")


@deferred_f_from_coro_f
async def test_a_request_held_while_redis_stalls_ends_once_when_the_spider_closes(
    servers: ServerPool, own_redis_server: RedisServer
) -> None:
    """Redis stops answering (SIGSTOP: a hung server, a partition) after /a is held and
    written; /b is held during the stall; the spider closes at 4 s. docs/fleet.md: the
    requests Redis never got are this process's to end, only those Redis has are left
    to the fleet, each counted once. Found by a second reviewer: putting /b back into the
    stalled store timed out with asyncio's CancelledError, which stopped the close: /b
    ended nowhere, uncounted, and /a was counted left twice. Nor is /b put back into a
    store that stopped answering: Redis carried out that write when it woke up, after
    /b had ended here (a peer would have crawled it again). And when /b's own write was
    sent before the stall showed (it depends on timing), Redis may still carry it out
    too: /b is left to the fleet then, like /a (ended here, it was in Redis as well)."""
    site = servers.add(rules(PRIVATE, delay=6.0))
    pid = own_redis_server.process.pid
    reactor.callLater(1.5, os.kill, pid, signal.SIGSTOP)  # type: ignore[attr-defined]
    try:
        result = await run_crawl(
            [site.url("/a"), Wait(2.0), site.url("/b")],
            _redis(
                own_redis_server,
                DOWNLOAD_TIMEOUT=20,
                REP9309_DEFER_TIMEOUT=60,
                CLOSESPIDER_TIMEOUT=4,
            ),
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    client = own_redis_server.client()
    left = result.stat("robotstxt/fleet/left") or 0
    for _ in range(50):  # Redis carries out what it was sent before the stall (a loaded
        # machine may take a while to have it read)
        values = [v for key in client.keys("rep9309:held:*") for v in client.hvals(key)]
        if len(values) >= left:
            break
        await asyncio.sleep(0.2)
    in_redis = [url for url in site.urls(["/a", "/b"]) for value in values if url.encode() in value]

    ended = [seen.url for seen in result.responses] + [f.url for f in result.failures]
    assert sorted(ended + in_redis) == site.urls(["/a", "/b"])
    assert result.stat("robotstxt/fleet/left") == len(in_redis) == len(values)
    assert result.stat("robotstxt/deferred/closed") == len(result.failures)
    assert site.page_requests == []


@deferred_f_from_coro_f
async def test_redis_restarted_during_the_crawl(
    servers: ServerPool, own_redis_server: RedisServer
) -> None:
    """Redis goes away once the first page is downloaded and comes back empty 2.5 s later."""
    known = servers.add(rules(PRIVATE))
    newcomer = servers.add(rules(PRIVATE))
    later = servers.add(rules(PRIVATE))

    def stop_then_restart() -> None:
        own_redis_server.stop()
        reactor.callLater(2.5, own_redis_server.start)  # type: ignore[attr-defined]

    THEN_ACTIONS["stop-then-restart-redis"] = stop_then_restart

    plan: list[PlanItem] = [
        Request(known.url("/1"), meta={THEN_META: "stop-then-restart-redis"}),
        known.url("/private/1"),
        Wait(1.5),  # Redis is down from here
        *known.urls(["/2", "/private/2"]),  # decided from memory
        *newcomer.urls(["/1", "/private/1"]),  # held until Redis is back
        Wait(3.0),  # Redis is back (empty)
        *later.urls(["/1", "/private/1"]),
        *newcomer.urls(["/2"]),
    ]

    result = await run_crawl(plan, _redis(own_redis_server, REP9309_DEFER_TIMEOUT=20))

    urls = [
        item if isinstance(item, str) else item.url for item in plan if not isinstance(item, Wait)
    ]
    assert sorted(_decided(result)) == sorted(urls), "nothing lost, nothing twice"
    for site in (known, newcomer, later):
        assert not any(path.startswith("/private") for path in site.crawled_paths())
        assert len(site.robots_fetches) == 1
    forbidden = {site.url("/private/1") for site in (known, newcomer, later)}
    assert result.forbidden_urls == forbidden | {known.url("/private/2")}
    errors = result.messages(logging.ERROR, "scrapy_rep9309")
    assert len(errors) == 1 and "unavailable" in errors[0], errors
    assert any("answers again" in m for m in result.messages(logging.INFO, "scrapy_rep9309"))
    assert result.stat("robotstxt/store/errors") >= 1


@deferred_f_from_coro_f
async def test_a_jobdir_copy_never_comes_back_into_the_fleets_store(
    servers: ServerPool, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Run 1 saves copy R1 (Allow) under JOBDIR and in Redis; a peer refreshes it to R2
    (Disallow), which then leaves Redis (expired, no stale time). The resumed run used to
    write R1 back into Redis and, robots.txt answering 503, decide by it as its stale
    copy: a page the newest copy forbids was downloaded (found by a second reviewer). A
    shared store keeps its own records: the resumed run has no usable copy."""
    jobdir = str(tmp_path / "job")
    site = servers.add(
        [
            rules("User-agent: *\nAllow: /\n", headers={"Cache-Control": "max-age=1"}),
            rules("User-agent: *\nDisallow: /\n", headers={"Cache-Control": "max-age=1"}),
            Reply(503, "busy"),
        ]
    )
    await run_crawl([site.url("/a")], _redis(redis_server, JOBDIR=jobdir))
    await asyncio.sleep(1.5)
    peer = await run_crawl([site.url("/b")], _redis(redis_server, REP9309_STALE_TTL=0))
    await asyncio.sleep(2.0)  # R2 leaves Redis

    resumed = await run_crawl(
        [site.url("/c")], _redis(redis_server, JOBDIR=jobdir, REP9309_DEFER_TIMEOUT=2)
    )

    assert peer.forbidden_urls == {site.url("/b")}
    assert site.url("/c") not in resumed.urls
    assert [entry.path for entry in site.page_requests] == ["/a"]


@deferred_f_from_coro_f
async def test_a_resumed_process_with_nothing_else_to_crawl_takes_over_what_it_left(
    servers: ServerPool, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Run 1 pauses while the origin answers 503: its held requests stay in Redis
    (``robotstxt/fleet/left``), for the fleet or the resumed process. The resumed run,
    with nothing else to crawl, closed before its first look for orphaned requests (2 s
    in), and they were never ended (found by a second reviewer). It looks as it opens,
    and stays open for what it takes over."""
    site = servers.add([Reply(503, "busy"), rules(PRIVATE)])
    settings = _redis(
        redis_server, JOBDIR=str(tmp_path / "job"), REP9309_RETRY_DELAY=3, REP9309_RETRY_MAX_DELAY=3
    )

    paused = await run_crawl(
        site.urls(["/a", "/private/b"]), {**settings, "CLOSESPIDER_TIMEOUT": 1}
    )
    resumed = await run_crawl([], settings)

    assert paused.stat("robotstxt/fleet/left") == 2
    assert resumed.stat("robotstxt/fleet/adopted") == 2
    assert resumed.urls == {site.url("/a")}
    assert resumed.forbidden_urls == {site.url("/private/b")}
    assert not redis_server.client().keys("rep9309:held:*")


class _TrackedRedisStore(scrapy_rep9309.RedisStore):
    """The Redis store, kept where a test can reach the running crawl's."""

    opened: list[RedisOriginStore] = []

    async def open(self, *args: Any, **kwargs: Any) -> None:
        await super().open(*args, **kwargs)
        type(self).opened.append(self)


@deferred_f_from_coro_f
async def test_a_change_published_while_the_subscription_was_lost_is_read_after_it(
    servers: ServerPool, redis_server: RedisServer
) -> None:
    """A peer stores a newer copy (Disallow: /) while this process's subscription is
    down, so the publication is lost; redis-py reconnects and subscribes again. This
    process went on deciding by its older copy (Allow: /, fresh for a day) and
    downloaded /b, which the newest copy forbids (found by a second reviewer). Each
    subscription after the first reads every record in use again."""
    site = servers.add(rules("User-agent: *\nAllow: /\n"))
    _TrackedRedisStore.opened = []

    async def a_peer_stores_unheard() -> None:
        store = _TrackedRedisStore.opened[-1]
        key = site.base
        stored = await store.load(key)
        assert stored is not None
        old = stored.record
        newer = OriginRecord(
            AVAILABLE, 200, b"User-agent: *\nDisallow: /\n", old.fetched_at, old.expires_at
        )
        # Saved through this process's own store: its publication names this process,
        # which ignores it, as if it had been lost.
        assert await store.save(key, newer, stored.version) is not None
        redis_server.client().client_kill_filter(_type="pubsub")

    THEN_ACTIONS["peer-unheard"] = lambda: asyncio.ensure_future(a_peer_stores_unheard())
    first = Request(site.url("/a"), meta={THEN_META: "peer-unheard"})
    store = f"{__name__}.{_TrackedRedisStore.__name__}"
    settings = {**_redis(redis_server), "REP9309_STORE": store}

    result = await run_crawl([first, Wait(2.5), site.url("/b")], settings)

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/b")}
    assert [entry.path for entry in site.page_requests] == ["/a"]
    assert any("was lost for a while" in line for line in result.messages(logging.INFO))


@deferred_f_from_coro_f
async def test_no_connection_to_redis_is_left_open_after_the_crawl(
    servers: ServerPool, own_redis_server: RedisServer
) -> None:
    """A service that runs crawl after crawl and keeps each finished crawler (for its
    stats) kept the store's pooled connections open: ``aclose()`` does not close a pool
    passed in to the client (found by a second reviewer). The crawler is kept alive here."""
    site = servers.add(rules(PRIVATE))
    crawler = make_crawler(crawl_settings(OURS_ENABLED, _redis(own_redis_server)))
    result = CrawlResult(started=0.0)

    await start_crawl(crawler, plan=site.urls(["/page/1", "/private/1"]), result=result)

    assert result.urls == {site.url("/page/1")}
    assert crawler.stats is not None  # kept, as a runner's caller keeps it
    client = own_redis_server.client()
    try:
        me = client.client_id()
        others = [c for c in client.client_list() if int(c["id"]) != me]
    finally:
        client.close()
    assert others == [], [(c["id"], c["cmd"], c["age"]) for c in others]
