"""robots.txt is fetched through the same proxy as the request that needed it."""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import run_crawl
from tests.servers import ServerPool, closed_port, rules

UNROUTED_HOST = "127.0.7.2"


@deferred_f_from_coro_f
async def test_proxy_meta_is_copied_to_the_robots_request(servers: ServerPool) -> None:
    """The origin itself refuses connections: only the proxy can answer for it."""
    proxy = servers.add(rules("User-agent: *\nDisallow: /private\n"))
    origin = f"http://{UNROUTED_HOST}:{closed_port(UNROUTED_HOST)}"
    public, private = origin + "/public/1", origin + "/private/1"
    plan = [Request(url, meta={"proxy": proxy.base}) for url in (public, private)]

    result = await run_crawl(plan, {"REP9309_DEFER_TIMEOUT": 2})

    (robots_request,) = result.robots_requests()
    assert robots_request.url == origin + "/robots.txt"
    assert robots_request.meta.get("proxy") == proxy.base
    assert robots_request.meta.get("dont_obey_robotstxt") is True
    assert [entry.uri for entry in proxy.robots_fetches] == [origin + "/robots.txt"]
    assert result.urls == {public}
    assert result.forbidden_urls == {private}
