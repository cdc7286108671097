"""Pause and resume with JOBDIR: held requests and robots.txt records survive.

Each run of a job is a Scrapy process of its own (``tests/jobdir_crawl.py``), paused
with one SIGINT as a user pauses it with Ctrl-C, against local servers whose
robots.txt is slow or failing at the moment of the pause and recovers afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.defer import deferred_f_from_coro_f, deferred_from_coro, maybe_deferred_to_future
from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread

from scrapy_rep9309.integration.jobdir import read_state, state_path
from tests._commands import REPO_ROOT, tool_environment
from tests.crawl import ADDON, BUILTIN, FORBIDDEN_MESSAGE, PlanSpider, Wait, run_crawl
from tests.servers import Reply, ScriptedOrigin, ServerPool, hang, rules

if TYPE_CHECKING:
    from typing_extensions import Self

PRIVATE = "User-agent: *\nDisallow: /private\n"
JOB_SETTINGS: dict[str, Any] = {
    "ADDONS": {ADDON: 0},
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "DOWNLOAD_TIMEOUT": 3,
    "CLOSESPIDER_TIMEOUT": 45,
    "REP9309_RETRY_DELAY": 1,
    "REP9309_RETRY_MAX_DELAY": 2,
    "REP9309_DEFER_TIMEOUT": 120,
}


@dataclass
class Run:
    returncode: int
    stats: dict[str, Any]
    log: str
    results: list[dict[str, Any]]

    def stat(self, name: str) -> int:
        return int(self.stats.get(name, 0))


class Job:
    """One JOBDIR and the runs made with it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.jobdir = directory / "job"
        self.runs: list[Run] = []

    async def run(
        self,
        start_urls: list[str],
        settings: dict[str, Any] | None = None,
        *,
        pause_when: Any = None,
        timeout: float = 90,
    ) -> Run:
        """Run the crawl; with ``pause_when`` (a callable on the log text so far), send one
        SIGINT as soon as it returns True."""
        number = len(self.runs) + 1
        paths = {name: self.directory / f"run{number}.{name}" for name in ("log", "results")}
        stats_path = self.directory / f"run{number}.stats"
        config = {
            "settings": {
                **JOB_SETTINGS,
                "JOBDIR": str(self.jobdir),
                "LOG_FILE": str(paths["log"]),
                **(settings or {}),
            },
            "start_urls": start_urls,
            "results": str(paths["results"]),
            "stats": str(stats_path),
        }
        config_path = self.directory / f"run{number}.json"
        config_path.write_text(json.dumps(config))
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.jobdir_crawl", str(config_path)],
            cwd=REPO_ROOT,
            env=tool_environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            if pause_when is not None:
                await self._pause_when(process, paths["log"], pause_when, timeout)
            returncode = await maybe_deferred_to_future(deferToThread(process.wait, timeout))
        finally:
            if process.poll() is None:
                process.kill()
        stderr = process.stderr.read().decode() if process.stderr else ""
        log = paths["log"].read_text() if paths["log"].exists() else ""
        assert stats_path.exists(), f"run {number} wrote no stats: {stderr[-3000:]}{log[-3000:]}"
        results = [
            json.loads(line)
            for line in (
                paths["results"].read_text().splitlines() if paths["results"].exists() else []
            )
        ]
        run = Run(returncode, json.loads(stats_path.read_text()), log, results)
        self.runs.append(run)
        return run

    async def _pause_when(
        self, process: subprocess.Popen[bytes], log: Path, ready: Any, timeout: float
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if log.exists() and ready(log.read_text()):
                process.send_signal(signal.SIGINT)
                return
            await sleep(0.1)
        raise AssertionError(f"never ready to pause: {log.read_text()[-3000:]}")

    def outcomes(self) -> Counter[str]:
        """URL -> how many times it was downloaded or errback'd, across every run."""
        return Counter(entry["url"] for run in self.runs for entry in run.results)


async def sleep(seconds: float) -> None:
    await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))


def link_page(*urls: str) -> Reply:
    links = "".join(f'<a href="{url}">{url}</a>' for url in urls)
    return Reply(200, f"<html><body>{links}</body></html>", headers={"Content-Type": "text/html"})


def deferred_adds_up(run: Run) -> bool:
    ends = ("released", "expired", "closed", "saved")
    return run.stat("robotstxt/deferred") == sum(
        run.stat(f"robotstxt/deferred/{end}") for end in ends
    )


def held_both(slow: ScriptedOrigin, failing: ScriptedOrigin) -> Any:
    """Ready to pause: the slow robots.txt is being fetched, the failing one answered 503."""

    def ready(log: str) -> bool:
        return bool(slow.robots_fetches) and f"robots.txt of {failing.base} unreachable" in log

    return ready


