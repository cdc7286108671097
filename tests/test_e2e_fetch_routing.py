"""REP9309_FETCH_META and REP9309_FETCH_TIMEOUT on real crawls.

``RenderingHandler`` stands in for the download handlers that plugins such as
scrapy-playwright or scrapy-zyte-api register for ``http``: it "renders" every
request itself, unless the request's meta says ``render: False``, and sends those
on to Scrapy's own HTTP handler. A rendered robots.txt is an HTML page, which
parses as no rules at all: the test shows why robots.txt must be kept off it.
"""

from __future__ import annotations

import inspect
from typing import Any

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet.defer import Deferred, succeed

from tests.crawl import run_crawl
from tests.servers import ServerPool, hang, rules

PRIVATE_RULES = "User-agent: *\nDisallow: /private\n"
HANDLER_PATH = f"{__name__}.RenderingHandler"
ROUTED = {"DOWNLOAD_HANDLERS": {"http": HANDLER_PATH}}

#: URLs the rendering side of ``RenderingHandler`` answered, across one test.
rendered: list[str] = []


def _render(request: Request) -> Response:
    rendered.append(request.url)
    body = f"<html><body><pre>rendered {request.url}</pre></body></html>".encode()
    return HtmlResponse(request.url, body=body, request=request)


# Scrapy >= 2.14 awaits download_request(request); 2.13 calls (request, spider) for a Deferred.
if inspect.iscoroutinefunction(HTTP11DownloadHandler.download_request):

    class RenderingHandler(HTTP11DownloadHandler):
        lazy = False

        async def download_request(self, request: Request) -> Response:
            if request.meta.get("render", True):
                return _render(request)
            return await super().download_request(request)

else:  # pragma: no cover - Scrapy 2.13

    class RenderingHandler(HTTP11DownloadHandler):  # type: ignore[no-redef]
        lazy = False

        def download_request(self, request: Request, spider: Any) -> Deferred[Response]:  # type: ignore[override]
            if request.meta.get("render", True):
                return succeed(_render(request))
            return super().download_request(request, spider)


@deferred_f_from_coro_f
async def test_fetch_meta_keeps_robots_txt_off_a_rendering_handler(servers: ServerPool) -> None:
    site = servers.add(rules(PRIVATE_RULES))
    public, private = site.url("/public/1"), site.url("/private/1")
    rendered.clear()

    result = await run_crawl([public, private], {**ROUTED, "REP9309_FETCH_META": {"render": False}})

    assert rendered == [public]
    assert len(site.robots_fetches) == 1
    assert site.page_requests == []
    assert result.urls == {public}
    assert result.forbidden_urls == {private}
    (robots_request,) = result.robots_requests()
    assert robots_request.meta["render"] is False
    assert robots_request.meta["dont_obey_robotstxt"] is True


@deferred_f_from_coro_f
async def test_without_fetch_meta_the_rendered_robots_txt_has_no_rules(
    servers: ServerPool,
) -> None:
    """The same crawl without the setting: the handler answers robots.txt and nothing is kept."""
    site = servers.add(rules(PRIVATE_RULES))
    public, private = site.url("/public/1"), site.url("/private/1")
    rendered.clear()

    result = await run_crawl([public, private], ROUTED)

    assert site.url("/robots.txt") in rendered
    assert site.robots_fetches == []
    assert result.urls == {public, private}


@deferred_f_from_coro_f
async def test_fetch_meta_proxy_none_fetches_robots_txt_direct(servers: ServerPool) -> None:
    """The pages go through the proxy; robots.txt, with ``proxy: None``, does not."""
    site = servers.add(rules(PRIVATE_RULES))
    # Were robots.txt asked through it, the proxy would answer for the origin with these.
    proxy = servers.add(rules("User-agent: *\nDisallow: /\n"))
    public, private = site.url("/public/1"), site.url("/private/1")
    plan = [Request(url, meta={"proxy": proxy.base}) for url in (public, private)]

    result = await run_crawl(plan, {"REP9309_FETCH_META": '{"proxy": null}'})

    assert len(site.robots_fetches) == 1
    assert proxy.robots_fetches == []
    assert [entry.uri for entry in proxy.page_requests] == [public]
    assert result.urls == {public}
    assert result.forbidden_urls == {private}


@deferred_f_from_coro_f
async def test_hanging_robots_txt_is_unreachable_after_the_fetch_timeout(
    servers: ServerPool,
) -> None:
    """0.5 s against a 30 s DOWNLOAD_TIMEOUT: the retries prove which one applied."""
    site = servers.add(hang())
    pages = site.urls(["/page/1", "/page/2"])

    result = await run_crawl(
        pages,
        {
            "DOWNLOAD_TIMEOUT": 30,
            "REP9309_FETCH_TIMEOUT": 0.5,
            "REP9309_RETRY_DELAY": 0.2,
            "REP9309_RETRY_MAX_DELAY": 0.2,
            "REP9309_DEFER_TIMEOUT": 4,
        },
    )

    fetches = site.robots_fetches
    assert len(fetches) >= 2
    # Each one gave up after 0.5 s and was retried 0.2 s later: nowhere near 30 s.
    assert fetches[1].received - fetches[0].received < 10
    assert result.stat("robotstxt/unreachable") >= 2
    assert any("TimeoutError" in key for key in result.robotstxt_stats())
    assert all(r.meta["download_timeout"] == 0.5 for r in result.robots_requests())
    assert site.crawled_paths() == set()
    assert result.ignored_urls == set(pages)
    assert result.duration < 20
