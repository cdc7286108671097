"""Fleets of real Scrapy processes (subprocesses) sharing scrapy-redis's scheduler and
duplicate filter and the Redis store, against local origins served by this process.

- Three processes over 56 origins (plain, slow, 503-then-recovering, redirecting, 404):
  each robots.txt fetched once by the whole fleet, the recovering ones retried on one
  schedule, no disallowed page downloaded, every request decided exactly once.
- One process killed (SIGKILL) while it holds requests: the others take them over.
- One process killed right after it took every held request of an origin, before it
  handed them to its engine: the others take them over too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._commands import REPO_ROOT, tool_environment
from tests._fleet_child import START_URLS_KEY
from tests._redis import RedisServer
from tests.servers import Reply, ScriptedOrigin, ServerPool, redirect, rules

PRIVATE = "User-agent: *\nDisallow: /private\n"
FORBIDDEN = "Forbidden by robots.txt"


def fleet_settings(redis_url: str, log_file: Path, **more: Any) -> dict[str, Any]:
    return {
        "ADDONS": {"scrapy_rep9309.Addon": 0},
        "REP9309_STORE": "scrapy_rep9309.RedisStore",
        "REDIS_URL": redis_url,  # scrapy-redis's, and the store's by default
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 6,
        "CONCURRENT_REQUESTS": 8,
        "DOWNLOAD_TIMEOUT": 5,
        "REP9309_RETRY_DELAY": 1,
        "REP9309_RETRY_MAX_DELAY": 2,
        "REP9309_DEFER_TIMEOUT": 60,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(log_file),
        **more,
    }


class Fleet:
    """Starts fleet processes, each with its job and log in a temporary directory."""

    def __init__(self, redis_url: str, directory: Path, **settings: Any) -> None:
        self.redis_url = redis_url
        self.directory = directory
        self.settings = settings
        self.processes: dict[str, asyncio.subprocess.Process] = {}

    async def start(self, name: str, **job_options: Any) -> asyncio.subprocess.Process:
        """Start process ``name``; ``job_options`` go into its job (``tests/_fleet_child``)."""
        job = self.directory / f"{name}.json"
        log = self.directory / f"{name}.log"
        settings = fleet_settings(self.redis_url, log, **self.settings)
        job.write_text(
            json.dumps({"settings": settings, "out": str(self._out(name)), **job_options})
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests._fleet_child",
            str(job),
            cwd=REPO_ROOT,
            env=tool_environment(),
        )
        self.processes[name] = process
        return process

    async def wait(self, timeout: float = 120) -> None:
        await asyncio.wait_for(
            asyncio.gather(*(p.wait() for p in self.processes.values())), timeout
        )

    def _out(self, name: str) -> Path:
        return self.directory / f"{name}.out.json"

    def report(self, name: str) -> dict[str, Any]:
        path = self._out(name)
        assert path.exists(), f"{name} wrote no report; its log:\n{self.log(name)[-3000:]}"
        return json.loads(path.read_text())

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def kill_all(self) -> None:
        for process in self.processes.values():
            if process.returncode is None:
                process.kill()


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rep9309-fleet-") as directory:
        yield Path(directory)


def _push(server: RedisServer, urls: list[str]) -> None:
    server.client().rpush(START_URLS_KEY, *urls)


def _outcomes(fleet: Fleet, names: list[str]) -> Counter[tuple[str, str]]:
    counted: Counter[tuple[str, str]] = Counter()
    for name in names:
        counted.update(tuple(outcome) for outcome in fleet.report(name)["outcomes"])
    return counted


def _stat(fleet: Fleet, names: list[str], stat: str) -> int:
    return sum(int(fleet.report(name)["stats"].get(stat, 0)) for name in names)


def _downloaded_once(sites: list[ScriptedOrigin], *, private: bool) -> None:
    """Each page downloaded at most once; /private ones never, unless ``private``."""
    for site in sites:
        downloaded = [entry.path for entry in site.page_requests]
        assert len(downloaded) == len(set(downloaded)), f"{site}: a page downloaded twice"
        if not private:
            assert not [path for path in downloaded if path.startswith("/private")], site


def _survivors_took_over(
    fleet: Fleet,
    server: RedisServer,
    urls: list[str],
    sites: list[ScriptedOrigin],
    forbidden: list[str],
) -> None:
    """What a killed process held, the survivors adopted, each request once: none lost,
    none twice, the ``forbidden`` paths forbidden, nothing left held in Redis."""
    survivors = ["one", "two"]
    outcomes = _outcomes(fleet, survivors)
    assert sorted(url for url, _ in outcomes) == sorted(urls), "none lost, none twice"
    assert {url for url, outcome in outcomes if outcome == FORBIDDEN} == {
        site.url(path) for site in sites for path in forbidden
    }
    assert _stat(fleet, survivors, "robotstxt/fleet/adopted") == len(urls)
    _downloaded_once(sites, private=False)
    assert not server.client().keys("rep9309:held:*")


@deferred_f_from_coro_f
async def test_a_fleet_of_three_fetches_each_robots_txt_once(
    servers: ServerPool, redis_server: RedisServer, workdir: Path
) -> None:
    cdn = servers.add(routes={"/robots/site.txt": [rules(PRIVATE)]})
    plain = [servers.add(rules(PRIVATE)) for _ in range(30)]
    slow = [servers.add(rules(PRIVATE, delay=2.0)) for _ in range(8)]
    recovering = [
        servers.add([Reply(503, "busy"), Reply(503, "busy"), rules(PRIVATE)]) for _ in range(6)
    ]
    redirecting = [servers.add(redirect(cdn.url("/robots/site.txt"))) for _ in range(6)]
    missing = [servers.add(Reply(404, "not found")) for _ in range(6)]
    sites = plain + slow + recovering + redirecting + missing
    paths = ["/page/1", "/private/1", "/page/2", "/page/3"]
    urls = [site.url(path) for path in paths for site in sites]  # each origin in every batch
    _push(redis_server, urls)
    fleet = Fleet(redis_server.url, workdir)
    names = ["one", "two", "three"]
    try:
        for name in names:
            await fleet.start(name)
        await fleet.wait()
    finally:
        fleet.kill_all()

    outcomes = _outcomes(fleet, names)
    assert sorted(url for url, _ in outcomes) == sorted(urls), "every request decided once"
    forbidden = {url for (url, outcome) in outcomes if outcome == FORBIDDEN}
    missing_urls = {site.url("/private/1") for site in missing}
    assert forbidden == {site.url("/private/1") for site in sites} - missing_urls
    assert all(outcome in ("ok", FORBIDDEN) for _, outcome in outcomes), outcomes
    for site in plain + slow + redirecting + missing:
        assert len(site.robots_fetches) == 1, f"{site}: {len(site.robots_fetches)} fetches"
    assert len(cdn.requests_for("/robots/site.txt")) == len(redirecting)
    for site in recovering:
        times = [entry.received for entry in site.robots_fetches]
        assert len(times) == 3, f"{site}: one shared retry schedule, not one per process"
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert gaps[0] >= 0.9 and gaps[1] >= 1.9, gaps
    _downloaded_once(plain + slow + recovering + redirecting, private=False)
    _downloaded_once(missing, private=True)  # 404: no rules, everything allowed
    assert {url for url, outcome in outcomes if outcome == "ok"} == set(urls) - forbidden
    assert _stat(fleet, names, "robotstxt/fleet/released_for_peers") > 0
    assert not redis_server.client().keys("rep9309:held:*")


@deferred_f_from_coro_f
async def test_requests_held_by_a_killed_process_are_taken_over(
    servers: ServerPool, redis_server: RedisServer, workdir: Path
) -> None:
    # The first fetch of each robots.txt never ends in time: its fetcher is killed.
    slow = [servers.add([rules(PRIVATE, delay=60), rules(PRIVATE)]) for _ in range(4)]
    urls = [site.url(path) for site in slow for path in ("/a", "/b", "/private/c")]
    _push(redis_server, urls)
    fleet = Fleet(redis_server.url, workdir, CONCURRENT_REQUESTS=16, MAX_IDLE_TIME_BEFORE_CLOSE=15)
    client = redis_server.client()

    def held() -> int:
        return sum(client.hlen(key) for key in client.keys("rep9309:held:*"))

    try:
        victim = await fleet.start("victim")
        deadline = time.monotonic() + 30
        while held() < len(urls):
            assert victim.returncode is None, fleet.log("victim")[-3000:]
            assert time.monotonic() < deadline, f"only {held()} held"
            await asyncio.sleep(0.1)
        os.kill(victim.pid, signal.SIGKILL)
        await victim.wait()
        for name in ("one", "two"):
            await fleet.start(name)
        await fleet.wait()
    finally:
        fleet.kill_all()

    _survivors_took_over(fleet, redis_server, urls, slow, forbidden=["/private/c"])
    assert [len(site.robots_fetches) for site in slow] == [2] * len(slow)


@deferred_f_from_coro_f
async def test_requests_taken_by_a_process_killed_before_it_handed_them_over_are_taken_over(
    servers: ServerPool, redis_server: RedisServer, workdir: Path
) -> None:
    """The victim holds every request of an origin, gets its robots.txt, takes the held
    requests out of Redis and is killed before it hands them to its engine (found by a
    second reviewer: all of them were lost, only a receipt that expired kept them). The
    survivors adopt them from that receipt: each ends once, as robots.txt says."""
    slow = [servers.add(rules(PRIVATE, delay=2))]
    paths = ["/a", "/b", "/c", "/d", "/e", "/private/f", "/private/g"]
    urls = [site.url(path) for site in slow for path in paths]
    _push(redis_server, urls)
    fleet = Fleet(redis_server.url, workdir, CONCURRENT_REQUESTS=16, MAX_IDLE_TIME_BEFORE_CLOSE=15)
    client = redis_server.client()
    try:
        victim = await fleet.start("victim", die_after_take=True)
        assert await asyncio.wait_for(victim.wait(), 60) == -signal.SIGKILL, fleet.log("victim")
        assert not client.keys("rep9309:held:*"), "the victim took them all before it died"
        for name in ("one", "two"):
            await fleet.start(name)
        await fleet.wait()
    finally:
        fleet.kill_all()

    _survivors_took_over(fleet, redis_server, urls, slow, forbidden=["/private/f", "/private/g"])
    assert not client.keys("rep9309:receipts:*"), "no receipt left standing for requests"
