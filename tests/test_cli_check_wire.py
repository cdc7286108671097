"""``check`` reads a robots.txt answer off the wire as a crawl does (urllib against
Scrapy's downloader, Twisted), so that both decide alike for the same bytes: the cases
where they differed, found by a second reviewer, each sent by a raw TCP origin."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._commands import check, run_async
from tests.crawl import run_crawl
from tests.servers import ServerPool, rules

RULES = b"User-agent: *\nDisallow: /private/\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
#: Answers a crawl fails to download (unreachable: everything forbidden); ``check`` read
#: the rules of the first three, and failed with a traceback on the others.
UNREADABLE = {
    "content-length-above-what-is-sent": HEAD + b"Content-Length: 1000\r\n\r\n" + RULES,
    "two-content-lengths": HEAD + b"Content-Length: 34\r\nContent-Length: 20\r\n\r\n" + RULES,
    "content-length-not-a-number": HEAD + b"Content-Length: abc\r\n\r\n" + RULES,
    "chunked-body-cut-short": HEAD + b"Transfer-Encoding: chunked\r\n\r\n100\r\n" + RULES,
    "garbage-status-line": b"HELLO THERE\r\n\r\n" + RULES,
    "header-line-over-64-kib": HEAD + b"X-Long: " + b"a" * 70_000 + b"\r\n\r\n" + RULES,
}
#: Answers both read: the rules decide.
READABLE = {
    "content-length-repeated-alike": HEAD
    + b"Content-Length: 34, 34\r\nContent-Length: 34\r\n\r\n"
    + RULES,
    "no-content-length-read-to-close": HEAD + b"\r\n" + RULES,
}


async def _both(servers: ServerPool, answer: bytes) -> tuple[dict[str, bool], dict[str, bool]]:
    """Which of /private/1 and /a ``check`` allows, and which a crawl downloads."""
    origin = servers.add_raw(answer)
    result = await run_async(check(origin.url("/robots.txt"), "/private/1", "/a"))
    crawl = await run_crawl(origin.urls(["/private/1", "/a"]), {"REP9309_DEFER_TIMEOUT": 2})
    assert "Traceback" not in result.stderr, result.stderr
    by_check = {path: f"allowed     {path}" in result.stdout for path in ("/private/1", "/a")}
    by_crawl = {path: origin.url(path) in crawl.urls for path in ("/private/1", "/a")}
    return by_check, by_crawl


@deferred_f_from_coro_f
@pytest.mark.parametrize("case", list(UNREADABLE))
async def test_an_answer_a_crawl_cannot_read_is_unreachable_for_check_too(
    servers: ServerPool, case: str
) -> None:
    by_check, by_crawl = await _both(servers, UNREADABLE[case])

    assert by_crawl == {"/private/1": False, "/a": False}
    assert by_check == by_crawl


@deferred_f_from_coro_f
@pytest.mark.parametrize("case", list(READABLE))
async def test_an_answer_both_can_read_is_decided_by_its_rules(
    servers: ServerPool, case: str
) -> None:
    by_check, by_crawl = await _both(servers, READABLE[case])

    assert by_crawl == {"/private/1": False, "/a": True}
    assert by_check == by_crawl


@deferred_f_from_coro_f
async def test_a_self_signed_certificate_is_not_refused(servers: ServerPool) -> None:
    """Scrapy's downloader does not verify certificates by default: neither does ``check``
    (it said unreachable, everything disallowed, where the crawl read the rules)."""
    site = servers.add(rules(RULES), tls=True)

    result = await run_async(check(site.url("/robots.txt"), "/private/1", "/a"))
    crawl = await run_crawl(site.urls(["/private/1", "/a"]))

    assert "allowed     /a" in result.stdout, result.stdout + result.stderr
    assert "disallowed  /private/1" in result.stdout
    assert crawl.urls == {site.url("/a")}
