"""One robots.txt download per origin for a SitemapSpider reading sitemaps from robots.txt.

A spider's own request for ``/robots.txt`` is answered from the copy the middleware
fetched (``response.flags`` has ``rep9309-robots-copy``): when the copy is there already,
at once; when it is not, the request is held like any other and answered once the
middleware's one fetch is in. The servers count every robots.txt download.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.spiders import SitemapSpider
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_rep9309.integration.middleware import ROBOTS_COPY_FLAG
from tests.crawl import CrawlResult, Seen, run_crawl
from tests.servers import Reply, ScriptedOrigin, ServerPool, redirect, rules

PAGES = ("/page/1", "/page/2")


def _urlset(origin: ScriptedOrigin, paths: Iterable[str]) -> Reply:
    entries = "".join(f"<url><loc>{origin.url(path)}</loc></url>" for path in paths)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )
    return Reply(body=body, headers={"Content-Type": "application/xml"})


def _sitemap_index(origin: ScriptedOrigin, paths: Iterable[str]) -> Reply:
    entries = "".join(f"<sitemap><loc>{origin.url(path)}</loc></sitemap>" for path in paths)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}'
        "</sitemapindex>"
    )
    return Reply(body=body, headers={"Content-Type": "application/xml"})


def _sitemap_origin(
    servers: ServerPool, robots_path: str = "/robots.txt", failures: Iterable[Reply] = ()
) -> ScriptedOrigin:
    """An origin whose robots.txt (at ``robots_path``, after ``failures``) names a sitemap
    index and a sitemap: the index lists one more sitemap; together they list PAGES and a
    disallowed page."""
    site = servers.add()
    robots = rules(
        "User-agent: *\nDisallow: /private\n"
        f"Sitemap: {site.url('/sitemap-index.xml')}\n"
        f"Sitemap: {site.url('/sitemap-a.xml')}\n"
    )
    site.script(robots_path, [*failures, robots])
    site.script("/sitemap-index.xml", [_sitemap_index(site, ["/sitemap-b.xml"])])
    site.script("/sitemap-a.xml", [_urlset(site, [PAGES[0], "/private/1"])])
    site.script("/sitemap-b.xml", [_urlset(site, [PAGES[1]])])
    return site


class RobotsSitemapSpider(SitemapSpider):
    """Reads its sitemaps from the robots.txt of each ``sitemap_urls`` entry and records
    every page and every robots.txt response (``result``)."""

    name = "sitemap-e2e"
    result: CrawlResult
    #: Every robots.txt response the spider received (a fresh list per test: ``_with_urls``).
    robots_responses: list[Response]

    def _parse_sitemap(self, response: Response) -> Iterable[Request]:
        if response.url.endswith("/robots.txt"):
            self.robots_responses.append(response)
        return super()._parse_sitemap(response)

    def parse(self, response: Response, **kwargs: Any) -> None:
        self.result.responses.append(
            Seen(response.url, response.status, time.monotonic(), response.request)
        )


class PageFirstSitemapSpider(RobotsSitemapSpider):
    """Asks for a page of each origin first and for its robots.txt only from that page's
    callback: by then the middleware has the copy."""

    async def start(self) -> AsyncIterator[Any]:
        for url in self.sitemap_urls:
            yield Request(url.replace("/robots.txt", "/"), callback=self.parse_home)

    def parse_home(self, response: Response) -> Iterable[Request]:
        self.parse(response)
        yield Request(response.urljoin("/robots.txt"), callback=self._parse_sitemap)


@deferred_f_from_coro_f
async def test_sitemap_spider_downloads_each_robots_txt_once(servers: ServerPool) -> None:
    """The spider's robots.txt requests are scheduled before any copy exists: each is held
    and answered from the middleware's one fetch (shared), redirects and retries included."""
    plain = _sitemap_origin(servers)
    other = _sitemap_origin(servers)
    moved = _sitemap_origin(servers, robots_path="/moved/robots.txt")
    moved.script("/robots.txt", [redirect(moved.url("/moved/robots.txt"))])
    recovering = _sitemap_origin(servers, failures=[Reply(status=503)])
    missing = servers.add()  # robots.txt 404: no sitemaps, the spider gets the 404
    sites = [plain, other, moved, recovering]
    robots_urls = [site.url("/robots.txt") for site in [*sites, missing]]

    spider_cls = _with_urls(RobotsSitemapSpider, robots_urls)

    result = await run_crawl([], spider_cls=spider_cls)

    for site in [plain, other, missing]:
        assert len(site.robots_fetches) == 1, site
    assert len(moved.robots_fetches) == 1
    assert len(moved.requests_for("/moved/robots.txt")) == 1
    assert len(recovering.robots_fetches) == 2  # the 503, then the answer: no third
    for site in sites:
        assert site.crawled_paths() == set(PAGES), site
        for sitemap in ("/sitemap-index.xml", "/sitemap-a.xml", "/sitemap-b.xml"):
            assert len(site.requests_for(sitemap)) == 1, (site, sitemap)
    assert result.urls == {site.url(path) for site in sites for path in PAGES}
    assert result.stat("robotstxt/forbidden") == len(sites)  # /private/1 of each

    served = spider_cls.robots_responses
    expected = [site.url("/robots.txt") for site in (plain, other, recovering)]
    expected.append(moved.url("/moved/robots.txt"))
    assert sorted(response.url for response in served) == sorted(expected)
    assert all(ROBOTS_COPY_FLAG in response.flags for response in served)
    assert all(response.status == 200 for response in served)
    # The copy of the redirected robots.txt is answered at its final URL, for the
    # request of the origin's own /robots.txt.
    (moved_response,) = [r for r in served if r.url == moved.url("/moved/robots.txt")]
    assert moved_response.request.url == moved.url("/robots.txt")
    assert b"Sitemap:" in moved_response.body
    # The 404 copy went to HttpErrorMiddleware, as a downloaded 404 would.
    assert result.stat("httperror/response_ignored_status_count/404") == 1
    assert result.stat("robotstxt/robots_copy_served") == len(robots_urls)
    assert result.stat("robotstxt/deferred") >= len(robots_urls)
    assert result.stat("robotstxt/request_count") == 7  # 5 origins, 1 redirect hop, 1 retry


