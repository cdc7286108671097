"""A fleet of crawl processes sharing scrapy-redis's queue: the memory store against the
Redis store, side by side.

Usage::

    python benchmarks/bench_fleet.py                  # 300 origins x 10 pages; fleets of 1, 2, 4
    python benchmarks/bench_fleet.py --origins 500 --rounds 3

Every fleet process is a fresh subprocess (``tests/_fleet_child.py``: a scrapy-redis
``RedisSpider`` with scrapy-redis's scheduler and duplicate filter); the web servers run
in another subprocess (``_bench_sites.py``, one loopback address per origin). Two
redis-servers (persistence off) on 127.0.0.1: one for scrapy-redis's queue, one for the
Redis store, so that the store's own commands can be counted (INFO commandstats,
scripts' inner commands included). For each fleet size, the same crawl runs with the
memory store (each process keeps its own robots.txt cache) and with the Redis store, in
alternating order. Measured:

- robots.txt fetches per origin, over the whole fleet (goal: 1.0 with Redis, up to N
  with the memory store);
- pages per second of the fleet, from the first process's engine start to the last
  response (goal: the Redis store at least 0.95x the memory store);
- Redis commands per page of the store's Redis (and of the queue's, for scale).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_crawl import web_servers  # noqa: E402 (this script's folder)

from tests._fleet_child import START_URLS_KEY  # noqa: E402
from tests._redis import RedisServer  # noqa: E402

STORES = ("memory", "redis")
SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_rep9309.Addon": 0},
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_PERSIST": True,
    "MAX_IDLE_TIME_BEFORE_CLOSE": 2,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "DOWNLOAD_TIMEOUT": 30,
    "COOKIES_ENABLED": False,
    "CONCURRENT_ITEMS": 1,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "WARNING",
}
#: Start URLs a process takes from Redis at a time (scrapy-redis reads them when idle).
BATCH = 200


@dataclass(frozen=True)
class FleetRun:
    store: str
    processes: int
    pages: int
    elapsed: float
    robots_fetches: int
    store_commands: int
    queue_commands: int

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.elapsed


def run_fleet(
    store: str,
    processes: int,
    urls: list[str],
    queue: RedisServer,
    store_redis: RedisServer,
    workdir: Path,
) -> FleetRun:
    for server in (queue, store_redis):
        client = server.client()
        client.flushall()
    queue.client().rpush(START_URLS_KEY, *urls)
    for server in (queue, store_redis):
        server.client().config_resetstat()
    settings = {**SETTINGS, "REDIS_URL": queue.url}
    if store == "redis":
        settings["REP9309_STORE"] = "scrapy_rep9309.RedisStore"
        settings["REP9309_REDIS_URL"] = store_redis.url
    children = []
    for index in range(processes):
        job = workdir / f"{store}-{processes}-{index}.json"
        out = workdir / f"{store}-{processes}-{index}.out.json"
        out.unlink(missing_ok=True)
        spider_kwargs = {"redis_batch_size": BATCH}
        job.write_text(
            json.dumps({"settings": settings, "out": str(out), "spider_kwargs": spider_kwargs})
        )
        child = subprocess.Popen(
            [sys.executable, "-m", "tests._fleet_child", str(job)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        children.append((child, out))
    reports = []
    for child, out in children:
        _, errors = child.communicate(timeout=600)
        if not out.exists():
            raise RuntimeError(f"a fleet process wrote no report:\n{errors[-3000:]}")
        reports.append(json.loads(out.read_text()))
    outcomes = [outcome for report in reports for _, outcome in report["outcomes"]]
    if len(outcomes) != len(urls):
        raise RuntimeError(f"{store} x{processes}: {len(outcomes)} outcomes for {len(urls)} URLs")
    failed = [outcome for outcome in outcomes if outcome != "ok"]
    if failed:
        raise RuntimeError(f"{store} x{processes}: {len(failed)} failed, e.g. {failed[0]}")
    started = min(report["engine_started"] for report in reports)
    finished = max(report["last_response"] for report in reports)
    return FleetRun(
        store,
        processes,
        len(outcomes),
        finished - started,
        sum(int(report["stats"].get("robotstxt/request_count", 0)) for report in reports),
        store_redis.commands() if store == "redis" else 0,
        queue.commands(),
    )


@contextmanager
def redis_servers() -> Iterator[tuple[RedisServer, RedisServer]]:
    import shutil

    executable = shutil.which("redis-server")
    if executable is None:
        raise SystemExit("redis-server is not on PATH (apt-get install redis-server)")
    servers = (RedisServer(executable), RedisServer(executable))
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=300)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--fleets", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(
        f"{args.origins} origins x {args.pages} pages, fleets of {args.fleets} processes, "
        f"{args.rounds} rounds, settings {SETTINGS}, start URL batch {BATCH}",
        flush=True,
    )
    runs: dict[tuple[str, int], list[FleetRun]] = {}
    with (
        web_servers(args.origins, 0.0) as sites,
        redis_servers() as (queue, store_redis),
        tempfile.TemporaryDirectory() as tmp,
    ):
        origins = sites["origins"]
        urls = [f"{base}/page/{n}" for n in range(args.pages) for base in origins]
        for round_index in range(args.rounds):
            for processes in args.fleets:
                order = STORES if (round_index + processes) % 2 == 0 else STORES[::-1]
                for store in order:
                    run = run_fleet(store, processes, urls, queue, store_redis, Path(tmp))
                    runs.setdefault((store, processes), []).append(run)
                    print(
                        f"  fleet of {processes} {store:<6} {run.pages} pages in "
                        f"{run.elapsed:6.2f} s ({run.pages_per_second:7.1f} pages/s), "
                        f"robots.txt fetches/origin {run.robots_fetches / len(origins):.2f}, "
                        f"store commands/page {run.store_commands / run.pages:.2f}, "
                        f"queue commands/page {run.queue_commands / run.pages:.2f}",
                        flush=True,
                    )
    report(runs, args.fleets, len(origins))


def report(runs: dict[tuple[str, int], list[FleetRun]], fleets: list[int], origins: int) -> None:
    """Medians over rounds, one line per fleet size, then the goals."""
    fetch_goal = speed_goal = True
    for processes in fleets:
        median = {
            store: {
                "rate": statistics.median(r.pages_per_second for r in runs[(store, processes)]),
                "fetches": statistics.median(r.robots_fetches for r in runs[(store, processes)])
                / origins,
                "commands": statistics.median(
                    r.store_commands / r.pages for r in runs[(store, processes)]
                ),
            }
            for store in STORES
        }
        ratio = median["redis"]["rate"] / median["memory"]["rate"]
        fetch_goal &= abs(median["redis"]["fetches"] - 1.0) < 1e-9
        speed_goal &= ratio >= 0.95
        print(
            f"fleet of {processes}: robots.txt fetches per origin memory "
            f"{median['memory']['fetches']:.2f}, redis {median['redis']['fetches']:.2f}; "
            f"pages/s memory {median['memory']['rate']:.1f}, redis {median['redis']['rate']:.1f} "
            f"({ratio:.2f}x); redis store commands/page {median['redis']['commands']:.2f}"
        )
    print(
        "goal: 1.0 robots.txt fetch per origin with the Redis store: "
        + ("met" if fetch_goal else "NOT met")
    )
    print(
        "goal: Redis store pages/s >= 0.95x the memory store's: "
        + ("met" if speed_goal else "NOT met")
    )


if __name__ == "__main__":
    t0 = time.monotonic()
    main()
    print(f"({time.monotonic() - t0:.0f} s)")
