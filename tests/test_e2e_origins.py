"""Origins (scheme, host, port) each get their own robots.txt, fetched once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import scrapy
from scrapy.utils.defer import deferred_f_from_coro_f
from twisted.internet.error import CannotListenError

from tests.crawl import BUILTIN_ENABLED, OURS_ENABLED, CrawlResult, run_crawl
from tests.servers import ScriptedOrigin, ServerPool, rules

X_FORBIDDEN = "User-agent: *\nDisallow: /x\n"
Y_FORBIDDEN = "User-agent: *\nDisallow: /y\n"
# Fixed loopback hosts for default ports, away from the pool's 127.0.0.x range.
DEFAULT_PORTS_HOST = "127.0.9.1"
SAME_HOST = "127.0.8.1"


@pytest.fixture
def default_port_origins(servers: ServerPool) -> Iterator[tuple[ScriptedOrigin, ScriptedOrigin]]:
    """http on port 80 and https on port 443 of one host (needs privileged ports)."""
    try:
        plain = servers.add(rules(X_FORBIDDEN), host=DEFAULT_PORTS_HOST, port=80)
        secure = servers.add(rules(Y_FORBIDDEN), host=DEFAULT_PORTS_HOST, port=443, tls=True)
    except CannotListenError as error:
        pytest.skip(f"cannot listen on ports 80/443 of {DEFAULT_PORTS_HOST}: {error}")
    yield plain, secure


async def _assert_separate_rules(
    first: ScriptedOrigin, first_base: str, second: ScriptedOrigin, second_base: str
) -> None:
    """``first`` forbids /x, ``second`` forbids /y: each origin must get its own."""
    first_x, first_y = first_base + "/x/1", first_base + "/y/1"
    second_x, second_y = second_base + "/x/1", second_base + "/y/1"

    result = await run_crawl([first_x, first_y, second_x, second_y])

    assert result.forbidden_urls == {first_x, second_y}
    assert result.urls == {first_y, second_x}
    assert len(first.robots_fetches) == 1
    assert len(second.robots_fetches) == 1


@deferred_f_from_coro_f
async def test_two_ports_of_one_host_have_separate_rules(servers: ServerPool) -> None:
    first = servers.add(rules(X_FORBIDDEN), host=SAME_HOST)
    second = servers.add(rules(Y_FORBIDDEN), host=SAME_HOST)

    await _assert_separate_rules(first, first.base, second, second.base)


@deferred_f_from_coro_f
async def test_http_and_https_of_one_host_have_separate_rules(
    default_port_origins: tuple[ScriptedOrigin, ScriptedOrigin],
) -> None:
    """Scrapy's built-in keys by netloc, so https would reuse http's rules here."""
    plain, secure = default_port_origins

    await _assert_separate_rules(
        plain, f"http://{DEFAULT_PORTS_HOST}", secure, f"https://{DEFAULT_PORTS_HOST}"
    )


@deferred_f_from_coro_f
async def test_default_port_written_or_not_is_one_origin(
    default_port_origins: tuple[ScriptedOrigin, ScriptedOrigin],
) -> None:
    plain, _ = default_port_origins
    implicit = [f"http://{DEFAULT_PORTS_HOST}/x/1", f"http://{DEFAULT_PORTS_HOST}/y/1"]
    explicit = [f"http://{DEFAULT_PORTS_HOST}:80/x/2", f"http://{DEFAULT_PORTS_HOST}:80/y/2"]

    result = await run_crawl(implicit + explicit)

    assert len(plain.robots_fetches) == 1
    assert result.forbidden_urls == {implicit[0], explicit[0]}
    assert {"/y/1", "/y/2"} == plain.crawled_paths()


@deferred_f_from_coro_f
async def test_host_case_does_not_make_another_origin(servers: ServerPool) -> None:
    """``LOCALHOST`` and ``localhost`` are one host (the built-in keys them apart)."""
    site = servers.add(rules(X_FORBIDDEN), host="127.0.0.1")
    upper, lower = f"http://LOCALHOST:{site.port}", f"http://localhost:{site.port}"
    plan = [upper + "/x/1", upper + "/y/1", lower + "/x/2", lower + "/y/2"]

    result = await run_crawl(plan)

    assert len(site.robots_fetches) == 1
    assert site.crawled_paths() == {"/y/1", "/y/2"}
    assert len(result.forbidden_urls) == 2


async def _crawl_fifty_at_once(
    servers: ServerPool, enable: dict[str, Any] = OURS_ENABLED
) -> tuple[CrawlResult, ScriptedOrigin, list[str], list[str]]:
    """50 requests to one new origin (40 allowed, 10 disallowed), all at once."""
    site = servers.add(rules("User-agent: *\nDisallow: /private\n", delay=0.3))
    pages = site.urls(f"/page/{n}" for n in range(40))
    private = site.urls(f"/private/{n}" for n in range(10))
    plan = [url for pair in zip(pages[:10], private, strict=True) for url in pair] + pages[10:]
    result = await run_crawl(plan, enable=enable)
    return result, site, pages, private


@deferred_f_from_coro_f
async def test_fifty_simultaneous_requests_to_a_new_origin_fetch_once(
    servers: ServerPool,
) -> None:
    result, site, pages, private = await _crawl_fifty_at_once(servers)

    assert len(site.robots_fetches) == 1
    assert result.urls == set(pages)
    assert result.forbidden_urls == set(private)
    assert site.crawled_paths() == {f"/page/{n}" for n in range(40)}


@deferred_f_from_coro_f
async def test_builtin_lets_through_requests_that_wait_for_robots_txt(
    servers: ServerPool,
) -> None:
    """Documented contrast (Scrapy 2.19, asyncio reactor): every request that waits
    on a robots.txt still being fetched, but the first, is allowed unchecked: the
    pending Deferred is turned into a Future per waiter, and ``Deferred.asFuture``
    passes None down the callback chain to the next waiter."""
    if scrapy.version_info < (2, 14):
        pytest.skip("before Scrapy 2.14 the built-in checked every waiting request")
    result, site, _, private = await _crawl_fifty_at_once(servers, BUILTIN_ENABLED)

    assert len(site.robots_fetches) == 1
    assert set(private) & result.urls, "the built-in now checks every waiting request"
