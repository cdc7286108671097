"""The sample project's ``scrapy crawl demo``, end to end, as the README tells users to run it."""

from __future__ import annotations

import re
import time
from subprocess import CompletedProcess

import pytest

from tests._commands import SAMPLE_PROJECT, run, scrapy
from tests._readme import section

#: Every page of each demo site (sample_project/demo_project/localweb.py).
ALL_PAGES = {"shop": 7, "blog": 4, "news": 5, "docs": 4, "outlet": 4, "press": 4}
DEMO_TIME_LIMIT = 60


def crawl_demo(*settings: str) -> CompletedProcess[str]:
    args = [arg for setting in settings for arg in ("-s", setting)]
    started = time.monotonic()
    result = run(scrapy("crawl", "demo", *args), cwd=SAMPLE_PROJECT, timeout=DEMO_TIME_LIMIT)
    assert time.monotonic() - started < DEMO_TIME_LIMIT
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result


def table(stdout: str) -> dict[str, dict[str, str]]:
    """The printed table: site -> column -> cell."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("site "))
    columns = re.split(r"\s{2,}", lines[start].strip())
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        cells = dict(zip(columns, re.split(r"\s{2,}", line.strip()), strict=True))
        rows[cells["site"]] = cells
    return rows


def server_log(stdout: str) -> dict[str, str]:
    """The "What each server saw" section: site -> summary."""
    _, _, section = stdout.partition("What each server saw, in order:\n")
    entries = (line.split(None, 1) for line in section.strip().splitlines())
    return {name: summary for name, summary in entries}


def items_line(stdout: str) -> str:
    (line,) = [line for line in stdout.splitlines() if line.startswith("Items: ")]
    return line


def pages_served(summary: str) -> int:
    match = re.search(r"(\d+) pages?$", summary)
    return int(match.group(1)) if match else 0


def assert_pages_match_servers(stdout: str) -> None:
    """The spider's page counts agree with what the servers served."""
    served = server_log(stdout)
    for site, row in table(stdout).items():
        assert int(row["pages"]) == pages_served(served[site]), site


@pytest.fixture(scope="module")
def rep9309_run() -> CompletedProcess[str]:
    return crawl_demo()


def test_demo_table_with_this_plugin(rep9309_run: CompletedProcess[str]) -> None:
    stdout = rep9309_run.stdout
    assert "robots.txt handled by: scrapy_rep9309.RobotsTxtMiddleware" in stdout
    rows = table(stdout)
    assert list(rows) == list(ALL_PAGES)
    summary = {
        site: (row["robots.txt"], row["pages"], row["forbidden"]) for site, row in rows.items()
    }
    assert summary == {
        "shop": ("available (200)", "4", "3"),
        "blog": ("unavailable (404)", "4", "0"),
        "news": ("available (200)", "3", "2"),
        "docs": ("available (200)", "3", "1"),
        "outlet": ("available (200)", "3", "1"),
        "press": ("available (200)", "4", "0"),
    }
    for site, row in rows.items():
        assert int(row["deferred"]) >= 1, site
        assert row["released"] == row["deferred"], site
        assert row["failed"] == "0", site
    assert_pages_match_servers(stdout)


def test_usage_preferences_reach_the_table_and_the_item_pipeline(
    rep9309_run: CompletedProcess[str],
) -> None:
    """press: train-ai=n but under /ai-ok/; search=y but where a page's header says n.
    The pipeline drops the three pages refusing AI training (/, /wires/1, /wires/2)."""
    stdout = rep9309_run.stdout
    usage = {site: row["usage"] for site, row in table(stdout).items()}
    assert usage == {**dict.fromkeys(ALL_PAGES, "none"), "press": "train-ai=n,y search=n,y"}
    assert items_line(stdout).startswith("Items: 18 kept, 3 dropped by the item pipeline")
    assert "1 stating usage preferences" in rep9309_run.stderr


def test_required_usage_keeps_refused_pages_from_being_downloaded() -> None:
    stdout = crawl_demo("REP9309_REQUIRE_USAGE=train-ai").stdout

    press = table(stdout)["press"]
    assert (press["pages"], press["failed"]) == ("0", "0")
    assert press["usage"] == "train-ai=n search=y (1 refused)"
    assert server_log(stdout)["press"] == "/robots.txt 200"


def test_the_docs_show_the_demo_pipeline() -> None:
    """The pipeline docs/usage-preferences.md documents is the one the demo runs."""
    source = (SAMPLE_PROJECT / "demo_project" / "pipelines.py").read_text(encoding="utf-8")
    documented = section("Usage preferences")
    start = source.index("class DropRefusedTraining")
    assert source[start:].strip() in documented


def test_503_origin_crawled_only_after_recovery(rep9309_run: CompletedProcess[str]) -> None:
    served = server_log(rep9309_run.stdout)
    assert served["news"] == "/robots.txt 503 x3 -> /robots.txt 200 -> 3 pages"
    assert int(table(rep9309_run.stdout)["news"]["deferred"]) == 3


def test_redirected_robots_txt_rules_apply(rep9309_run: CompletedProcess[str]) -> None:
    served = server_log(rep9309_run.stdout)
    assert served["docs"] == "/robots.txt 301 -> 3 pages"
    assert served["cdn"] == "/robots/docs.txt 200"


def test_demo_with_scrapy_builtin_middleware() -> None:
    stdout = crawl_demo("DEMO_MIDDLEWARE=builtin").stdout

    assert "robots.txt handled by: Scrapy's built-in RobotsTxtMiddleware" in stdout
    rows = table(stdout)
    assert list(rows) == list(ALL_PAGES)
    assert {row["deferred"] for row in rows.values()} == {"-"}
    assert {row["usage"] for row in rows.values()} == {"-"}
    assert items_line(stdout).startswith("Items: 19 kept, 0 dropped")
    assert rows["blog"]["robots.txt"] == "HTTP 404"
    assert_pages_match_servers(stdout)


def test_demo_without_obeying_robots_txt() -> None:
    stdout = crawl_demo("ROBOTSTXT_OBEY=False").stdout

    assert "robots.txt handled by: nothing (ROBOTSTXT_OBEY is False)" in stdout
    rows = table(stdout)
    assert {site: int(row["pages"]) for site, row in rows.items()} == ALL_PAGES
    assert {row["forbidden"] for row in rows.values()} == {"0"}
    assert {row["robots.txt"] for row in rows.values()} == {"not fetched"}
    assert "robots" not in "".join(server_log(stdout).values()).replace("/robots/docs", "")
    assert_pages_match_servers(stdout)


def test_unknown_middleware_switch_fails_naming_the_setting() -> None:
    result = run(scrapy("crawl", "demo", "-s", "DEMO_MIDDLEWARE=other"), cwd=SAMPLE_PROJECT)

    assert result.returncode != 0
    assert "DEMO_MIDDLEWARE must be one of rep9309, builtin, not 'other'" in result.stderr