@deferred_f_from_coro_f
async def test_pause_while_held_and_resume_after_recovery_loses_nothing(
    servers: ServerPool, tmp_path: Path
) -> None:
    slow = servers.add(hang())
    failing = servers.add(Reply(503, "busy"))
    pages = {site: site.urls(["/page/1", "/page/2", "/private/3"]) for site in (slow, failing)}
    home = servers.add(rules("User-agent: *\n"))
    home.script("/", [link_page(*pages[slow], *pages[failing])])
    job = Job(tmp_path)

    paused = await job.run([home.url("/")], pause_when=held_both(slow, failing))
    held_at_pause = paused.stat("robotstxt/deferred/saved")
    slow.script("/robots.txt", [rules(PRIVATE)])
    failing.script("/robots.txt", [rules(PRIVATE)])
    await sleep(2.5)  # past the failing origin's backoff (REP9309_RETRY_MAX_DELAY = 2)
    resumed = await job.run([home.url("/")])

    assert paused.stats["finish_reason"] == "shutdown"
    assert held_at_pause == 6, paused.log[-3000:]
    assert paused.stat("robotstxt/deferred/closed") == 0
    assert state_path(job.jobdir).exists()
    assert resumed.stats["finish_reason"] == "finished", resumed.log[-6000:]
    # The 6 saved requests, and the start request again (its origin's record is in the
    # store, not yet in memory: it waits for the store's answer; then Scrapy's duplicate
    # filter drops it, as the page was crawled before the pause).
    assert resumed.stat("robotstxt/deferred") == 7
    assert resumed.stat("robotstxt/deferred/released") == 7
    assert deferred_adds_up(paused) and deferred_adds_up(resumed)
    outcomes = job.outcomes()
    every_page = [home.url("/"), *pages[slow], *pages[failing]]
    assert outcomes == Counter(every_page), "each request processed exactly once, none lost"
    forbidden = {entry["url"] for entry in resumed.results if entry.get("error")}
    assert forbidden == {slow.url("/private/3"), failing.url("/private/3")}
    assert all(
        entry["error"] == FORBIDDEN_MESSAGE for entry in resumed.results if entry.get("error")
    )
    for site in (slow, failing):
        assert sorted(entry.path for entry in site.page_requests) == ["/page/1", "/page/2"]
    assert "Resumed the robots.txt state" in resumed.log


@deferred_f_from_coro_f
async def test_fresh_records_are_reused_and_expired_ones_refreshed_once(
    servers: ServerPool, tmp_path: Path
) -> None:
    sites = [servers.add(rules(PRIVATE)) for _ in range(2)]
    job = Job(tmp_path)
    settings = {"REP9309_CACHE_TTL": 12}

    first = await job.run([site.url("/a/1") for site in sites], settings)
    fetched_at = time.monotonic()
    within = await job.run([site.url("/a/2") for site in sites], settings)
    assert time.monotonic() - fetched_at < 10, "the second run must start within the TTL"
    await sleep(max(0.0, 13 - (time.monotonic() - fetched_at)))
    after = await job.run([site.url("/a/3") for site in sites], settings)

    assert first.stats["finish_reason"] == within.stats["finish_reason"] == "finished"
    for site in sites:
        assert len(site.robots_fetches) == 2, "one fetch, none within the TTL, one refresh"
        assert sorted(entry.path for entry in site.page_requests) == ["/a/1", "/a/2", "/a/3"]
    assert within.stat("robotstxt/request_count") == 0
    assert after.stat("robotstxt/refreshed") == 2


