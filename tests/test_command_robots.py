"""``scrapy robots URL...``: robots.txt fetched through the engine, URLs explained."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._commands import SAMPLE_PROJECT, error_lines, run, run_async, scrapy
from tests.servers import ServerPool, closed_port, redirect, rules

ROBOTS = """\
User-agent: *
Disallow: /private/

User-agent: MyBot
Disallow: /
"""

PROJECT_SETTINGS = """\
BOT_NAME = "robotsproj"
USER_AGENT = "MyBot/1.0 (+https://my.bot)"
REP9309_MAX_REDIRECTS = 1
TELNETCONSOLE_ENABLED = False
"""


@pytest.fixture
def outside_project(tmp_path: Path) -> Path:
    """A directory with no scrapy.cfg: Scrapy's default settings apply."""
    directory = tmp_path / "anywhere"
    directory.mkdir()
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A minimal Scrapy project whose settings the command must use."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = robotsproj.settings\n")
    package = tmp_path / "robotsproj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(PROJECT_SETTINGS)
    return tmp_path


def robots(*args: str) -> list[str]:
    return scrapy("robots", "-s", "TELNETCONSOLE_ENABLED=False", *args)


@deferred_f_from_coro_f
async def test_allowed_and_disallowed(servers: ServerPool, outside_project: Path) -> None:
    site = servers.add(rules(ROBOTS))
    public, private = site.url("/products/1"), site.url("/private/orders")

    result = await run_async(robots(public, private), cwd=outside_project)

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"robots.txt  {site.url('/robots.txt')}",
        "  status    200 (available: rules parsed)",
        f"  size      {len(ROBOTS)} bytes",
    ]
    assert lines[3].startswith("user agent  Scrapy/") and "(product token: scrapy)" in lines[3]
    assert lines[4:] == [
        "",
        f"allowed     {public}",
        "  rule      none matched (allowed by default)",
        "  group     User-agent: *",
        "",
        f"disallowed  {private}",
        "  rule      Disallow: /private/ (line 2)",
        "  group     User-agent: *",
    ]
    assert len(site.robots_fetches) == 1
    assert site.page_requests == []
    assert f"Fetching {site.url('/robots.txt')}" in result.stderr


@deferred_f_from_coro_f
async def test_all_allowed_exits_0(servers: ServerPool, outside_project: Path) -> None:
    site = servers.add(rules(ROBOTS))

    result = await run_async(robots(site.url("/a"), site.url("/b")), cwd=outside_project)

    assert result.returncode == 0, result.stderr
    assert result.stdout.count("allowed     ") == 2


@deferred_f_from_coro_f
async def test_unreachable_robots_txt(servers: ServerPool, outside_project: Path) -> None:
    site = servers.add(rules("User-agent: *\nAllow: /\n", status=503))

    result = await run_async(robots(site.url("/a")), cwd=outside_project)

    assert result.returncode == 1
    assert "  status    503 (unreachable: everything disallowed until it answers" in result.stdout
    assert f"disallowed  {site.url('/a')}" in result.stdout
    assert len(site.robots_fetches) == 1, "fetched once: no RetryMiddleware retries"


