"""Memory the middleware holds per origin in a broad crawl, against the robots.txt bodies.

Usage::

    python benchmarks/bench_memory.py --corpus ../shared/corpus/robots
    python benchmarks/bench_memory.py --corpus ../shared/corpus/robots --origins 1000 --bounded 200

A real Scrapy crawl of 20,000 local origins takes far too long to be a benchmark, so the
crawl's own objects are driven directly: a real ``Crawler`` with the middleware's
settings, the real ``RobotsTxtMiddleware`` with its driver, store, machines and
accounting. Each origin gets what a crawl gives it: a request is scheduled
(``request_scheduled``: held, its robots.txt fetched), the fetch answers with a corpus
body (the files cycled, each answer a fresh copy, as a download is), the held request is
released, and every URL of a small set of typical paths goes through
``process_request``, so that the crawler token's rules are parsed and compiled and the
forbidden ones explained as in a crawl. Only the download itself is replaced: the
driver's ``_download`` returns the result the engine's download would have been
classified into.

Two runs:

1. ``--origins`` origins (default 20,000) with ``REP9309_CACHE_SIZE`` as large, so that
   everything stays: the bytes held per origin (tracemalloc: everything allocated while
   the origins went through and still alive, with the middleware alive and its
   garbage collected) against the average body, broken down by what allocated them.
2. ``--bounded`` origins (default 5,000) with ``REP9309_CACHE_SIZE=1000``
   (``--bounded-cache``): how many of each per-origin object are kept, and that the
   totals still count every origin.

The target (issue 13) is at most 1.0x the average body, everything included.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tracemalloc
from collections import Counter
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

# The crawler and the URLs each origin is asked about: the same as the parser benchmark's.
from bench_parser import TYPICAL_PATHS, USER_AGENT  # noqa: E402

from scrapy_rep9309.integration.middleware import RobotsTxtMiddleware  # noqa: E402
from scrapy_rep9309.policy.fetchresult import DEFAULT_MAX_SIZE, FetchResult, answered  # noqa: E402
from scrapy_rep9309.policy.origin import Origin  # noqa: E402
from scrapy_rep9309.policy.report import summary_line  # noqa: E402
from scrapy_rep9309.rules import core  # noqa: E402
from scrapy_rep9309.rules.parser import prepare  # noqa: E402

#: The target: bytes held per origin at most this many times the average body.
TARGET_RATIO = 1.0
#: Where an allocation was made -> what it is part of (the innermost frame in one of
#: these files decides; anything else is "machine/other").
CATEGORIES = (
    ("record", ("policy/record.py",)),
    ("bodies as fetched", ("bench_memory.py",)),
    ("parsed rules", ("rules/",)),
    ("report", ("policy/report.py", "integration/accounting.py")),
)
OTHER = "machine/other"


class _Engine:
    """What the driver asks of the engine: released requests go to ``crawl``; a crawl
    would schedule them, here they are dropped (their decision is made below)."""

    _slot = None

    def crawl(self, request: Request) -> None:
        """Scheduling is not what is measured."""


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never waits (every store call here answers at once)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a coroutine waited: the memory store should answer at once")


@dataclass
class Crawl:
    """The middleware of one crawl and the corpus its origins are answered from."""

    middleware: RobotsTxtMiddleware
    bodies: Sequence[bytes]
    origins: int = 0
    #: robots.txt downloads under way: fired when their response "arrives".
    downloads: list[Deferred[None]] = field(default_factory=list)

    @classmethod
    def start(cls, bodies: Sequence[bytes], cache_size: int) -> Crawl:
        settings = {
            "ROBOTSTXT_OBEY": True,
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
                "scrapy_rep9309.RobotsTxtMiddleware": 100,
            },
            "USER_AGENT": USER_AGENT,
            "REP9309_CACHE_SIZE": cache_size,
            "LOG_LEVEL": "WARNING",
        }
        crawler = get_crawler(Spider, settings)
        crawler.engine = _Engine()  # type: ignore[assignment]
        middleware = RobotsTxtMiddleware.from_crawler(crawler)
        crawl = cls(middleware, bodies)
        middleware.driver._download = crawl._download  # type: ignore[method-assign]
        return crawl

    async def _download(self, origin: Origin, trigger: Request | None) -> FetchResult:
        """A 200 answer with the origin's corpus body, a fresh copy as a download makes,
        once ``visit`` says the response arrived (a download always waits)."""
        arrived: Deferred[None] = Deferred()
        self.downloads.append(arrived)
        await arrived
        body = bytes(bytearray(self.body_of(origin.port)))
        return answered(
            origin,
            200,
            body,
            redirects=(),
            final_url=origin.robots_url,
            truncated=False,
            cache_control=[],
            retry_after=None,
        )

    def body_of(self, port: int) -> bytes:
        """The corpus body of the origin on port ``port``."""
        return self.bodies[port % len(self.bodies)]

    def visit(self, index: int) -> None:
        """One more origin: schedule a request, answer its fetch, decide its URLs."""
        middleware = self.middleware
        driver = middleware.driver
        base = f"http://origin-{index}.example:{index + 1024}"  # the port picks the body
        first = Request(base + TYPICAL_PATHS[0])
        middleware.request_scheduled(first)  # held until the robots.txt answers
        while self.downloads:
            self.downloads.pop().callback(None)  # the response arrives
        driver._flush()  # the released request goes on, as the engine's next tick would
        driver._timers.cancel(("outbox", id(driver)))
        _reactor().runUntilCurrent()  # a running reactor forgets cancelled calls
        for path in TYPICAL_PATHS:
            request = first if path == TYPICAL_PATHS[0] else Request(base + path)
            try:
                _run(middleware.process_request(request))
            except IgnoreRequest:
                pass
        self.origins += 1


def load_bodies(corpus: Path, max_size: int) -> list[bytes]:
    """The corpus's bodies as a crawl keeps them (size-limited), in file name order."""
    files = sorted(path for path in corpus.iterdir() if path.is_file())
    if not files:
        sys.exit(f"no files in {corpus}")
    return [prepare(path.read_bytes(), max_size) for path in files]


