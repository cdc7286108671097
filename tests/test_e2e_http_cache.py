"""robots.txt answers replayed by Scrapy's HTTP cache (HTTPCACHE_ENABLED, DummyPolicy:
every answer kept for ever) are checked with the server when they say nothing current.

A replayed 5xx would come back at every retry and hold the origin's requests until they
expire, in this crawl and every later one using the cache; a replayed copy older than
REP9309_CACHE_TTL would decide pages the site now forbids (RFC 9309 2.4). When the
server cannot answer, the replay stands (2.4: an older copy may be used while robots.txt
is unreachable), so offline replays keep working.
"""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.extensions.httpcache import FilesystemCacheStorage
from scrapy.http import Response
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.crawl import PlanSpider, Wait, run_crawl
from tests.servers import Reply, ServerPool, redirect, rules

ALLOW_ALL = "User-agent: *\nAllow: /\n"
DISALLOW_PRIVATE = "User-agent: *\nDisallow: /private\n"
RECHECKED = "robotstxt/http_cache/rechecked"


def cache_settings(tmp_path: Path) -> dict[str, object]:
    return {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path / "cache")}


@deferred_f_from_coro_f
async def test_a_cached_server_error_is_checked_with_the_server(
    servers: ServerPool, tmp_path: Path
) -> None:
    site = servers.add([Reply(503, "busy"), rules(DISALLOW_PRIVATE)])
    pages = site.urls(["/a", "/b", "/private/1"])
    settings = {**cache_settings(tmp_path), "REP9309_RETRY_DELAY": 0.5}

    first = await run_crawl(pages, {**settings, "REP9309_DEFER_TIMEOUT": 20})

    # The 503 went into the cache; the retry found it there and asked the server.
    assert first.urls == set(site.urls(["/a", "/b"]))
    assert first.forbidden_urls == {site.url("/private/1")}
    assert first.stat(RECHECKED) == 1
    assert len(site.robots_fetches) == 2
    # Three requests (the first, the replayed retry, the live check), three responses.
    assert first.stat("robotstxt/request_count") == first.stat("robotstxt/response_count") == 3
    assert first.stat("robotstxt/response_status_count/503") == 2

    # A later crawl on the same cache: the replayed 503 is checked at once, no backoff.
    later = await run_crawl([*pages, site.url("/c")], {**settings, "REP9309_DEFER_TIMEOUT": 20})

    assert later.urls == set(site.urls(["/a", "/b", "/c"]))
    assert later.forbidden_urls == {site.url("/private/1")}
    assert later.stat("robotstxt/unreachable") == 0
    assert later.stat(RECHECKED) == 1
    assert len(site.robots_fetches) == 3
    assert undocumented_stats(set(first.stats) | set(later.stats)) == set()