@deferred_f_from_coro_f
async def test_refused_connection_is_unreachable(outside_project: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/a"

    result = await run_async(robots(url), cwd=outside_project)

    assert result.returncode == 1
    assert "  status    none (unreachable" in result.stdout
    # Scrapy >= 2.14 wraps Twisted's error in its own class; 2.13 passes Twisted's through.
    assert re.search(
        r"^  error     (scrapy\.exceptions\.Download|twisted\.internet\.error\.)"
        r"ConnectionRefusedError$",
        result.stdout,
        re.MULTILINE,
    )


@deferred_f_from_coro_f
async def test_several_origins_each_get_their_report(
    servers: ServerPool, outside_project: Path
) -> None:
    shop = servers.add(rules(ROBOTS))
    blog = servers.add(rules("User-agent: *\nDisallow: /\n", status=404))

    result = await run_async(
        robots(shop.url("/private/1"), blog.url("/private/1"), shop.url("/a")),
        cwd=outside_project,
    )

    assert result.returncode == 1
    shop_report, blog_report = result.stdout.split("\n\nrobots.txt  ")
    assert f"disallowed  {shop.url('/private/1')}" in shop_report
    assert f"allowed     {shop.url('/a')}" in shop_report
    assert "404 (unavailable: no rules, everything allowed" in blog_report
    assert f"allowed     {blog.url('/private/1')}" in blog_report


@deferred_f_from_coro_f
async def test_uses_the_project_settings(servers: ServerPool, project: Path) -> None:
    """USER_AGENT decides the group and is sent; REP9309_MAX_REDIRECTS caps the hops."""
    direct = servers.add(rules(ROBOTS))
    final = servers.add(rules(ROBOTS))
    two_hops = servers.add(
        redirect(servers.add(redirect(final.url("/robots.txt"))).url("/robots.txt"))
    )

    result = await run_async(robots(direct.url("/a"), two_hops.url("/a")), cwd=project)

    assert result.returncode == 1, result.stderr
    direct_report, redirected_report = result.stdout.split("\n\nrobots.txt  ")
    assert "(product token: mybot)" in direct_report
    assert "rule      Disallow: / (line 5)" in direct_report
    assert "group     User-agent: MyBot" in direct_report
    assert [entry.user_agent for entry in direct.robots_fetches] == ["MyBot/1.0 (+https://my.bot)"]
    assert "(unavailable: no rules, everything allowed" in redirected_report
    assert final.robots_fetches == []


@deferred_f_from_coro_f
async def test_user_agent_option_overrides(servers: ServerPool, outside_project: Path) -> None:
    site = servers.add(rules(ROBOTS))

    result = await run_async(robots(site.url("/a"), "--user-agent", "MyBot"), cwd=outside_project)

    assert result.returncode == 1
    assert "group     User-agent: MyBot" in result.stdout


@deferred_f_from_coro_f
async def test_runs_in_the_sample_project(servers: ServerPool) -> None:
    """With the add-on enabled the command's robots.txt request is not itself held back."""
    site = servers.add(rules(ROBOTS))

    result = await run_async(robots(site.url("/private/1")), cwd=SAMPLE_PROJECT)

    assert result.returncode == 1, result.stderr
    assert f"disallowed  {site.url('/private/1')}" in result.stdout
    assert "note" not in result.stdout, "its crawls obey robots.txt with this middleware"


@pytest.mark.parametrize(
    ("more_settings", "note"),
    [
        ("", "have ROBOTSTXT_OBEY = False"),
        (
            "ROBOTSTXT_OBEY = True\n",
            "do not use scrapy-rep9309's middleware (Scrapy's built-in decides)",
        ),
        (
            'ROBOTSTXT_OBEY = True\nADDONS = {"scrapy_rep9309.Addon": 0}\n',
            None,
        ),
    ],
    ids=["not-obeying", "built-in-middleware", "add-on"],
)
@deferred_f_from_coro_f
async def test_a_project_whose_crawls_would_not_obey_is_told(
    servers: ServerPool, project: Path, more_settings: str, note: str | None
) -> None:
    """Found by a reviewer: in a project with ROBOTSTXT_OBEY off (or Scrapy's built-in
    middleware), the command said "disallowed" and nothing about the crawl not obeying."""
    settings = project / "robotsproj" / "settings.py"
    settings.write_text(PROJECT_SETTINGS + more_settings)
    site = servers.add(rules(ROBOTS))

    result = await run_async(robots(site.url("/a")), cwd=project)

    assert result.returncode == 1, result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith("note")]
    wanted = (
        [] if note is None else [f"note      this project's crawls {note}: they do not obey this"]
    )
    assert notes == wanted


@deferred_f_from_coro_f
async def test_slow_fetch_logs_progress(servers: ServerPool, outside_project: Path) -> None:
    site = servers.add(rules(ROBOTS, delay=5.5))

    result = await run_async(robots(site.url("/a")), cwd=outside_project)

    assert result.returncode == 0
    assert f"Still waiting for {site.url('/robots.txt')}" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give at least one URL"),
        (["shop.test/a"], "not an absolute http(s) URL: 'shop.test/a'"),
        (["ftp://shop.test/a"], "not an absolute http(s) URL: 'ftp://shop.test/a'"),
        # Found by a reviewer: a traceback (the spider loader's KeyError).
        (["--spider", "nosuch", "http://shop.test/a"], "no spider named 'nosuch' in this project"),
    ],
)
def test_bad_arguments_exit_2(outside_project: Path, args: list[str], message: str) -> None:
    result = run(robots(*args), cwd=outside_project)

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert error_lines(result)[-1].endswith(f": error: {message}")