def category(trace: tracemalloc.Traceback) -> str:
    for frame in reversed(trace):  # innermost first
        filename = frame.filename.replace(os.sep, "/")
        for name, parts in CATEGORIES:
            if any(part in filename for part in parts):
                return name
        if "/scrapy_rep9309/" in filename:
            return OTHER
    return OTHER


def held_by_category(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> Counter[str]:
    """Bytes allocated between the snapshots and still alive, by what they are part of."""
    held: Counter[str] = Counter()
    for difference in after.compare_to(before, "traceback"):
        if difference.size_diff:
            held[category(difference.traceback)] += difference.size_diff
    return held


def _ratio_line(held_per_origin: float, body_average: float) -> str:
    ratio = held_per_origin / body_average
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    return (
        f"memory per origin: {held_per_origin / 1024:.1f} KiB held, bodies average "
        f"{body_average / 1024:.1f} KiB: {ratio:.2f}x (target <= {TARGET_RATIO:.1f}x: {verdict})"
    )


def held_after_visits(crawl: Crawl, origins: int) -> Counter[str]:
    """Bytes still held, by category, after origins 1 to ``origins`` went through ``crawl``."""
    gc.collect()
    before = tracemalloc.take_snapshot()
    for index in range(1, origins + 1):
        crawl.visit(index)
    gc.collect()
    return held_by_category(before, tracemalloc.take_snapshot())


def measure_everything(bodies: Sequence[bytes], origins: int) -> None:
    """Run 1: every origin kept; bytes held per origin against the bodies."""
    crawl = Crawl.start(bodies, cache_size=origins + 1)
    crawl.visit(0)  # warm up: first-use caches, the reactor's first timers
    held = held_after_visits(crawl, origins)
    body_total = sum(len(crawl.body_of(index + 1024)) for index in range(1, origins + 1))
    body_average = body_total / origins
    per_origin = sum(held.values()) / origins
    driver = crawl.middleware.driver
    print(
        f"{origins:,} origins, {len(bodies):,} corpus files cycled, parser {core.ACTIVE.name}; "
        f"kept: {len(driver.machines):,} machines, "
        f"{len(crawl.middleware.store):,} stored records, "
        f"{len(crawl.middleware.accounting.reports()):,} reports"
    )
    print(_ratio_line(per_origin, body_average))
    parts = ", ".join(
        f"{name} {held[name] / origins / 1024:.2f} KiB"
        for name in (*(name for name, _ in CATEGORIES), OTHER)
    )
    print(f"  per origin: {parts}")


def measure_bounded(bodies: Sequence[bytes], origins: int, cache_size: int) -> None:
    """Run 2: more origins than REP9309_CACHE_SIZE: what is kept stays bounded."""
    crawl = Crawl.start(bodies, cache_size=cache_size)
    held = sum(held_after_visits(crawl, origins).values())
    middleware = crawl.middleware
    driver = middleware.driver
    reports = len(middleware.accounting.reports())
    bounded = max(len(driver.machines), len(middleware.store), reports, len(driver._parsed))
    verdict = "met" if bounded <= cache_size else "NOT met"
    print(
        f"REP9309_CACHE_SIZE={cache_size}, {origins:,} origins: kept {len(driver.machines):,} "
        f"machines, {len(middleware.store):,} stored records, {len(driver._parsed):,} parsed, "
        f"{reports:,} reports ({held / 1024 / 1024:.1f} MiB held, "
        f"{held / cache_size / 1024:.1f} KiB per cached origin; "
        f"target: each <= {cache_size}: {verdict})"
    )
    stats = middleware.stats.get_stats()
    summary = getattr(middleware.accounting, "summary", None)  # None before issue 13
    line = summary(stats) if summary else summary_line(middleware.accounting.reports(), stats)
    print(f"  close summary: {line.split(';')[0]}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/corpus/robots")
    parser.add_argument("--origins", type=int, default=20000)
    parser.add_argument("--bounded", type=int, default=5000)
    parser.add_argument("--bounded-cache", type=int, default=1000)
    args = parser.parse_args(argv)
    bodies = load_bodies(args.corpus, DEFAULT_MAX_SIZE)
    # A plain Twisted reactor (not asyncio's): the driver's tasks then run at once,
    # up to their first real wait, which the memory store never makes.
    from twisted.internet import reactor  # noqa: F401 (installs it)

    tracemalloc.start(1)
    measure_everything(bodies, args.origins)
    gc.collect()
    measure_bounded(bodies, args.bounded, args.bounded_cache)


if __name__ == "__main__":
    main()
