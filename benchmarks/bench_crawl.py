"""Crawl speed: Scrapy's built-in RobotsTxtMiddleware, scrapy_rep9309's, and no robots.txt.

Usage::

    python benchmarks/bench_crawl.py                 # 300 origins x 10 pages, 3 rounds
    python benchmarks/bench_crawl.py --origins 500 --rounds 5
    python benchmarks/bench_crawl.py --concurrency 4  # every contender at one pace

Two scenarios, each crawled by five contenders taking turns, every crawl in a fresh
subprocess (a Twisted reactor cannot restart), against local web servers running in
another subprocess:

- ``builtin``: Scrapy's built-in RobotsTxtMiddleware.
- ``rep9309``: this plugin.
- ``fetchonly`` (printed "fetch-only"): the floor plus ``_fetch_only.FetchOnlyMiddleware``,
  which downloads each origin's robots.txt through Scrapy's downloader and does nothing
  else: no parsing, no decision; only the origin's first request waits for the download
  (so the page reuses its connection, as with any handling that decides before sending),
  later ones go at once. Every origin's robots.txt is one more download on top of its
  pages, and the crawl is CPU-bound: what this contender costs over the floor is meant
  as the cost of those downloads alone, what any robots.txt handling that downloads
  through the engine pays. Measured, it comes out both above and below the floor from
  run to run: how a crawl's requests bunch together moves CPU per page by as much as
  the downloads cost, so its ``bound:`` line gives figures, not a verdict.
- ``holdonly`` (printed "hold-only"): the floor plus ``_hold_only.HoldOnlyMiddleware``,
  which does what this plugin's design asks before any robots.txt handling: requests
  of an origin whose robots.txt is not downloaded yet are held outside the downloader,
  the robots.txt is downloaded once through the engine, and the held requests are handed
  back to the engine; nothing parsed, decided, stored or timed. What it costs against
  the built-in (which waits inside the downloader instead) is what holding outside the
  downloader costs on its own; its ``design:`` line gives the figures.
- ``floor``: ``ROBOTSTXT_OBEY=False``, no robots.txt at all.

Each crawl's line ends with the requests in the downloader on average: Scrapy's engine
runs this benchmark at one of two paces (about 4 in flight, or about 25 once the
downloader filled up and the start requests were queued at once; the second costs
10-15% less CPU per page), which is most of the spread between rounds
(docs/benchmarks.md, "Two paces").

The scenarios:

- broad crawl: every origin's robots.txt answers at once; pages per second over the
  whole crawl (robots.txt fetches included).
- head-of-line: the same crawl plus one origin whose robots.txt takes 5 s and has 50
  requests queued first; seconds until every OTHER origin is done. Scrapy's built-in
  waits inside the downloader, so those 50 requests fill CONCURRENT_REQUESTS and
  stall everything; this project holds them outside the downloader.

Each crawl also counts its downloads other than pages (``downloader/request_count``
minus pages: the robots.txt downloads here), and the fetch-only and hold-only crawls
check that they downloaded exactly one robots.txt per origin (hold-only: and released
every request it held).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
SITES_SCRIPT = BENCHMARKS / "_bench_sites.py"
MIDDLEWARES = ("builtin", "rep9309", "fetchonly", "holdonly", "floor")
LABELS = {"fetchonly": "fetch-only", "holdonly": "hold-only"}
SETTINGS: dict[str, Any] = {
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "DOWNLOAD_TIMEOUT": 30,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "WARNING",
    "COOKIES_ENABLED": False,
    # The spider yields no items; Scrapy still starts CONCURRENT_ITEMS tasks per response.
    # 1 cuts that overhead (the same for both middlewares) so theirs shows more.
    "CONCURRENT_ITEMS": 1,
}
ENABLE: dict[str, dict[str, Any]] = {
    "builtin": {},
    "floor": {"ROBOTSTXT_OBEY": False},
    # The floor plus the robots.txt downloads alone, in the plugin's slot (100).
    "fetchonly": {
        "ROBOTSTXT_OBEY": False,
        "DOWNLOADER_MIDDLEWARES": {"_fetch_only.FetchOnlyMiddleware": 100},
    },
    # The floor plus holding outside the downloader until robots.txt is downloaded.
    "holdonly": {
        "ROBOTSTXT_OBEY": False,
        "DOWNLOADER_MIDDLEWARES": {"_hold_only.HoldOnlyMiddleware": 100},
    },
    "rep9309": {
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "scrapy_rep9309.RobotsTxtMiddleware": 100,
        }
    },
}


@dataclass(frozen=True)
class CrawlRun:
    """What one crawl subprocess measured (seconds from engine start)."""

    middleware: str
    scenario: str
    pages: int
    elapsed: float
    others_done: float
    cpu: float
    other_downloads: int
    #: Requests in the downloader, on average over the crawl (sampled every
    #: IN_FLIGHT_SAMPLE_INTERVAL): which of Scrapy's two paces the crawl ran at.
    in_flight: float

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.elapsed

    @property
    def cpu_ms_per_page(self) -> float:
        """Crawler CPU per page: far less disturbed than wall time by other processes."""
        return 1000 * self.cpu / self.pages


def label(middleware: str) -> str:
    """The name printed for a contender."""
    return LABELS.get(middleware, middleware)


def count_origins(urls: Sequence[str]) -> int:
    """Distinct origins (RFC 9309 2.3: scheme, host, port) among ``urls``: one robots.txt
    each, as the plugin's ``Origin`` reads them."""
    sys.path.insert(0, str(REPO))
    from scrapy_rep9309.policy.origin import Origin

    return len({Origin.from_url(url) for url in urls})