USAGE_ROBOTS = """\
License: https://shop.test/license.xml
User-agent: *
Content-Signal: search=yes
Content-Usage: train-ai=n

User-agent: Google-Extended
Disallow: /no-ai/
"""


@deferred_f_from_coro_f
async def test_usage_signals_licenses_and_the_crawls_extra_user_agents(
    servers: ServerPool, outside_project: Path
) -> None:
    """The command decides as the crawl would: REP9309_EXTRA_USER_AGENTS and
    REP9309_REQUIRE_USAGE apply, and it shows what check shows."""
    site = servers.add(rules(USAGE_ROBOTS))
    no_ai, page = site.url("/no-ai/1"), site.url("/page")
    settings = (
        "-s",
        "REP9309_EXTRA_USER_AGENTS=Google-Extended",
        "-s",
        "REP9309_REQUIRE_USAGE=search",
    )

    result = await run_async(robots(no_ai, page, *settings), cwd=outside_project)

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[3] == "  license   https://shop.test/license.xml"
    assert lines[4].startswith("user agent  Scrapy/")
    assert lines[5:7] == [
        "  signals   search=yes (Content-Signal of its group)",
        "also obeys  Google-Extended (product token: google-extended)",
    ]
    at = lines.index(f"disallowed  {no_ai}")
    assert lines[at + 1 : at + 4] == [
        "  rule      Disallow: /no-ai/ (line 7)",
        "  group     User-agent: Google-Extended",
        "  token     Google-Extended (its group forbids the URL)",
    ]
    at = lines.index(f"allowed     {page}")
    assert lines[at + 3 :] == [
        "  usage     train-ai=n (Content-Usage: train-ai=n, line 4)",
        "  usage     search=y (Content-Signal: search=yes, line 3)",
    ]

    refusing = await run_async(
        robots(page, "-s", "REP9309_REQUIRE_USAGE=train-ai"), cwd=outside_project
    )

    assert refusing.returncode == 1, refusing.stderr
    lines = refusing.stdout.splitlines()
    assert lines[lines.index(f"refused     {page}") :] == [
        f"refused     {page}",
        "  rule      none matched (allowed by default)",
        "  group     User-agent: *",
        "  usage     train-ai=n (Content-Usage: train-ai=n, line 4)",
        "  usage     search=y (Content-Signal: search=yes, line 3)",
        "  refused   train-ai=n (REP9309_REQUIRE_USAGE)",
    ]


def test_help_reads_as_written(outside_project: Path) -> None:
    """Scrapy's help formatter turns a line ending in a colon into a title-cased,
    underlined heading: the options' help must not end a line with one."""
    result = run(robots("--help"), cwd=outside_project)

    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "--user-agent UA product token or User-Agent to decide for; by default" in text
    lines = result.stdout.splitlines()
    headings = [line for line, below in pairwise(lines) if below and set(below) <= {"=", "-"}]
    assert headings == ["Usage", "Options", "Global Options"], headings


@deferred_f_from_coro_f
async def test_a_robots_txt_past_the_decompression_bound_is_read_in_part(
    servers: ServerPool, outside_project: Path
) -> None:
    """6 MB declared (past 8 times REP9309_MAX_SIZE, the bound on decompressing a cached
    answer): read in part like any large robots.txt (RFC 9309 2.5), not refused for its
    Content-Length, with or without this project's middleware in the crawl."""
    body = "User-agent: *\nDisallow: /private/\n" + "# padding\n" * 600_000
    site = servers.add(rules(body))

    result = await run_async(robots(site.url("/private/a")), cwd=outside_project)

    assert result.returncode == 1, result.stderr[-3000:]
    assert "  status    200" in result.stdout, result.stdout
    assert "  rule      Disallow: /private/" in result.stdout, result.stdout
