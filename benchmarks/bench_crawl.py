"""Crawl speed: Scrapy's built-in RobotsTxtMiddleware, scrapy_rep9309's, and no robots.txt.

Usage::

    python benchmarks/bench_crawl.py                 # 300 origins x 10 pages, 3 rounds
    python benchmarks/bench_crawl.py --origins 500 --rounds 5

Two scenarios, each crawled by three contenders taking turns (Scrapy's built-in, this
plugin, and ``ROBOTSTXT_OBEY=False``: the floor no robots.txt handling can beat), every
crawl in a fresh subprocess (a Twisted reactor cannot restart), against local web
servers running in another subprocess:

- broad crawl: every origin's robots.txt answers at once; pages per second over the
  whole crawl (robots.txt fetches included).
- head-of-line: the same crawl plus one origin whose robots.txt takes 5 s and has 50
  requests queued first; seconds until every OTHER origin is done. Scrapy's built-in
  waits inside the downloader, so those 50 requests fill CONCURRENT_REQUESTS and
  stall everything; this project holds them outside the downloader.
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

REPO = Path(__file__).resolve().parent.parent
SITES_SCRIPT = Path(__file__).resolve().parent / "_bench_sites.py"
MIDDLEWARES = ("builtin", "rep9309", "floor")
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

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.elapsed

    @property
    def cpu_ms_per_page(self) -> float:
        """Crawler CPU per page: far less disturbed than wall time by other processes."""
        return 1000 * self.cpu / self.pages


def plan_urls(
    origins: Sequence[str], pages: int, slow: str | None, slow_requests: int
) -> list[str]:
    """Slow origin's requests first (they reach the downloader first), then breadth first."""
    urls = [f"{slow}/page/{n}" for n in range(slow_requests)] if slow else []
    urls += [f"{base}/page/{n}" for n in range(pages) for base in origins]
    return urls


def crawl_in_this_process(middleware: str, urls: list[str], slow: str | None) -> dict[str, Any]:
    """Run one crawl with CrawlerProcess; the child side of ``run_crawl_subprocess``."""
    sys.path.insert(0, str(REPO))
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

    crawler.signals.connect(engine_started, signal=signals.engine_started)
    process.crawl(crawler, plan=urls, result=result)
    process.start()
    cpu = time.process_time() - cpu_at_start
    others = [seen.time for seen in result.responses if not (slow and seen.url.startswith(slow))]
    last = max(seen.time for seen in result.responses)
    return {
        "pages": len(result.responses),
        "failures": len(result.failures),
        "elapsed": last - result.started,
        "others_done": max(others) - result.started,
        "cpu": cpu,
    }


def run_crawl_subprocess(
    middleware: str, scenario: str, urls: list[str], slow: str | None, workdir: Path
) -> CrawlRun:
    job = workdir / f"{scenario}-{middleware}.json"
    job.write_text(json.dumps({"middleware": middleware, "urls": urls, "slow": slow}))
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
    return CrawlRun(
        middleware,
        scenario,
        measured["pages"],
        measured["elapsed"],
        measured["others_done"],
        measured["cpu"],
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
    """Each round in another order (rotated, then reversed): none always goes first."""
    for index in range(rounds):
        shift = index % len(MIDDLEWARES)
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
            f"  {scenario:<12} {middleware:<8} {run.pages} pages in {run.elapsed:6.2f} s "
            f"({run.pages_per_second:7.1f} pages/s, {run.cpu_ms_per_page:5.2f} ms CPU/page), "
            f"other origins done at {run.others_done:6.2f} s",
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
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        job = json.loads(args.child.read_text())
        print(json.dumps(crawl_in_this_process(job["middleware"], job["urls"], job["slow"])))
        return

    import tempfile

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
        + ", ".join(f"{name} {rate[name]:.1f} pages/s" for name in MIDDLEWARES)
        + f"; rep9309 {rate['rep9309'] / rate['builtin']:.2f}x builtin (target >= 0.95x: "
        f"{_met(rate['rep9309'] >= 0.95 * rate['builtin'])}), "
        f"{rate['rep9309'] / rate['floor']:.2f}x floor (target >= 0.95x: "
        f"{_met(rate['rep9309'] >= 0.95 * rate['floor'])})"
    )
    print(
        "broad crawl CPU per page: "
        + ", ".join(f"{name} {cpu[name]:.3f} ms" for name in MIDDLEWARES)
        + f"; over the floor: builtin +{cpu['builtin'] - cpu['floor']:.3f} ms, "
        f"rep9309 +{cpu['rep9309'] - cpu['floor']:.3f} ms"
    )
    done = {name: statistics.median(run.others_done for run in hol[name]) for name in hol}
    print(
        "head-of-line, other origins done after: "
        + ", ".join(f"{name} {done[name]:.2f} s" for name in MIDDLEWARES)
        + f"; rep9309 {done['rep9309'] / done['floor']:.2f}x the floor's time (target <= 1.05x: "
        f"{_met(done['rep9309'] <= 1.05 * done['floor'])}), "
        f"{done['builtin'] / done['rep9309']:.2f}x faster than builtin"
    )


def _met(condition: bool) -> str:
    return "met" if condition else "NOT met"


if __name__ == "__main__":
    main()