@deferred_f_from_coro_f
async def test_robots_txt_request_answered_from_the_copy_at_hand(servers: ServerPool) -> None:
    """A robots.txt request made once the copy is in is answered at once (not held)."""
    sites = [_sitemap_origin(servers) for _ in range(3)]
    robots_urls = [site.url("/robots.txt") for site in sites]

    spider_cls = _with_urls(PageFirstSitemapSpider, robots_urls)

    result = await run_crawl([], spider_cls=spider_cls)

    for site in sites:
        assert len(site.robots_fetches) == 1, site
        assert site.crawled_paths() == {"/", *PAGES}, site
    served = spider_cls.robots_responses
    assert sorted(response.url for response in served) == sorted(robots_urls)
    assert all(ROBOTS_COPY_FLAG in response.flags for response in served)
    assert result.stat("robotstxt/robots_copy_served") == len(sites)
    assert result.stat("robotstxt/deferred") == len(sites)  # the home pages only


@deferred_f_from_coro_f
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip-stored"])
async def test_a_copy_cut_at_the_size_limit_is_downloaded_whole(
    servers: ServerPool, compressed: bool
) -> None:
    """The copy holds the first REP9309_MAX_SIZE bytes only: the spider's request is
    downloaded, so that it sees the sitemap named past the limit. Sent gzip'd without
    compression (found by a second reviewer), the body is cut before it is decompressed,
    to fewer than REP9309_MAX_SIZE bytes: it was given to the spider as if whole."""
    site = servers.add()
    filler = "# filler\n" * 60000  # 540000 bytes, past the 512000-byte limit
    robots = f"User-agent: *\nDisallow: /private\n{filler}Sitemap: {site.url('/sitemap-a.xml')}\n"
    if compressed:
        body = gzip.compress(robots.encode(), compresslevel=0)
        headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip"}
        site.script("/robots.txt", [Reply(200, body, headers)])
    else:
        site.script("/robots.txt", [rules(robots)])
    site.script("/sitemap-a.xml", [_urlset(site, [PAGES[0]])])
    robots_url = site.url("/robots.txt")

    spider_cls = _with_urls(RobotsSitemapSpider, [robots_url])

    result = await run_crawl([], spider_cls=spider_cls)

    assert len(site.robots_fetches) == 2
    assert site.crawled_paths() == {PAGES[0]}
    (response,) = spider_cls.robots_responses
    assert ROBOTS_COPY_FLAG not in response.flags
    assert result.stat("robotstxt/truncated") == 1
    assert result.stat("robotstxt/robots_copy_downloaded") == 1
    assert result.stat("robotstxt/robots_copy_served") == 0