@deferred_f_from_coro_f
async def test_backoff_continues_after_the_resume(servers: ServerPool, tmp_path: Path) -> None:
    failing = servers.add(Reply(503, "busy"))
    job = Job(tmp_path)
    backoff = {"REP9309_RETRY_DELAY": 8, "REP9309_RETRY_MAX_DELAY": 8}

    paused = await job.run(
        [failing.url("/page/1")],
        backoff,
        pause_when=lambda log: f"robots.txt of {failing.base} unreachable" in log,
    )
    failing.script("/robots.txt", [rules(PRIVATE)])
    resumed = await job.run([failing.url("/page/1")], backoff)

    assert paused.stat("robotstxt/deferred/saved") == 1
    first, second = failing.robots_fetches[:2]
    assert len(failing.robots_fetches) == 2
    assert second.received - first.received >= 6, "the failing server was asked again early"
    assert [entry.path for entry in failing.page_requests] == ["/page/1"]
    # The saved request and the start request yielded again: one is downloaded, the
    # duplicate filter drops the other.
    assert resumed.stat("robotstxt/deferred/released") == 2


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\xffnot json at all",
        b'{"format": "scrapy-rep9309 JOBDIR state", "version": 1, "records": {"http',
        b'{"format": "scrapy-rep9309 JOBDIR state", "version": 99, "records": {}, "held": []}',
        b'{"format": "something else", "version": 1}',
        b'{"format": "scrapy-rep9309 JOBDIR state", "version": 1, "records": {"x": 5}, "held": []}',
        b"[" * 200_000,  # deeper than the JSON parser goes
    ],
    ids=["garbage", "truncated", "other-version", "foreign", "bad-record", "nested-too-deep"],
)
@deferred_f_from_coro_f
async def test_an_unreadable_state_file_is_ignored_with_a_warning(
    servers: ServerPool, tmp_path: Path, content: bytes
) -> None:
    site = servers.add(rules(PRIVATE))
    path = state_path(tmp_path / "job")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)

    result = await run_crawl(site.urls(["/a", "/private/b"]), {"JOBDIR": str(tmp_path / "job")})

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/b")}
    warnings = [
        record.getMessage()
        for record in result.logs
        if record.levelname == "WARNING" and "Ignored the robots.txt state" in record.getMessage()
    ]
    assert len(warnings) == 1
    assert json.loads(path.read_text())["version"] == 1, "a valid state replaced it at close"


