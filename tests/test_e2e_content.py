"""robots.txt bodies: the 500 KiB parse limit stops the download; BOM and CR line ends."""

from __future__ import annotations

import gzip
import logging

from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.crawl import run_crawl
from tests.servers import Reply, ServerPool, rules

FILLER_LINE = b"# " + b"x" * 97 + b"\n"  # 100 bytes
BIG_SIZE = 1_200_000
LATE_RULE_AT = 600_000


def _big_robots_txt() -> bytes:
    """1.2 MB: an early rule, filler, a rule past 500 KiB, more filler."""
    head = b"User-agent: *\nDisallow: /early\n"
    late = b"Disallow: /late\n"
    before = FILLER_LINE * ((LATE_RULE_AT - len(head)) // len(FILLER_LINE))
    body = head + before + late
    body += FILLER_LINE * ((BIG_SIZE - len(body)) // len(FILLER_LINE))
    assert body.index(late) > 500 * 1024 and len(body) >= BIG_SIZE - len(FILLER_LINE)
    return body


@deferred_f_from_coro_f
async def test_huge_robots_txt_is_cut_at_the_parse_limit(servers: ServerPool) -> None:
    body = _big_robots_txt()
    # Streamed slowly enough (about 0.2 s in all) for the server to see the client leave.
    site = servers.add(rules(body, chunk_size=32 * 1024, chunk_interval=0.005))
    early, late = site.url("/early/1"), site.url("/late/1")

    result = await run_crawl([early, late])

    assert result.forbidden_urls == {early}
    assert result.urls == {late}, "a rule past the parse limit must be ignored"
    assert result.stat("robotstxt/truncated") == 1
    assert undocumented_stats(set(result.stats)) == set()
    (fetch,) = site.robots_fetches
    assert fetch.connection_lost, "the download should stop, not run to the end"
    assert fetch.bytes_sent < len(body)
    assert fetch.bytes_sent < 900_000


@deferred_f_from_coro_f
async def test_bom_and_cr_line_ends(servers: ServerPool) -> None:
    site = servers.add(rules(b"\xef\xbb\xbfUser-agent: *\rDisallow: /private\rAllow: /\r"))
    public, private = site.url("/public/1"), site.url("/private/1")

    result = await run_crawl([public, private])

    assert result.urls == {public}
    assert result.forbidden_urls == {private}
    assert any(
        "(Disallow: /private, line 2 of" in message for message in result.messages(logging.DEBUG)
    )


@deferred_f_from_coro_f
async def test_robots_txt_is_asked_for_uncompressed_and_read_if_compressed_anyway(
    servers: ServerPool,
) -> None:
    """Asked for with ``Accept-Encoding: identity`` (so that the parse limit limits what is
    parsed); a server that compresses it all the same is read as usual."""
    body = gzip.compress(b"User-agent: *\nDisallow: /private\n")
    site = servers.add(Reply(200, body, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}))

    result = await run_crawl(site.urls(["/a", "/private/b"]))

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/b")}
    (fetch,) = site.robots_fetches
    assert fetch.headers.get("Accept-Encoding") == "identity"


@deferred_f_from_coro_f
async def test_a_compressed_robots_txt_that_decompresses_to_gigabytes_is_unreachable(
    servers: ServerPool,
) -> None:
    """A few KiB that decompress past 8 times the parse limit (a "zip bomb", here 64 MB)
    are not decompressed further: the robots.txt is unreachable (complete disallow, asked
    again later), never decompressed whole, never read as "allow all"."""
    bomb = gzip.compress(b"User-agent: *\nAllow: /\n" + b"\0" * 64_000_000, 9)
    site = servers.add(Reply(200, bomb, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}))

    result = await run_crawl([site.url("/a")], {"REP9309_DEFER_TIMEOUT": 1})

    assert result.urls == set()
    failure = result.failure_for(site.url("/a"))
    assert "decompressed" in failure.message, failure.message
    assert result.stat("robotstxt/unreachable") >= 1
    assert site.page_requests == []