@deferred_f_from_coro_f
async def test_a_cached_copy_older_than_the_ttl_is_checked_with_the_server(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The cached copy allows everything; the site's robots.txt now disallows /private."""
    site = servers.add([rules(ALLOW_ALL), rules(DISALLOW_PRIVATE)])
    settings = {**cache_settings(tmp_path), "REP9309_CACHE_TTL": 1}
    await run_crawl([site.url("/a")], settings)
    await asyncio.sleep(2.5)  # the cached copy's Date is now older than the TTL

    result = await run_crawl(site.urls(["/a", "/private/1"]), settings)

    assert site.crawled_paths() == {"/a"}
    assert result.forbidden_urls == {site.url("/private/1")}
    assert result.stat(RECHECKED) == 1
    assert len(site.robots_fetches) == 2


@deferred_f_from_coro_f
async def test_an_old_cached_copy_stands_when_the_server_cannot_answer(
    servers: ServerPool, tmp_path: Path
) -> None:
    site = servers.add([rules(DISALLOW_PRIVATE), Reply(503, "down")])
    settings = {**cache_settings(tmp_path), "REP9309_CACHE_TTL": 1}
    await run_crawl([site.url("/a")], settings)
    await asyncio.sleep(2.5)

    result = await run_crawl(site.urls(["/a", "/private/1"]), settings)

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/1")}
    assert result.stat(RECHECKED) == 1
    assert result.stat("robotstxt/unreachable") == 0
    assert len(site.robots_fetches) == 2
    assert result.stat("robotstxt/response_count") == 2  # the replay and the live 503
    assert result.stat("robotstxt/response_status_count/503") == 1


@deferred_f_from_coro_f
async def test_a_cached_compression_bomb_is_not_decompressed_whole(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A few KiB of robots.txt that decompress to 64 MB (sent compressed although asked
    for uncompressed) go into the HTTP cache as downloaded, before they are decompressed.
    Downloaded, their decompression stops at 8 times REP9309_MAX_SIZE; replayed from the
    cache (the retry, or a later crawl), it stops there too: unreachable both times, the
    page never fetched, never 64 MB decompressed."""
    bomb = gzip.compress(b"User-agent: *\nAllow: /\n" + b"\0" * 64_000_000, 9)
    site = servers.add(Reply(200, bomb, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}))
    settings = {**cache_settings(tmp_path), "REP9309_RETRY_DELAY": 0.3, "REP9309_DEFER_TIMEOUT": 2}

    result = await run_crawl([site.url("/page")], settings)

    assert site.page_requests == []
    assert result.stat("robotstxt/unreachable") >= 2, "the download, then the cache's replay"
    assert len(site.robots_fetches) == 1, "the retries were replayed from the cache"
    assert (result.stat("httpcompression/response_bytes") or 0) <= 8 * 500 * 1024
    assert "decompressed" in result.failure_for(site.url("/page")).message


class FlaglessCacheStorage(FilesystemCacheStorage):
    """A cache storage that keeps no response flags (third-party storages; Scrapy's own
    before 2.19): a replay has only the URL, status, headers and body."""

    def retrieve_response(self, spider: Spider, request: Request) -> Response | None:
        response = super().retrieve_response(spider, request)
        if response is None:
            return None
        return response.replace(flags=[])


@deferred_f_from_coro_f
async def test_a_replayed_copy_cut_at_the_size_limit_is_still_known_as_cut(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A robots.txt download stopped at REP9309_MAX_SIZE keeps one octet past it, so a
    replay from a storage that keeps no flags (``download_stopped``) still shows it was
    cut; the rule past the limit has no effect either way (found by a second reviewer:
    cut at the limit exactly, the replay counted as whole)."""
    filler = "# filler\n" * 60000  # 540000 bytes, past the 512000-byte limit
    site = servers.add(rules(f"{DISALLOW_PRIVATE}{filler}Disallow: /late\n", chunk_size=100_000))
    settings = {
        **cache_settings(tmp_path),
        "HTTPCACHE_STORAGE": f"{__name__}.FlaglessCacheStorage",
    }
    pages = site.urls(["/private/1", "/late", "/a"])

    live = await run_crawl(pages, settings)
    replayed = await run_crawl(pages, settings)

    assert len(site.robots_fetches) == 1
    assert replayed.stat("httpcache/hit") == 3  # robots.txt and the two pages
    for crawl in (live, replayed):
        assert crawl.stat("robotstxt/truncated") == 1
        assert crawl.forbidden_urls == {site.url("/private/1")}
        assert crawl.urls == {site.url("/late"), site.url("/a")}


@deferred_f_from_coro_f
async def test_a_copy_answering_the_spiders_robots_txt_request_is_not_cached(
    servers: ServerPool, tmp_path: Path
) -> None:
    """A spider's own robots.txt request is answered from the copy, not downloaded: the
    HTTP cache must not store that answer over the real one. Stored (found by a second
    reviewer), it had no headers but a Date of its own time, so a later crawl took the
    replay for a fresh copy and let it decide pages the site now forbids."""
    site = servers.add([rules(ALLOW_ALL), rules(DISALLOW_PRIVATE)])
    settings = {**cache_settings(tmp_path), "REP9309_CACHE_TTL": 3}
    first = await run_crawl([site.url("/a"), Wait(2.5), site.url("/robots.txt")], settings)
    assert first.stat("robotstxt/robots_copy_served") == 1
    await asyncio.sleep(2)  # the copy fetched by the first crawl is now older than the TTL

    second = await run_crawl(site.urls(["/b", "/private/1"]), settings)

    assert second.forbidden_urls == {site.url("/private/1")}
    assert "/private/1" not in site.crawled_paths()
    assert second.stat(RECHECKED) == 1


class _FollowsWithTheCopysMeta(PlanSpider):
    """Asks for /robots.txt; from its answer, follows /page with ``meta=response.meta``."""

    def parse(self, response: Response, **kwargs: Any) -> Any:
        super().parse(response)
        if response.url.endswith("/robots.txt"):
            yield Request(response.urljoin("/page"), meta=response.meta, callback=self.parse)


@deferred_f_from_coro_f
async def test_a_request_made_with_the_copys_meta_is_cached_as_usual(
    servers: ServerPool, tmp_path: Path
) -> None:
    """The copy's ``dont_cache`` is taken off once the HTTP cache has passed it by: a page
    followed with its ``response.meta`` used to inherit it and was never cached (found by
    a second reviewer)."""
    site = servers.add(rules(ALLOW_ALL))
    settings = cache_settings(tmp_path)
    first = await run_crawl(
        [site.url("/a"), Wait(0.5), site.url("/robots.txt")],
        settings,
        spider_cls=_FollowsWithTheCopysMeta,
    )
    assert first.stat("robotstxt/robots_copy_served") == 1

    await run_crawl([site.url("/page")], settings)

    assert [entry.path for entry in site.page_requests].count("/page") == 1


class _KeepsTheResponses(PlanSpider):
    responses: list[Response]

    def parse(self, response: Response, **kwargs: Any) -> None:
        super().parse(response)
        self.responses.append(response)


@deferred_f_from_coro_f
async def test_a_retried_copy_loses_the_dont_cache_too(servers: ServerPool, tmp_path: Path) -> None:
    """robots.txt answers 403, which the project retries (``RETRY_HTTP_CODES``); the
    spider's own robots.txt request is answered from the copy, RetryMiddleware tries it
    again with a copy of the request, and that one is answered from the copy too. Its
    response came with the ``dont_cache`` this middleware set, so a request made with its
    meta was never cached (found by a second reviewer)."""
    site = servers.add(rules("User-agent: *\nDisallow: /private\n", status=403))
    robots = Request(site.url("/robots.txt"), meta={"handle_httpstatus_all": True})
    responses: list[Response] = []
    await run_crawl(
        [site.url("/"), Wait(0.5), robots],
        {**cache_settings(tmp_path), "RETRY_HTTP_CODES": [403]},
        spider_cls=type("Spider", (_KeepsTheResponses,), {"responses": responses}),
    )
    (answer,) = [r for r in responses if r.url.endswith("/robots.txt")]
    assert "rep9309-robots-copy" in answer.flags
    assert answer.meta.get("retry_times"), "the copy was retried"
    assert "dont_cache" not in answer.meta
    assert "_rep9309_uncached_copy" not in answer.meta


_REFRESHING_HOME = (
    b"<html><head><meta http-equiv='refresh' content='0;url=/landing'></head>"
    b"<body>home</body></html>"
)


@deferred_f_from_coro_f
async def test_a_page_reached_from_the_copy_through_another_middleware_is_cached(
    servers: ServerPool, tmp_path: Path
) -> None:
    """/robots.txt redirects to the home page, whose meta refresh leads to /landing (sites
    send /robots.txt home). The spider's own robots.txt request is answered from the copy
    (the home page, HTML); MetaRefreshMiddleware, between the HTTP cache and this
    middleware, turns that answer into a request for /landing with the copy's meta. That
    request carried the copy's ``dont_cache`` (and its mark) and was never cached, nor
    anything made with its ``response.meta`` (found by a second reviewer)."""
    site = servers.add(redirect("/home"))
    home = Reply(body=_REFRESHING_HOME, headers={"Content-Type": "text/html"})
    site.script("/home", [home] * 5)
    settings = cache_settings(tmp_path)
    first = await run_crawl([site.url("/a"), Wait(0.5), site.url("/robots.txt")], settings)
    assert first.stat("robotstxt/robots_copy_served") == 1
    (landing,) = [seen for seen in first.responses if seen.url.endswith("/landing")]
    assert "dont_cache" not in landing.request.meta
    assert "_rep9309_uncached_copy" not in landing.request.meta

    await run_crawl([site.url("/landing")], settings)

    assert len(site.requests_for("/landing")) == 1, "the second crawl replays it"