@deferred_f_from_coro_f
async def test_saved_records_are_bounded_by_the_cache_size_but_keep_every_backoff(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The state file keeps REP9309_CACHE_SIZE records, the most recently fetched, plus
    every record in backoff: dropping one would make the resumed crawl ask a failing
    server again at once."""
    from scrapy_rep9309.integration.jobdir import read_state

    jobdir = str(tmp_path / "job")
    answering = [servers.add(rules(PRIVATE)) for _ in range(2)]
    failing = servers.add(Reply(503, "busy"))
    first = {
        "JOBDIR": jobdir,
        "REP9309_DEFER_TIMEOUT": 0.5,
        "REP9309_RETRY_DELAY": 600,
        "REP9309_RETRY_MAX_DELAY": 600,
    }
    await run_crawl([site.url("/a") for site in [*answering, failing]], first)
    assert set(read_state(jobdir).records) == {*(site.base for site in answering), failing.base}
    newest = servers.add(rules(PRIVATE))

    await run_crawl([newest.url("/a")], {**first, "REP9309_CACHE_SIZE": 1})

    assert set(read_state(jobdir).records) == {newest.base, failing.base}


@deferred_f_from_coro_f
async def test_a_restored_record_superseded_then_evicted_is_not_saved_again(
    servers: ServerPool, tmp_path: Path
) -> None:
    """Run 1 saves a copy that allows everything (max-age=1). Run 2 fetches the newer one,
    Disallow, then forgets the origin (REP9309_CACHE_SIZE=1). Its state must not bring
    back run 1's copy: a run 3 whose refreshes fail would decide by it, stale, older
    than the copy that forbids."""
    from scrapy_rep9309.integration.jobdir import read_state

    jobdir = str(tmp_path / "job")
    site = servers.add(
        [
            rules("User-agent: *\nAllow: /\n", headers={"Cache-Control": "max-age=1"}),
            rules("User-agent: *\nDisallow: /\n"),
        ]
    )
    other = servers.add(rules(PRIVATE))
    await run_crawl([site.url("/a")], {"JOBDIR": jobdir})
    assert site.base in read_state(jobdir).records
    await asyncio.sleep(1.5)  # run 1's copy expires

    second = await run_crawl(
        [site.url("/b"), Wait(0.5), other.url("/a")], {"JOBDIR": jobdir, "REP9309_CACHE_SIZE": 1}
    )

    assert second.forbidden_urls == {site.url("/b")}
    assert second.stat("robotstxt/evicted") == 1
    saved = read_state(jobdir).records.get(site.base)
    assert saved is None or b"Disallow" in saved.body, "run 1's older copy came back"


@deferred_f_from_coro_f
async def test_saved_requests_that_cannot_be_restored_are_skipped_with_one_warning(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A state file whose held requests are partly unreadable (bytes that are no request,
    an origin that is no http(s) origin) restores the others; the rest is named in one
    WARNING, with each one's origin and why, never a crash."""

    from scrapy_rep9309.integration.jobdir import JobState, SavedRequest, write_state
    from scrapy_rep9309.integration.requestcodec import RequestCodec

    site = servers.add(rules(PRIVATE))
    good = RequestCodec(None).encode(Request(site.url("/saved")))
    state = JobState(
        held=[
            SavedRequest(site.base, 60.0, good),
            SavedRequest(site.base, 60.0, b"not a pickled request"),
            SavedRequest("ftp://example.com", 60.0, good),
        ]
    )
    write_state(tmp_path / "job", state, time.time())

    result = await run_crawl([site.url("/a")], {"JOBDIR": str(tmp_path / "job")})

    assert result.urls == {site.url("/a"), site.url("/saved")}
    warnings = [r.getMessage() for r in result.logs if r.levelname == "WARNING"]
    assert warnings == [
        "2 saved held requests could not be restored (the spider changed?): "
        f"{site.base}: UnpicklingError: invalid load key, 'n'.; "
        "ftp://example.com: not an http(s) origin"
    ]
    assert result.stat("robotstxt/deferred/released") == 2
    assert [r.getMessage() for r in result.logs if r.levelname == "ERROR"] == []


@pytest.mark.parametrize("remaining", ["NaN", "Infinity", "-1", '"60"', "true"])
@deferred_f_from_coro_f
async def test_a_held_request_with_a_time_left_that_is_no_time_is_not_restored(
    servers: ServerPool, tmp_path: Path, remaining: str
) -> None:
    """A saved request whose time left is NaN or infinite would be held, and keep the
    spider open, forever: the file is ignored with one WARNING."""

    from scrapy_rep9309.integration.requestcodec import RequestCodec

    site = servers.add(rules(PRIVATE))
    data = base64.b64encode(RequestCodec(None).encode(Request(site.url("/saved")))).decode()
    path = state_path(tmp_path / "job")
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"format": "scrapy-rep9309 JOBDIR state", "version": 1, "records": {}, '
        f'"held": [{{"origin": "{site.base}", "remaining": {remaining}, "request": "{data}"}}]}}'
    )

    result = await run_crawl([site.url("/a")], {"JOBDIR": str(tmp_path / "job")})

    assert result.urls == {site.url("/a")}
    warnings = [r.getMessage() for r in result.logs if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "Ignored the robots.txt state" in warnings[0], warnings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("outcome", "maybe"),
        ("status", "200"),
        ("body", 5),
        ("fetched_at", "now"),
        ("expires_at", "later"),
        ("expires_at", None),
        ("failures", -1),
        ("failures", 1.5),
        ("retry_at", "soon"),
        ("last_failure", 5),
        ("redirected_to", 7),
        ("unknown_field", 1),
    ],
)
@deferred_f_from_coro_f
async def test_a_state_record_with_a_field_of_the_wrong_type_is_ignored_with_a_warning(
    servers: ServerPool, tmp_path: Path, field: str, value: Any
) -> None:
    """A state file edited or damaged by hand: a record field of the wrong type makes the
    whole file ignored with one WARNING (never an error on every request of its origin)."""
    site = servers.add(rules(PRIVATE))
    now = time.time()
    record = {
        "outcome": "available",
        "status": 200,
        "body": "User-agent: *\nDisallow: /\n",
        "fetched_at": now,
        "expires_at": now + 3600,
        "failures": 0,
        "retry_at": 0.0,
        "last_failure": None,
        "redirected_to": None,
        field: value,
    }
    document = {
        "format": "scrapy-rep9309 JOBDIR state",
        "version": 1,
        "saved_at": now,
        "records": {site.base: record},
        "held": [],
    }
    path = state_path(tmp_path / "job")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))

    result = await run_crawl(site.urls(["/a", "/private/b"]), {"JOBDIR": str(tmp_path / "job")})

    assert result.urls == {site.url("/a")}, "its own robots.txt decided, not the record"
    assert result.forbidden_urls == {site.url("/private/b")}
    warnings = [r.getMessage() for r in result.logs if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "Ignored the robots.txt state" in warnings[0], warnings
    assert [r.getMessage() for r in result.logs if r.levelname == "ERROR"] == []


@deferred_f_from_coro_f
async def test_a_request_that_cannot_be_saved_goes_to_its_errback_named_in_a_warning(
    servers: ServerPool, tmp_path: Path
) -> None:

    site = servers.add(hang())
    errors: list[str] = []
    unsaveable = Request(
        site.url("/lambda"),
        callback=lambda response: None,
        errback=lambda f: errors.append(str(f.value)),
    )
    plan = [unsaveable, site.url("/page/1")]

    result = await run_crawl(
        plan, {"JOBDIR": str(tmp_path / "job"), "CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 2}
    )

    assert errors == [f"Spider closed before the robots.txt of {site.base} was known"]
    assert result.stat("robotstxt/deferred/saved") == 1
    assert result.stat("robotstxt/deferred/closed") == 1
    warnings = [r.getMessage() for r in result.logs if r.levelname == "WARNING"]
    assert any("cannot be saved" in message and "/lambda" in message for message in warnings)


@deferred_f_from_coro_f
async def test_builtin_middleware_downloads_disallowed_pages_at_a_pause(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The contrast: Scrapy's built-in middleware, paused the same way, crawls what
    robots.txt disallows."""
    slow = servers.add(hang())
    failing = servers.add(Reply(503, "busy"))
    pages = {site: site.urls(["/page/1", "/page/2", "/private/3"]) for site in (slow, failing)}
    home = servers.add(rules("User-agent: *\n"))
    home.script("/", [link_page(*pages[slow], *pages[failing])])
    job = Job(tmp_path)
    builtin = {"ADDONS": {}, "ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": {BUILTIN: 100}}

    def ready(log: str) -> bool:
        return bool(slow.robots_fetches) and len(failing.robots_fetches) >= 1

    await job.run([home.url("/")], builtin, pause_when=ready)
    slow.script("/robots.txt", [rules(PRIVATE)])
    failing.script("/robots.txt", [rules(PRIVATE)])
    await job.run([home.url("/")], builtin)

    # What the built-in does, measured: nothing is lost, because nothing waits: the
    # pause makes the slow robots.txt time out, which the built-in reads as "allow all",
    # and it reads the 503 page as a robots.txt without rules. So both disallowed pages
    # are downloaded during the pause. This plugin downloads neither (test above).
    paused = job.runs[0]
    downloaded_in_pause = {entry["url"] for entry in paused.results if "status" in entry}
    assert {slow.url("/private/3"), failing.url("/private/3")} <= downloaded_in_pause
    assert job.outcomes() == Counter([home.url("/"), *pages[slow], *pages[failing]])


@deferred_f_from_coro_f
async def test_a_superseded_restored_copy_among_the_newest_never_decides_a_later_run(
    servers: ServerPool, tmp_path: Path
) -> None:
    """As above, with room for the origin among the REP9309_CACHE_SIZE most recently
    fetched: run 2 forgets the origin after its Disallow copy, and used to save run 1's
    Allow copy again, which run 3 (robots.txt answering 503) then used as its stale copy,
    downloading a page the newest copy forbids (found by a second reviewer)."""
    from scrapy_rep9309.integration.jobdir import read_state

    jobdir = str(tmp_path / "job")
    old1, old2 = servers.add(rules(PRIVATE)), servers.add(rules(PRIVATE))
    site = servers.add(
        [
            rules("User-agent: *\nAllow: /\n", headers={"Cache-Control": "max-age=1"}),
            rules("User-agent: *\nDisallow: /\n"),
            Reply(503, "busy"),
        ]
    )
    x, y = servers.add(rules(PRIVATE)), servers.add(rules(PRIVATE))
    first_plan = [old1.url("/a"), old2.url("/a"), Wait(0.3), site.url("/a")]
    await run_crawl(first_plan, {"JOBDIR": jobdir})
    await asyncio.sleep(1.5)  # run 1's copy of the site expires

    second_plan = [site.url("/b"), Wait(0.4), old2.url("/b"), Wait(0.4), x.url("/a")]
    second = await run_crawl(
        [*second_plan, Wait(0.4), y.url("/a")], {"JOBDIR": jobdir, "REP9309_CACHE_SIZE": 3}
    )
    saved = read_state(jobdir).records.get(site.base)
    third = await run_crawl([site.url("/c")], {"JOBDIR": jobdir, "REP9309_DEFER_TIMEOUT": 2})

    assert second.forbidden_urls == {site.url("/b")}
    assert saved is None or b"Disallow" in saved.body, "run 1's older copy came back"
    assert site.url("/c") not in third.urls
    assert [entry.path for entry in site.page_requests] == ["/a"]


@deferred_f_from_coro_f
async def test_held_requests_go_to_their_errback_when_the_state_cannot_be_written(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A state file that cannot be written at the pause (a full disk, a JOBDIR removed or
    read-only; here a file stands where its directory goes): the held requests go to
    their errback, counted closed, with one WARNING. They were counted saved, and saved
    nowhere (found by a second reviewer)."""
    site = servers.add(hang())
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    (jobdir / "rep9309").write_text("in the way")
    pages = site.urls(["/page/1", "/page/2"])

    result = await run_crawl(
        pages, {"JOBDIR": str(jobdir), "CLOSESPIDER_TIMEOUT": 1, "DOWNLOAD_TIMEOUT": 2}
    )

    assert result.ignored_urls == set(pages)
    assert (result.stat("robotstxt/deferred/saved") or 0) == 0
    assert result.stat("robotstxt/deferred/closed") == 2
    warnings = [r.getMessage() for r in result.logs if r.levelname == "WARNING"]
    assert any("Could not save the robots.txt state" in warning for warning in warnings)
    assert [r.getMessage() for r in result.logs if r.levelname == "ERROR"] == []


@deferred_f_from_coro_f
async def test_a_restored_copy_is_used_no_longer_than_the_resumed_runs_cache_ttl(
    servers: ServerPool, tmp_path: Path
) -> None:
    """Saved under the default REP9309_CACHE_TTL (24 h), resumed 2.5 s later with
    REP9309_CACHE_TTL=1: the copy is too old for this run, so robots.txt is fetched again
    (it forbids now). It decided for 24 h (found by a second reviewer)."""
    jobdir = str(tmp_path / "job")
    site = servers.add([rules("User-agent: *\nAllow: /\n"), rules("User-agent: *\nDisallow: /\n")])
    await run_crawl([site.url("/a")], {"JOBDIR": jobdir})
    await asyncio.sleep(2.5)

    second = await run_crawl([site.url("/b")], {"JOBDIR": jobdir, "REP9309_CACHE_TTL": 1})

    assert len(site.robots_fetches) == 2
    assert second.forbidden_urls == {site.url("/b")}


@deferred_f_from_coro_f
async def test_a_restored_request_is_held_no_longer_than_the_resumed_runs_defer_timeout(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A saved request with an hour left (or any finite time) resumed with
    REP9309_DEFER_TIMEOUT=2 while its robots.txt keeps failing: it goes to its errback
    after 2 s. It was held, and the spider kept open, for the saved time."""

    from scrapy_rep9309.integration.requestcodec import RequestCodec

    failing = servers.add(Reply(503, "busy"))
    data = base64.b64encode(RequestCodec(None).encode(Request(failing.url("/saved")))).decode()
    path = state_path(tmp_path / "job")
    path.parent.mkdir(parents=True)
    held = [{"origin": failing.base, "remaining": 3600.0, "request": data}]
    document = {"format": "scrapy-rep9309 JOBDIR state", "version": 1, "records": {}}
    path.write_text(json.dumps({**document, "saved_at": time.time(), "held": held}))

    result = await run_crawl(
        [], {"JOBDIR": str(tmp_path / "job"), "REP9309_DEFER_TIMEOUT": 2, "CLOSESPIDER_TIMEOUT": 30}
    )

    assert result.stat("robotstxt/deferred/expired") == 1  # no errback: it has none
    assert result.duration < 20


class _ClosesWhenRobotsTxtArrives(PlanSpider):
    """Closes the spider as soon as a robots.txt answer is downloaded, before the
    middleware applies it (the close waits for it to be applied)."""

    closing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.downloaded, signal=signals.response_downloaded)
        return spider

    def downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        if response.url.endswith("/robots.txt") and not self.closing:
            self.closing = True
            engine = self.crawler.engine
            assert engine is not None
            if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
                deferred_from_coro(engine.close_spider_async(reason="shutdown"))
            else:  # pragma: no cover
                engine.close_spider(self, reason="shutdown")


@deferred_f_from_coro_f
async def test_start_requests_forbidden_by_an_answer_at_the_pause_end_once_over_the_job(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The pause begins as robots.txt answers: the held start requests are saved, the
    forbidden one too, and decided after the resume, where the spider yields its start
    requests again and Scrapy's duplicate filter drops the second of each. Ended at the
    pause (forbidden), a start request never reached the duplicate filter, and ended a
    second time after the resume (found by a second reviewer)."""
    site = servers.add(rules(PRIVATE, delay=0.5))
    urls = site.urls(["/page/1", "/page/2", "/private/3"])
    settings = {"JOBDIR": str(tmp_path / "job")}

    first = await run_crawl(urls, settings, spider_cls=_ClosesWhenRobotsTxtArrives)
    second = await run_crawl(urls, settings)

    ends = Counter(
        [
            *(seen.url for run in (first, second) for seen in run.responses),
            *(failed.url for run in (first, second) for failed in run.failures),
        ]
    )
    assert ends == Counter(urls)
    assert first.stat("robotstxt/deferred/saved") == 3
    assert second.forbidden_urls == {site.url("/private/3")}
    assert sorted(entry.path for entry in site.page_requests) == ["/page/1", "/page/2"]


@deferred_f_from_coro_f
async def test_a_start_request_that_expired_before_the_pause_ends_once_over_the_job(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A held request whose defer time runs out ends in its errback; on the resume the
    spider yields it again, and Scrapy's duplicate filter (kept in JOBDIR) drops it, as
    it drops every request that went through it before the pause. Expired requests used
    to skip the filter: it ended a second time after the resume."""
    site = servers.add(Reply(503, "busy"))
    page = site.url("/page")
    settings = {"JOBDIR": str(tmp_path / "job"), "REP9309_DEFER_TIMEOUT": 1}

    first = await run_crawl([page], settings)
    second = await run_crawl([page], settings)

    assert [failed.url for failed in first.failures] == [page]
    assert second.failures == []
    assert second.stat("dupefilter/filtered") == 1
    assert site.page_requests == []


def _full_disk(*args: object, **kwargs: object) -> NoReturn:
    raise OSError(errno.ENOSPC, "No space left on device")


@deferred_f_from_coro_f
async def test_a_state_that_cannot_be_written_removes_the_one_saved_before(
    servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run 1 saves an Allow copy; run 2 sees the Disallow copy that supersedes it, and
    its state cannot be written (a full disk). Run 3 used to resume from run 1's state
    and, robots.txt answering 503, decide by that copy, stale: a page the newest copy
    forbids was downloaded (found by a second reviewer). Run 2 removes the older state."""
    from scrapy_rep9309.integration import middleware

    jobdir = str(tmp_path / "job")
    site = servers.add(
        [
            rules("User-agent: *\nAllow: /\n", headers={"Cache-Control": "max-age=1"}),
            rules("User-agent: *\nDisallow: /\n"),
            Reply(503, "busy"),
        ]
    )
    await run_crawl([site.url("/a")], {"JOBDIR": jobdir})
    await asyncio.sleep(1.5)  # run 1's copy expires
    with monkeypatch.context() as patched:
        patched.setattr(middleware, "write_state", _full_disk)
        second = await run_crawl([site.url("/b")], {"JOBDIR": jobdir})
    third = await run_crawl([site.url("/c")], {"JOBDIR": jobdir, "REP9309_DEFER_TIMEOUT": 2})

    assert second.forbidden_urls == {site.url("/b")}
    assert site.url("/c") not in third.urls
    assert [entry.path for entry in site.page_requests] == ["/a"]


@deferred_f_from_coro_f
async def test_a_forbidden_leftover_that_cannot_be_saved_ends_forbidden(
    servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pause begins as robots.txt answers, and the state cannot be written: the
    request that answer forbids ends forbidden, as without JOBDIR (it ended "closed")."""
    from scrapy_rep9309.integration import middleware

    site = servers.add(rules(PRIVATE, delay=0.5))
    urls = site.urls(["/page/1", "/private/3"])
    monkeypatch.setattr(middleware, "write_state", _full_disk)

    result = await run_crawl(
        urls, {"JOBDIR": str(tmp_path / "job")}, spider_cls=_ClosesWhenRobotsTxtArrives
    )

    assert result.forbidden_urls == {site.url("/private/3")}
    assert result.stat("robotstxt/deferred/closed") == 1


@deferred_f_from_coro_f
async def test_a_resume_whose_store_does_not_open_saves_the_held_requests_again(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The store (REP9309_STORE) does not open on the resume: the spider closes at once
    and saves the JOBDIR state again, for the next run (found while making a store that
    does not open stop the crawl: the close wrote a state without the requests, or
    without the records, whose backoff went with them)."""
    failing = servers.add(Reply(503, "busy"))
    pages = failing.urls(["/page/1", "/page/2", "/private/3"])
    home = servers.add(rules("User-agent: *\n"))
    home.script("/", [link_page(*pages)])
    job = Job(tmp_path)

    def held(log: str) -> bool:
        return f"robots.txt of {failing.base} unreachable" in log

    paused = await job.run([home.url("/")], pause_when=held)
    saved = read_state(str(job.jobdir))
    not_opened = await job.run(
        [home.url("/")], {"REP9309_STORE": "tests.test_e2e_store_bugs.OpenRaises"}
    )
    saved_again = read_state(str(job.jobdir))
    assert saved_again.records == saved.records
    assert saved_again.held[: len(saved.held)] == saved.held
    failing.script("/robots.txt", [rules(PRIVATE)])
    resumed = await job.run([home.url("/")])

    assert paused.stat("robotstxt/deferred/saved") == 3, paused.log[-3000:]
    assert not_opened.stats["finish_reason"] == "robotstxt_store_not_opened"
    # Scrapy 2.19 closes before the start request is scheduled; 2.13 once the engine
    # runs: the start request, held meanwhile, is saved too (the duplicate filter drops
    # it on the resume).
    assert not_opened.stat("robotstxt/deferred") == not_opened.stat("robotstxt/deferred/saved")
    assert resumed.stats["finish_reason"] == "finished", resumed.log[-3000:]
    assert job.outcomes() == Counter([home.url("/"), *pages]), "each once, none lost"
    assert sorted(entry.path for entry in failing.page_requests) == ["/page/1", "/page/2"]
    assert all(deferred_adds_up(run) for run in job.runs)


async def _pause_with_three_held(servers: ServerPool, job: Job) -> tuple[ScriptedOrigin, Any]:
    """Run 1 of ``job``: paused with the three pages of an unreachable origin held."""
    failing = servers.add(Reply(503, "busy"))
    home = servers.add(rules("User-agent: *\n"))
    home.script("/", [link_page(*failing.urls(["/page/1", "/page/2", "/private/3"]))])

    def held(log: str) -> bool:
        return f"robots.txt of {failing.base} unreachable" in log

    paused = await job.run([home.url("/")], pause_when=held)
    assert paused.stat("robotstxt/deferred/saved") == 3, paused.log[-3000:]
    return failing, home


@deferred_f_from_coro_f
async def test_a_close_while_the_store_opens_saves_the_paused_state_again(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The spider closes (here CLOSESPIDER_TIMEOUT) while the store is still opening, before
    the state was resumed: the close wrote a state without the paused run's requests, and
    they were lost (found by the third round)."""
    job = Job(tmp_path)
    failing, home = await _pause_with_three_held(servers, job)
    saved = read_state(str(job.jobdir))

    closed = await job.run(
        [home.url("/")],
        {
            "REP9309_STORE": "tests.test_e2e_store_bugs.OpensAfterTheClose",
            "CLOSESPIDER_TIMEOUT": 0.5,
        },
    )
    saved_again = read_state(str(job.jobdir))
    failing.script("/robots.txt", [rules(PRIVATE)])
    resumed = await job.run([home.url("/")])

    assert closed.stats["finish_reason"] == "closespider_timeout", closed.log[-3000:]
    assert saved_again.records == saved.records
    assert saved_again.held[: len(saved.held)] == saved.held
    assert resumed.stats["finish_reason"] == "finished", resumed.log[-3000:]
    pages = failing.urls(["/page/1", "/page/2", "/private/3"])
    assert job.outcomes() == Counter([home.url("/"), *pages]), "each once, none lost"
    assert sorted(entry.path for entry in failing.page_requests) == ["/page/1", "/page/2"]


@deferred_f_from_coro_f
async def test_a_store_not_opened_and_a_state_not_written_keep_the_paused_state(
    servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state of the paused run, never resumed, stays as it was (found by the third
    round: it was removed, as a state a resumed run could not update is)."""
    job = Job(tmp_path)
    failing, home = await _pause_with_three_held(servers, job)
    saved = state_path(job.jobdir).read_bytes()
    monkeypatch.setattr("scrapy_rep9309.integration.middleware.write_state", _full_disk)

    not_opened = await run_crawl(  # (Scrapy 2.13 schedules the start request, held)
        [home.url("/")],
        {"JOBDIR": str(job.jobdir), "REP9309_STORE": "tests.test_e2e_store_bugs.OpenRaises"},
    )
    monkeypatch.undo()
    kept = state_path(job.jobdir).read_bytes() if state_path(job.jobdir).exists() else b""
    failing.script("/robots.txt", [rules(PRIVATE)])
    await job.run([home.url("/")])

    assert not_opened.close_reason == "robotstxt_store_not_opened"
    assert kept == saved
    pages = failing.urls(["/page/1", "/page/2", "/private/3"])
    assert job.outcomes() == Counter([home.url("/"), *pages]), "each once, none lost"


@pytest.mark.parametrize("store", ["FirstSaveUnreachable", "SaveRaises"])
@deferred_f_from_coro_f
async def test_a_resume_whose_store_fails_to_take_the_records_holds_the_requests_again(
    servers: ServerPool, tmp_path: Path, store: str
) -> None:
    """The resume writes the saved records to the store first. A save that failed (out of
    reach for a moment, or a bug) stopped the resume: the paused run's requests were
    neither held again nor ended, and its records came back at the close over newer ones
    (found by the fourth round). An outage is waited out, a bug logged."""
    job = Job(tmp_path)
    failing, home = await _pause_with_three_held(servers, job)
    failing.script("/robots.txt", [rules(PRIVATE)])

    resumed = await job.run(
        [home.url("/")], {"REP9309_STORE": f"tests.test_e2e_store_bugs.{store}"}
    )

    assert resumed.stats["finish_reason"] == "finished", resumed.log[-3000:]
    pages = failing.urls(["/page/1", "/page/2", "/private/3"])
    assert job.outcomes() == Counter([home.url("/"), *pages]), "each once, none lost"
    assert sorted(entry.path for entry in failing.page_requests) == ["/page/1", "/page/2"]
    assert deferred_adds_up(resumed)
