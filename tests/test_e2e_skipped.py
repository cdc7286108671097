"""Requests the middleware must not judge: dont_obey_robotstxt, data: and file: URLs."""

from __future__ import annotations

from pathlib import Path

from scrapy import Request
from scrapy.utils.defer import deferred_f_from_coro_f

from tests._readme import undocumented_stats
from tests.crawl import run_crawl
from tests.servers import ServerPool, rules

DISALLOW_ALL = "User-agent: *\nDisallow: /\n"


@deferred_f_from_coro_f
async def test_dont_obey_robotstxt_meta_skips_the_check(servers: ServerPool) -> None:
    judged = servers.add(rules(DISALLOW_ALL))
    never_asked = servers.add(rules(DISALLOW_ALL))
    exempt, forbidden = judged.url("/page/1"), judged.url("/page/2")
    exempt_elsewhere = never_asked.url("/page/1")
    plan = [
        Request(exempt, meta={"dont_obey_robotstxt": True}),
        forbidden,
        Request(exempt_elsewhere, meta={"dont_obey_robotstxt": True}),
    ]

    result = await run_crawl(plan)

    assert result.urls == {exempt, exempt_elsewhere}
    assert result.forbidden_urls == {forbidden}
    assert never_asked.robots_fetches == []


@deferred_f_from_coro_f
async def test_data_and_file_urls_skip_the_check(tmp_path: Path) -> None:
    local = tmp_path / "page.html"
    local.write_text("<html><body>local</body></html>")
    data_url, file_url = "data:text/plain,hello", local.as_uri()

    result = await run_crawl([data_url, file_url])

    assert result.urls == {data_url, file_url}
    assert result.failures == []
    assert result.robots_requests() == []


@deferred_f_from_coro_f
async def test_a_request_with_an_invalid_host_is_counted_and_refused(
    servers: ServerPool,
) -> None:
    """No origin, so no robots.txt can be fetched; through a proxy, which might read the
    URL as some real host, it is not sent (it used to be left to the downloader)."""
    proxy = servers.add(rules(DISALLOW_ALL))
    url = "http://a..b/page/1"

    result = await run_crawl([Request(url, meta={"proxy": proxy.base})])

    assert result.urls == set()
    assert [(failure.url, str(failure.exception)) for failure in result.failures] == [
        (url, "Invalid host: no robots.txt can be fetched for it")
    ]
    assert proxy.log == []
    assert result.stat("robotstxt/invalid_origin") == 1
    assert result.robots_requests() == []
    assert undocumented_stats(set(result.stats)) == set()


@deferred_f_from_coro_f
async def test_a_percent_encoded_host_obeys_the_robots_txt_of_the_host_it_names(
    servers: ServerPool,
) -> None:
    """``%64eny.example`` is ``deny.example`` (RFC 3986 allows percent-encoded octets in a
    host name; browsers and proxies decode them). Found by a second reviewer: such a
    host counted as invalid and was sent undecided, and a proxy that decoded it fetched
    a page that host's robots.txt forbids. Here one loopback server answers both as
    the proxy and as deny.example."""
    proxy = servers.add(rules(DISALLOW_ALL))
    urls = ["http://%64eny.example/b", "http://deny%2Eexample/c"]

    result = await run_crawl([Request(url, meta={"proxy": proxy.base}) for url in urls])

    assert result.forbidden_urls == set(urls)
    assert [entry.uri for entry in proxy.log] == ["http://deny.example/robots.txt"]
    assert result.stat("robotstxt/invalid_origin") == 0
