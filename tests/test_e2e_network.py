"""Network failures fetching robots.txt make the origin unreachable: nothing is crawled."""

from __future__ import annotations

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl import run_crawl
from tests.servers import Reply, ServerPool, closed_port, hang, reset, rules

PAGES = [f"/page/{n}" for n in range(4)]
EXCEPTION_PREFIX = "robotstxt/exception_count/"


def _exception_stats(stats: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in stats.items() if key.startswith(EXCEPTION_PREFIX)}


#: The timeout's key as docs/reference.md names it: Scrapy >= 2.14 wraps Twisted's error in
#: its own class; 2.13 passes Twisted's through.
TIMEOUT_CLASSES = ("scrapy.exceptions.DownloadTimeoutError", "twisted.internet.error.TimeoutError")


@pytest.mark.parametrize(
    ("script", "exception_classes"),
    [(hang(), TIMEOUT_CLASSES), (reset(), ())],
    ids=["never-answers", "connection-reset"],
)
@deferred_f_from_coro_f
async def test_failed_fetch_defers_then_expires(
    servers: ServerPool, script: Reply, exception_classes: tuple[str, ...]
) -> None:
    """A robots.txt that never answers, or resets: its origin's requests are held, then
    expire; the failures are counted by exception (``exception_classes``: one of these
    names, when given)."""
    site = servers.add(script)
    pages = site.urls(PAGES)

    result = await run_crawl(
        pages, {"DOWNLOAD_TIMEOUT": 0.5, "REP9309_RETRY_DELAY": 0.2, "REP9309_DEFER_TIMEOUT": 2}
    )

    assert site.crawled_paths() == set()
    assert result.urls == set()
    assert result.ignored_urls == set(pages)
    assert len(site.robots_fetches) >= 2
    assert result.stat("robotstxt/unreachable") >= 1
    assert result.stat("robotstxt/deferred/expired") == len(pages)
    exceptions = _exception_stats(result.stats)
    assert exceptions, result.robotstxt_stats()
    # Keys name the exception by its class path, e.g. ...exception_count/a.b.SomeError
    for key in exceptions:
        class_path = key.removeprefix(EXCEPTION_PREFIX)
        assert "." in class_path and " " not in class_path and "<" not in class_path, key
    if exception_classes:
        assert {EXCEPTION_PREFIX + name for name in exception_classes} & set(exceptions), exceptions
    # Closed soon after the expiry, long before the CLOSESPIDER_TIMEOUT safety net.
    assert result.duration < 12


@deferred_f_from_coro_f
async def test_refused_connection_is_unreachable() -> None:
    host = "127.0.7.1"
    pages = [f"http://{host}:{closed_port(host)}{path}" for path in PAGES]

    result = await run_crawl(pages, {"REP9309_DEFER_TIMEOUT": 1})

    assert result.urls == set()
    assert result.ignored_urls == set(pages)
    assert result.stat("robotstxt/deferred/expired") == len(pages)
    # The names docs/reference.md gives: Scrapy >= 2.14 wraps Twisted's error in its own
    # class; 2.13 passes Twisted's through.
    assert set(_exception_stats(result.stats)) & {
        f"{EXCEPTION_PREFIX}scrapy.exceptions.DownloadConnectionRefusedError",
        f"{EXCEPTION_PREFIX}twisted.internet.error.ConnectionRefusedError",
    }, result.robotstxt_stats()


@deferred_f_from_coro_f
async def test_recovers_when_a_reset_origin_comes_back(servers: ServerPool) -> None:
    site = servers.add([reset(), reset(), rules("User-agent: *\nDisallow: /page/3\n")])
    pages = site.urls(PAGES)

    result = await run_crawl(pages, {"REP9309_RETRY_DELAY": 0.1})

    assert len(site.robots_fetches) == 3
    assert result.urls == set(pages) - {site.url("/page/3")}
    assert result.forbidden_urls == {site.url("/page/3")}