def plan_urls(
    origins: Sequence[str], pages: int, slow: str | None, slow_requests: int
) -> list[str]:
    """Slow origin's requests first (they reach the downloader first), then breadth first."""
    urls = [f"{slow}/page/{n}" for n in range(slow_requests)] if slow else []
    urls += [f"{base}/page/{n}" for n in range(pages) for base in origins]
    return urls


#: Seconds between two looks at how many requests the downloader has (a look is a
#: ``len()``: it does not disturb the crawl it measures).
IN_FLIGHT_SAMPLE_INTERVAL = 0.02


def crawl_in_this_process(middleware: str, urls: list[str], slow: str | None) -> dict[str, Any]:
    """Run one crawl with CrawlerProcess; the child side of ``run_crawl_subprocess``."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(BENCHMARKS))  # _fetch_only, whichever way this module was loaded
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    from tests.crawl import CrawlResult, PlanSpider

    result = CrawlResult(started=0.0)
    process = CrawlerProcess({**SETTINGS, **ENABLE[middleware]})
    crawler = process.create_crawler(PlanSpider)
    cpu_at_start = 0.0

    def engine_started() -> None:
        nonlocal cpu_at_start
        result.started = time.monotonic()
        cpu_at_start = time.process_time()

    in_flight: list[int] = []
    samplers: list[Any] = []

    def sample_in_flight() -> None:
        engine = crawler.engine
        if engine is not None and engine.running:
            in_flight.append(len(engine.downloader.active))

    def start_sampling() -> None:
        from twisted.internet.task import LoopingCall  # once the crawl's reactor runs

        sampler = LoopingCall(sample_in_flight)
        sampler.start(IN_FLIGHT_SAMPLE_INTERVAL)
        samplers.append(sampler)

    def stop_sampling() -> None:
        for sampler in samplers:
            sampler.stop()

    crawler.signals.connect(engine_started, signal=signals.engine_started)
    crawler.signals.connect(start_sampling, signal=signals.engine_started)
    crawler.signals.connect(stop_sampling, signal=signals.engine_stopped)
    process.crawl(crawler, plan=urls, result=result)
    process.start()
    cpu = time.process_time() - cpu_at_start
    others = [seen.time for seen in result.responses if not (slow and seen.url.startswith(slow))]
    last = max(seen.time for seen in result.responses)
    assert crawler.stats is not None
    stats = crawler.stats.get_stats()
    measured: dict[str, Any] = {
        "pages": len(result.responses),
        "failures": len(result.failures),
        "elapsed": last - result.started,
        "others_done": max(others) - result.started,
        "cpu": cpu,
        "other_downloads": stats.get("downloader/request_count", 0) - len(result.responses),
        "in_flight": statistics.mean(in_flight) if in_flight else 0.0,
    }
    if middleware == "fetchonly":
        from _fetch_only import DOWNLOADED_STAT, FAILED_STAT, STARTED_STAT

        measured["origins"] = count_origins(urls)
        measured["robots_txt"] = {
            key: stats.get(key, 0) for key in (STARTED_STAT, DOWNLOADED_STAT, FAILED_STAT)
        }
    if middleware == "holdonly":
        import _hold_only

        measured["origins"] = count_origins(urls)
        measured["robots_txt"] = {
            key: stats.get(key, 0)
            for key in (
                _hold_only.DOWNLOADED_STAT,
                _hold_only.FAILED_STAT,
                _hold_only.HELD_STAT,
                _hold_only.RELEASED_STAT,
            )
        }
    return measured


def check_fetch_only(measured: dict[str, Any]) -> None:
    """The fetch-only contender proves its cost: one robots.txt downloaded per origin."""
    from _fetch_only import DOWNLOADED_STAT, STARTED_STAT

    counts, origins = measured["robots_txt"], measured["origins"]
    if not counts[STARTED_STAT] == counts[DOWNLOADED_STAT] == origins:
        raise RuntimeError(f"fetch-only: {counts} for {origins} origins, not one each")


def check_hold_only(measured: dict[str, Any]) -> None:
    """The hold-only contender proves its cost: one robots.txt per origin downloaded, and
    every request it held handed back."""
    from _hold_only import DOWNLOADED_STAT, FAILED_STAT, HELD_STAT, RELEASED_STAT

    counts, origins = measured["robots_txt"], measured["origins"]
    if counts[DOWNLOADED_STAT] != origins or counts[FAILED_STAT]:
        raise RuntimeError(f"hold-only: {counts} for {origins} origins, not one each")
    if not counts[HELD_STAT] or counts[HELD_STAT] != counts[RELEASED_STAT]:
        raise RuntimeError(f"hold-only: {counts}, not every held request released")


def run_crawl_subprocess(
    middleware: str, scenario: str, urls: list[str], slow: str | None, workdir: Path
) -> CrawlRun:
    job = workdir / f"{scenario}-{middleware}.json"
    job.write_text(
        json.dumps({"middleware": middleware, "urls": urls, "slow": slow, "settings": SETTINGS})
    )
    output = subprocess.run(
        [sys.executable, __file__, "--child", str(job)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    measured = json.loads(output.stdout.strip().splitlines()[-1])
    if measured["failures"]:
        raise RuntimeError(f"{middleware} {scenario}: {measured['failures']} requests failed")
    if middleware == "fetchonly":
        check_fetch_only(measured)
    if middleware == "holdonly":
        check_hold_only(measured)
    return CrawlRun(
        middleware,
        scenario,
        measured["pages"],
        measured["elapsed"],
        measured["others_done"],
        measured["cpu"],
        measured["other_downloads"],
        measured["in_flight"],
    )


@contextmanager
def web_servers(origins: int, slow_delay: float) -> Iterator[dict[str, Any]]:
    server = subprocess.Popen(
        [
            sys.executable,
            str(SITES_SCRIPT),
            "--origins",
            str(origins),
            "--slow-delay",
            str(slow_delay),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert server.stdout is not None
        yield json.loads(server.stdout.readline())
    finally:
        assert server.stdin is not None
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def alternating(rounds: int) -> Iterator[str]:
    """Each round in another order: round 2k is MIDDLEWARES rotated by k, round 2k+1 the same
    order reversed. Every contender goes first in turn; none always goes first."""
    for index in range(rounds):
        shift = (index // 2) % len(MIDDLEWARES)
        order = MIDDLEWARES[shift:] + MIDDLEWARES[:shift]
        yield from order if index % 2 == 0 else reversed(order)


def run_scenario(
    scenario: str, urls: list[str], slow: str | None, rounds: int, workdir: Path
) -> dict[str, list[CrawlRun]]:
    runs: dict[str, list[CrawlRun]] = {name: [] for name in MIDDLEWARES}
    for middleware in alternating(rounds):
        run = run_crawl_subprocess(middleware, scenario, urls, slow, workdir)
        runs[middleware].append(run)
        print(
            f"  {scenario:<12} {label(middleware):<10} {run.pages} pages in {run.elapsed:6.2f} s "
            f"({run.pages_per_second:7.1f} pages/s, {run.cpu_ms_per_page:5.2f} ms CPU/page), "
            f"other origins done at {run.others_done:6.2f} s, "
            f"{run.other_downloads} robots.txt downloads, {run.in_flight:4.1f} in flight",
            flush=True,
        )
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=300)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slow-delay", type=float, default=5.0)
    parser.add_argument("--slow-requests", type=int, default=50)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=SETTINGS["CONCURRENT_REQUESTS"],
        help="CONCURRENT_REQUESTS for every contender; 4 runs them all at one pace "
        '(docs/benchmarks.md, "Two paces")',
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        job = json.loads(args.child.read_text())
        SETTINGS.update(job["settings"])
        print(json.dumps(crawl_in_this_process(job["middleware"], job["urls"], job["slow"])))
        return

    import tempfile

    SETTINGS["CONCURRENT_REQUESTS"] = args.concurrency
    print(
        f"{args.origins} origins x {args.pages} pages, {args.rounds} rounds per middleware, "
        f"settings {SETTINGS}",
        flush=True,
    )
    with web_servers(args.origins, args.slow_delay) as sites, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        broad = run_scenario(
            "broad", plan_urls(sites["origins"], args.pages, None, 0), None, args.rounds, workdir
        )
        hol_urls = plan_urls(sites["origins"], args.pages, sites["slow"], args.slow_requests)
        hol = run_scenario("head-of-line", hol_urls, sites["slow"], args.rounds, workdir)

    report(broad, hol)


def report(broad: dict[str, list[CrawlRun]], hol: dict[str, list[CrawlRun]]) -> None:
    """Medians of the rounds, side by side; CPU per page is the least disturbed figure."""
    rate = {name: statistics.median(run.pages_per_second for run in broad[name]) for name in broad}
    cpu = {name: statistics.median(run.cpu_ms_per_page for run in broad[name]) for name in broad}
    print(
        "broad crawl: "
        + ", ".join(f"{label(name)} {rate[name]:.1f} pages/s" for name in MIDDLEWARES)
        + f"; rep9309 {rate['rep9309'] / rate['builtin']:.2f}x builtin (target >= 0.95x: "
        f"{_met(rate['rep9309'] >= 0.95 * rate['builtin'])}), "
        f"{rate['rep9309'] / rate['floor']:.2f}x floor (target >= 0.95x: "
        f"{_met(rate['rep9309'] >= 0.95 * rate['floor'])})"
    )
    print(
        "broad crawl CPU per page: "
        + ", ".join(f"{label(name)} {cpu[name]:.3f} ms" for name in MIDDLEWARES)
        + f"; over the floor: builtin {cpu['builtin'] - cpu['floor']:+.3f} ms, "
        f"rep9309 {cpu['rep9309'] - cpu['floor']:+.3f} ms, "
        f"fetch-only {cpu['fetchonly'] - cpu['floor']:+.3f} ms"
    )
    done = {name: statistics.median(run.others_done for run in hol[name]) for name in hol}
    print(
        "head-of-line, other origins done after: "
        + ", ".join(f"{label(name)} {done[name]:.2f} s" for name in MIDDLEWARES)
        + f"; rep9309 {done['rep9309'] / done['floor']:.2f}x the floor's time (target <= 1.05x: "
        f"{_met(done['rep9309'] <= 1.05 * done['floor'])}), "
        f"{done['builtin'] / done['rep9309']:.2f}x faster than builtin"
    )
    report_bound(rate, cpu, done)
    report_design(rate, cpu, done)


def report_bound(rate: dict[str, float], cpu: dict[str, float], done: dict[str, float]) -> None:
    """Where the robots.txt downloads alone (fetch-only) stand against the floor, and this
    middleware against them: figures only, as single crawls of this size vary by several
    percent (fetch-only, which does less than the others, has come out both above and
    below the floor)."""
    print(
        f"bound: the robots.txt downloads alone (fetch-only) reach "
        f"{rate['fetchonly'] / rate['floor']:.2f}x the floor's pages/s and "
        f"{done['fetchonly'] / done['floor']:.2f}x its head-of-line time, "
        f"{cpu['fetchonly'] - cpu['floor']:+.3f} ms CPU per page over it; rep9309 reaches "
        f"{rate['rep9309'] / rate['fetchonly']:.2f}x fetch-only's pages/s and "
        f"{done['rep9309'] / done['fetchonly']:.2f}x its head-of-line time"
    )


def report_design(rate: dict[str, float], cpu: dict[str, float], done: dict[str, float]) -> None:
    """Where holding outside the downloader alone (hold-only) stands against the built-in,
    which waits inside it, and this middleware against hold-only: figures only."""
    print(
        f"design: holding outside the downloader alone (hold-only) reaches "
        f"{rate['holdonly'] / rate['builtin']:.2f}x builtin's pages/s, "
        f"{cpu['holdonly'] - cpu['builtin']:+.3f} ms CPU per page over it, and "
        f"{done['holdonly'] / done['floor']:.2f}x the floor's head-of-line time; rep9309 "
        f"reaches {rate['rep9309'] / rate['holdonly']:.2f}x hold-only's pages/s, "
        f"{cpu['rep9309'] - cpu['holdonly']:+.3f} ms CPU per page over it"
    )


def _met(condition: bool) -> str:
    return "met" if condition else "NOT met"


if __name__ == "__main__":
    main()
