"""What the middleware tells the outside: the robots_parsed signal, stats, the close summary."""

from __future__ import annotations

import logging

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._commands import REPO_ROOT, run
from tests._readme import (
    PACKAGE,
    code_spans,
    documented_stats,
    meta_keys_used,
    setting_names_read,
    stat_names_in_source,
    undocumented_stats,
)
from tests.crawl import CrawlResult, run_crawl
from tests.servers import Reply, ServerPool, redirect, reset, rules

PRIVATE_RULES = "User-agent: *\nDisallow: /private\n"


async def _crawl_every_outcome(servers: ServerPool) -> CrawlResult:
    """One crawl meeting rules, a 404, a 503 then rules, a redirect and a dead origin."""
    with_rules = servers.add(rules(PRIVATE_RULES))
    missing = servers.add(Reply(404, "not found"))
    recovering = servers.add([Reply(503, "busy"), rules(PRIVATE_RULES)])
    moved_to = servers.add(routes={"/elsewhere.txt": [rules(PRIVATE_RULES)]})
    moved = servers.add(redirect(moved_to.url("/elsewhere.txt")))
    dead = servers.add(reset())
    plan = [
        site.url(path)
        for site in (with_rules, missing, recovering, moved, dead)
        for path in ("/public/1", "/private/1")
    ]
    return await run_crawl(plan, {"REP9309_DEFER_TIMEOUT": 1.5})


@deferred_f_from_coro_f
async def test_every_stat_emitted_is_documented(servers: ServerPool) -> None:
    result = await _crawl_every_outcome(servers)

    names = set(result.robotstxt_stats())
    assert undocumented_stats(names) == set(), "add them to the Stats table (docs/reference.md)"
    for name in (
        "robotstxt/request_count",
        "robotstxt/response_count",
        "robotstxt/response_status_count/200",
        "robotstxt/response_status_count/404",
        "robotstxt/response_status_count/503",
        "robotstxt/forbidden",
        "robotstxt/unavailable",
        "robotstxt/unreachable",
        "robotstxt/deferred",
        "robotstxt/deferred/released",
        "robotstxt/deferred/expired",
        "robotstxt/redirects",
    ):
        assert result.stat(name) >= 1, name
    assert any(name.startswith("robotstxt/exception_count/") for name in names)
    assert result.stat("robotstxt/forbidden") == 3
    assert result.stat("robotstxt/deferred/expired") == 2


def test_every_stat_in_the_source_is_documented_and_no_other() -> None:
    """Stats only rare crawls emit (requeued, closed...) are covered here; f-strings by prefix."""
    documented = documented_stats()
    in_source = stat_names_in_source()
    for name in in_source:
        if name.endswith("<...>"):
            prefix = name.removesuffix("<...>")
            assert any(row.startswith(prefix + "<") for row in documented), name
        else:
            assert name in documented, f"{name} is emitted, not in docs/reference.md Stats"
    for row in documented:
        prefix = row.split("<", 1)[0]
        assert row in in_source or f"{prefix}<...>" in in_source, f"{row} is never emitted"


def test_every_setting_read_is_documented() -> None:
    read = setting_names_read(PACKAGE / "integration" / "settings.py")
    assert {"ROBOTSTXT_OBEY", "ROBOTSTXT_USER_AGENT", "REP9309_CACHE_TTL"} <= read
    assert read - code_spans("Settings") == set(), "document them in docs/reference.md's Settings"


def test_every_meta_key_read_or_set_is_documented() -> None:
    used = set().union(
        *(
            meta_keys_used(PACKAGE / "integration" / name)
            for name in ("middleware.py", "driver.py", "fetch.py", "crawldelay.py")
        )
    )
    assert {"dont_obey_robotstxt", "proxy", "rep9309_scheduled", "rep9309_expired"} <= used
    assert used - code_spans("Request meta keys") == set(), (
        "document them in docs/reference.md's Request meta keys"
    )


@deferred_f_from_coro_f
async def test_one_info_summary_at_close(servers: ServerPool) -> None:
    result = await _crawl_every_outcome(servers)

    summaries = [
        record
        for record in result.logs_after_closing()
        if record.name.startswith("scrapy_rep9309") and record.levelno == logging.INFO
    ]
    messages = [record.getMessage() for record in summaries]
    closing = [
        m for m in messages if all(w in m for w in ("available", "unavailable", "unreachable"))
    ]
    assert len(closing) == 1, messages
    assert "forbidden" in closing[0]


@deferred_f_from_coro_f
async def test_robots_parsed_signal_is_sent(servers: ServerPool) -> None:
    if not hasattr(signals, "robots_parsed"):
        pytest.skip("this Scrapy has no robots_parsed signal (added in 2.18)")
    site = servers.add(rules(PRIVATE_RULES))
    public, private = site.url("/public/1"), site.url("/private/1")

    result = await run_crawl([public, private])

    assert len(result.robots_parsed) == 1
    parser, request = result.robots_parsed[0]
    assert request.url.startswith(site.base + "/")
    assert parser.allowed(public, "anybot") is True
    assert parser.allowed(private, "anybot") is False


def test_scrapys_parser_module_is_imported_only_for_robots_parsed_receivers() -> None:
    """The middleware never parses with Protego: a crawl whose ``robots_parsed`` signal
    nobody listens to never imports it (nor Scrapy's parser module, which imports it)."""
    script = (
        "import sys\n"
        "from scrapy.utils.reactor import install_reactor\n"
        "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
        "from scrapy import Spider\n"
        "from scrapy.utils.test import get_crawler\n"
        "from scrapy_rep9309 import RobotsTxtMiddleware\n"
        "crawler = get_crawler(Spider, {'ROBOTSTXT_OBEY': True, 'DOWNLOADER_MIDDLEWARES': {\n"
        "    'scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware': None,\n"
        "    'scrapy_rep9309.RobotsTxtMiddleware': 100}})\n"
        "RobotsTxtMiddleware.from_crawler(crawler)\n"
        "print(sorted(m for m in ('protego', 'scrapy.robotstxt') if m in sys.modules))\n"
    )
    result = run(["-c", script], cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
