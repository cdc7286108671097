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
    "transfer-encoding-not-chunked": HEAD + b"Transfer-Encoding: gzip\r\n\r\n" + RULES,
    "transfer-encoding-identity-with-length": HEAD
    + b"Transfer-Encoding: identity\r\nContent-Length: 34\r\n\r\n"
    + RULES,
    "transfer-encoding-first-line-not-chunked": HEAD
    + b"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n22\r\n"
    + RULES
    + b"\r\n0\r\n\r\n",
}
#: Answers both read: the rules decide.
READABLE = {
    "content-length-repeated-alike": HEAD
    + b"Content-Length: 34, 34\r\nContent-Length: 34\r\n\r\n"
    + RULES,
    "no-content-length-read-to-close": HEAD + b"\r\n" + RULES,
    "transfer-encoding-chunked-in-capitals": HEAD
    + b"Transfer-Encoding: Chunked\r\n\r\n22\r\n"
    + RULES
    + b"\r\n0\r\n\r\n",
}
#: Answers with no body (204) whose framing headers a crawl never reads: allow all.
NO_BODY = {
    "204-content-length-not-a-number": b"HTTP/1.1 204 No Content\r\nContent-Length: abc\r\n\r\n",
    "204-two-content-lengths": b"HTTP/1.1 204 No Content\r\nContent-Length: 1\r\n"
    b"Content-Length: 2\r\n\r\n",
    "204-transfer-encoding-not-chunked": b"HTTP/1.1 204 No Content\r\n"
    b"Transfer-Encoding: gzip\r\n\r\n",
}


async def _both(
    servers: ServerPool,
    answer: bytes,
    others: dict[str, bytes] | None = None,
    settings: dict[str, object] | None = None,
) -> tuple[dict[str, bool], dict[str, bool]]:
    """Which of /private/1 and /a ``check`` allows, and which a crawl downloads."""
    origin = servers.add_raw(answer, others)
    result = await run_async(check(origin.url("/robots.txt"), "/private/1", "/a"))
    crawl = await run_crawl(
        origin.urls(["/private/1", "/a"]), {"REP9309_DEFER_TIMEOUT": 2, **(settings or {})}
    )
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


@deferred_f_from_coro_f
@pytest.mark.parametrize("case", list(NO_BODY))
async def test_an_answer_without_a_body_is_not_read_for_one(servers: ServerPool, case: str) -> None:
    """A 204 allows all (no robots.txt rules); its Content-Length or Transfer-Encoding,
    which a crawl never reads for it, does not make it unreachable for ``check``."""
    by_check, by_crawl = await _both(servers, NO_BODY[case])

    assert by_crawl == {"/private/1": True, "/a": True}
    assert by_check == by_crawl


@deferred_f_from_coro_f
async def test_the_last_of_two_location_lines_is_followed(servers: ServerPool) -> None:
    """Scrapy reads the last ``Location`` line (``Headers.get``); ``check`` read the
    first: here rules against a 404 (allow all)."""
    moved = b"HTTP/1.1 301 Moved\r\nLocation: /r2.txt\r\nLocation: /r3.txt\r\n"
    others = {
        "/r2.txt": HEAD + b"Content-Length: 34\r\n\r\n" + RULES,
        "/r3.txt": b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    }
    by_check, by_crawl = await _both(servers, moved + b"Content-Length: 0\r\n\r\n", others)

    assert by_crawl == {"/private/1": True, "/a": True}
    assert by_check == by_crawl


@deferred_f_from_coro_f
async def test_a_robots_txt_cut_short_is_unreachable_whatever_download_fail_on_dataloss(
    servers: ServerPool,
) -> None:
    """With ``DOWNLOAD_FAIL_ON_DATALOSS = False`` a crawl read a robots.txt the connection
    cut short (here after ``Disallow: /`` of ``Disallow: /private/``) as whole: it
    forbade everything but /a, where ``check`` said unreachable. The robots.txt request
    fails on data loss whatever the setting."""
    cut = HEAD + b"Content-Length: 100\r\n\r\nUser-agent: *\nAllow: /a\nDisallow: /"
    settings = {"DOWNLOAD_FAIL_ON_DATALOSS": False}

    by_check, by_crawl = await _both(servers, cut, settings=settings)

    assert by_crawl == {"/private/1": False, "/a": False}
    assert by_check == by_crawl