@deferred_f_from_coro_f
async def test_a_whole_copy_exactly_as_long_as_the_size_limit_answers(
    servers: ServerPool,
) -> None:
    """A robots.txt of exactly REP9309_MAX_SIZE bytes is whole (the fetch kept one octet
    past the limit and found none): its copy answers the spider's own request. Its length
    alone used to count it as cut, and it was downloaded a second time."""
    site = servers.add()
    head = f"User-agent: *\nDisallow: /private\nSitemap: {site.url('/sitemap-a.xml')}\n"
    robots = head + "#" * (512000 - len(head) - 1) + "\n"
    assert len(robots) == 512000
    site.script("/robots.txt", [rules(robots)])
    site.script("/sitemap-a.xml", [_urlset(site, [PAGES[0]])])

    spider_cls = _with_urls(RobotsSitemapSpider, [site.url("/robots.txt")])

    result = await run_crawl([], spider_cls=spider_cls)

    assert len(site.robots_fetches) == 1
    assert site.crawled_paths() == {PAGES[0]}
    (response,) = spider_cls.robots_responses
    assert ROBOTS_COPY_FLAG in response.flags
    assert len(response.body) == 512000
    assert result.stat("robotstxt/truncated") == 0
    assert result.stat("robotstxt/robots_copy_served") == 1


@deferred_f_from_coro_f
async def test_dont_obey_robotstxt_downloads_it_as_asked(servers: ServerPool) -> None:
    """``dont_obey_robotstxt`` keeps the middleware out of a request entirely: the spider's
    robots.txt request is downloaded itself, next to the middleware's fetch."""
    site = _sitemap_origin(servers)
    robots_url = site.url("/robots.txt")

    class OptedOut(RobotsSitemapSpider):
        async def start(self) -> AsyncIterator[Any]:
            yield Request(site.url("/"), callback=self.parse)
            yield Request(
                robots_url, callback=self._parse_sitemap, meta={"dont_obey_robotstxt": True}
            )

    spider_cls = _with_urls(OptedOut, [robots_url])

    result = await run_crawl([], spider_cls=spider_cls)

    assert len(site.robots_fetches) == 2
    assert site.crawled_paths() == {"/", *PAGES}
    (response,) = spider_cls.robots_responses
    assert ROBOTS_COPY_FLAG not in response.flags
    assert result.stat("robotstxt/robots_copy_served") == 0


@deferred_f_from_coro_f
async def test_a_copy_restored_from_jobdir_answers(servers: ServerPool, tmp_path: Path) -> None:
    """The copy saved under JOBDIR by one run answers the next run's robots.txt request."""
    site = _sitemap_origin(servers)
    robots_url = site.url("/robots.txt")
    jobdir = {"JOBDIR": str(tmp_path / "job")}
    await run_crawl([site.url("/")], jobdir)

    class Resumed(RobotsSitemapSpider):
        async def start(self) -> AsyncIterator[Any]:
            yield Request(robots_url, callback=self._parse_sitemap, dont_filter=True)

    spider_cls = _with_urls(Resumed, [robots_url])
    result = await run_crawl([], jobdir, spider_cls=spider_cls)

    assert len(site.robots_fetches) == 1
    assert site.crawled_paths() == {"/", *PAGES}
    (response,) = spider_cls.robots_responses
    assert ROBOTS_COPY_FLAG in response.flags
    assert result.stat("robotstxt/request_count") == 0


def _with_urls(spider_cls: type[RobotsSitemapSpider], urls: list[str]) -> type[Any]:
    """``spider_cls`` with ``sitemap_urls`` and its own list of robots.txt responses."""
    return type(spider_cls.__name__, (spider_cls,), {"sitemap_urls": urls, "robots_responses": []})
