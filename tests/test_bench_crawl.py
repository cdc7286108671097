"""benchmarks/bench_crawl.py: its fetch-only and hold-only contenders do what they claim, and a
tiny run prints every contender, the bound line and the design line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from benchmarks import _hold_only, bench_crawl
from benchmarks._fetch_only import DOWNLOADED_STAT, FAILED_STAT, STARTED_STAT
from tests.crawl import run_crawl
from tests.servers import ServerPool, reset, rules

REPO = Path(__file__).resolve().parent.parent
FETCH_ONLY_ENABLED = {
    "ROBOTSTXT_OBEY": False,
    "DOWNLOADER_MIDDLEWARES": {"benchmarks._fetch_only.FetchOnlyMiddleware": 100},
}
HOLD_ONLY_ENABLED = {
    "ROBOTSTXT_OBEY": False,
    "DOWNLOADER_MIDDLEWARES": {"benchmarks._hold_only.HoldOnlyMiddleware": 100},
}
PAGES = [f"/page/{n}" for n in range(3)]


@deferred_f_from_coro_f
async def test_fetch_only_downloads_each_robots_txt_once_and_holds_only_the_first_request(
    servers: ServerPool,
) -> None:
    slow = servers.add(rules("User-agent: *\nDisallow: /\n", delay=1.5))
    quick = servers.add(rules("User-agent: *\nDisallow: /\n"))
    pages = slow.urls(PAGES) + quick.urls(PAGES)

    result = await run_crawl(pages, enable=FETCH_ONLY_ENABLED)

    # Nothing is decided: every page is crawled although robots.txt disallows it.
    assert result.urls == set(pages)
    assert len(slow.robots_fetches) == len(quick.robots_fetches) == 1
    # Its own robots.txt requests start no download of their own.
    assert result.stat(STARTED_STAT) == result.stat(DOWNLOADED_STAT) == 2
    assert result.stat(FAILED_STAT) == 0
    # The slow origin's first request waited for its robots.txt; the others did not.
    answered = slow.robots_fetches[0].answered
    assert answered is not None
    slow_times = sorted(seen.time for seen in result.responses if seen.url.startswith(slow.base))
    assert slow_times[-1] >= answered
    assert slow_times[-2] < answered


@deferred_f_from_coro_f
async def test_fetch_only_counts_a_failed_download_and_logs_no_error(servers: ServerPool) -> None:
    site = servers.add(reset())

    # Without retries: RetryMiddleware's own "Gave up retrying" is an ERROR line of Scrapy's.
    result = await run_crawl(site.urls(PAGES), {"RETRY_ENABLED": False}, enable=FETCH_ONLY_ENABLED)

    assert result.urls == set(site.urls(PAGES))
    assert result.stat(STARTED_STAT) == result.stat(FAILED_STAT) == 1
    assert result.stat(DOWNLOADED_STAT) == 0
    assert [record for record in result.logs if record.levelname in ("ERROR", "CRITICAL")] == []


@deferred_f_from_coro_f
async def test_hold_only_holds_every_request_of_an_origin_until_its_robots_txt_is_downloaded(
    servers: ServerPool,
) -> None:
    slow = servers.add(rules("User-agent: *\nDisallow: /\n", delay=1.5))
    quick = servers.add(rules("User-agent: *\nDisallow: /\n"))
    pages = slow.urls(PAGES) + quick.urls(PAGES)

    result = await run_crawl(pages, {"CONCURRENT_REQUESTS": 2}, enable=HOLD_ONLY_ENABLED)

    # Nothing is decided: every page is crawled, once, although robots.txt disallows it.
    assert result.urls == set(pages)
    assert len(result.responses) == len(pages)
    assert len(slow.robots_fetches) == len(quick.robots_fetches) == 1
    assert result.stat(_hold_only.DOWNLOADED_STAT) == 2
    assert result.stat(_hold_only.FAILED_STAT) == 0
    # Every page came before its origin's robots.txt was downloaded: held, then released.
    assert result.stat(_hold_only.HELD_STAT) == result.stat(_hold_only.RELEASED_STAT) == 6
    answered = slow.robots_fetches[0].answered
    quick_answered = quick.robots_fetches[0].answered
    assert answered is not None and quick_answered is not None
    assert all(seen.time >= answered for seen in result.responses if seen.url.startswith(slow.base))
    assert all(
        seen.time >= quick_answered for seen in result.responses if seen.url.startswith(quick.base)
    )
    # Held outside the downloader: the slow robots.txt left both slots to the quick origin.
    quick_done = max(seen.time for seen in result.responses if seen.url.startswith(quick.base))
    assert quick_done < answered


@deferred_f_from_coro_f
async def test_hold_only_releases_what_it_held_when_the_robots_txt_download_fails(
    servers: ServerPool,
) -> None:
    site = servers.add(reset())

    result = await run_crawl(site.urls(PAGES), {"RETRY_ENABLED": False}, enable=HOLD_ONLY_ENABLED)

    assert result.urls == set(site.urls(PAGES))
    assert len(result.responses) == len(PAGES)
    assert result.stat(_hold_only.FAILED_STAT) == 1
    assert result.stat(_hold_only.DOWNLOADED_STAT) == 0
    assert result.stat(_hold_only.HELD_STAT) == result.stat(_hold_only.RELEASED_STAT) == 3
    assert [record for record in result.logs if record.levelname in ("ERROR", "CRITICAL")] == []


def test_every_contender_goes_first_in_turn() -> None:
    contenders = bench_crawl.MIDDLEWARES
    rounds = list(bench_crawl.alternating(2 * len(contenders)))
    orders = [rounds[i : i + len(contenders)] for i in range(0, len(rounds), len(contenders))]
    assert all(sorted(order) == sorted(contenders) for order in orders)
    assert {order[0] for order in orders} == set(contenders)
    assert "fetchonly" in contenders and "holdonly" in contenders


@pytest.mark.timeout(170)
def test_a_tiny_run_prints_every_contender_and_the_bound() -> None:
    args = "--origins 3 --pages 2 --rounds 1 --slow-delay 0.5 --slow-requests 2 --concurrency 4"
    args = args.split()
    output = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_crawl.py"), *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=150,
    ).stdout

    for scenario in ("broad", "head-of-line"):
        for contender in ("builtin", "rep9309", "fetch-only", "hold-only", "floor"):
            assert any(line.split()[:2] == [scenario, contender] for line in output.splitlines()), (
                scenario,
                contender,
                output,
            )
    assert "'CONCURRENT_REQUESTS': 4," in output.splitlines()[0]  # passed on to every crawl
    # One robots.txt per origin (three, plus the slow one in the head-of-line scenario).
    assert "  broad        fetch-only 6 pages" in output
    assert "  broad        hold-only  6 pages" in output
    assert "3 robots.txt downloads" in output and "4 robots.txt downloads" in output
    lines = {line.split(":")[0]: line for line in output.splitlines() if ":" in line}
    assert "target >= 0.95x: " in lines["broad crawl"]
    assert (
        "fetch-only" in lines["broad crawl"] and "fetch-only" in lines["broad crawl CPU per page"]
    )
    assert "fetch-only" in lines["head-of-line, other origins done after"]
    bound = [line for line in output.splitlines() if line.startswith("bound: ")]
    assert bound[0].startswith("bound: the robots.txt downloads alone (fetch-only) reach "), output
    assert "x fetch-only's pages/s" in bound[0]
    design = [line for line in output.splitlines() if line.startswith("design: ")]
    assert design[0].startswith("design: holding outside the downloader alone (hold-only) "), output


def test_the_bound_line_gives_fetch_only_against_the_floor_and_rep9309_against_fetch_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rate = {"builtin": 880.0, "rep9309": 850.0, "fetchonly": 900.0, "floor": 1000.0}
    cpu = {"builtin": 1.2, "rep9309": 1.3, "fetchonly": 1.1, "floor": 1.0}
    done = {"builtin": 8.0, "rep9309": 3.5, "fetchonly": 3.3, "floor": 3.0}

    bench_crawl.report_bound(rate, cpu, done)

    assert capsys.readouterr().out.splitlines() == [
        "bound: the robots.txt downloads alone (fetch-only) reach 0.90x the floor's pages/s and "
        "1.10x its head-of-line time, +0.100 ms CPU per page over it; rep9309 reaches 0.94x "
        "fetch-only's pages/s and 1.06x its head-of-line time"
    ]


def test_the_design_line_gives_hold_only_against_builtin_and_rep9309_against_hold_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rate = {"builtin": 1000.0, "rep9309": 900.0, "holdonly": 960.0, "floor": 1100.0}
    cpu = {"builtin": 1.2, "rep9309": 1.35, "holdonly": 1.25, "floor": 1.0}
    done = {"builtin": 8.0, "rep9309": 3.5, "holdonly": 3.3, "floor": 3.0}

    bench_crawl.report_design(rate, cpu, done)

    assert capsys.readouterr().out.splitlines() == [
        "design: holding outside the downloader alone (hold-only) reaches 0.96x builtin's "
        "pages/s, +0.050 ms CPU per page over it, and 1.10x the floor's head-of-line time; "
        "rep9309 reaches 0.94x hold-only's pages/s, +0.100 ms CPU per page over it"
    ]
