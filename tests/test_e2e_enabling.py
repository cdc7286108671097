"""Enabling the middleware the ways a user would, and failing loudly when misconfigured."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import load_object

from tests.crawl import (
    ADDON_ENABLED,
    BUILTIN,
    OURS,
    OURS_ENABLED,
    crawl_settings,
    make_crawler,
    ours_class,
    run_crawl,
    start_crawl,
)
from tests.servers import ServerPool, rules

PRIVATE_RULES = "User-agent: *\nDisallow: /private\n"


def _enabled_classes(middlewares: list[Any]) -> set[type]:
    return {type(mw) for mw in middlewares}


@pytest.mark.parametrize("enable", [OURS_ENABLED, ADDON_ENABLED], ids=["middleware-swap", "addon"])
@deferred_f_from_coro_f
async def test_enabled_replaces_builtin(servers: ServerPool, enable: dict[str, Any]) -> None:
    site = servers.add(rules(PRIVATE_RULES))
    public, private = site.url("/public/1"), site.url("/private/1")

    result = await run_crawl([public, private], enable=enable)

    enabled = _enabled_classes(result.middlewares)
    assert ours_class() in enabled
    assert load_object(BUILTIN) not in enabled
    assert result.urls == {public}
    assert result.forbidden_urls == {private}
    assert len(site.robots_fetches) == 1
    assert site.crawled_paths() == {"/public/1"}


@deferred_f_from_coro_f
async def test_robotstxt_obey_false_disables_it(servers: ServerPool) -> None:
    """NotConfigured: the middleware is left out and robots.txt is never fetched."""
    site = servers.add(rules("User-agent: *\nDisallow: /\n"))
    page = site.url("/page/1")

    result = await run_crawl([page], {"ROBOTSTXT_OBEY": False})

    assert ours_class() not in _enabled_classes(result.middlewares)
    assert result.urls == {page}
    assert site.robots_fetches == []


@deferred_f_from_coro_f
async def test_builtin_left_enabled_fails_at_startup() -> None:
    """Both middlewares would fetch and judge every origin twice: refuse to start."""
    crawler = make_crawler(crawl_settings({"DOWNLOADER_MIDDLEWARES": {OURS: 100}}))

    with pytest.raises(Exception, match=BUILTIN.replace(".", r"\.")) as raised:
        await start_crawl(crawler, plan=[])

    # The message says how to remove it: the built-in's path mapped to None.
    assert "None" in str(raised.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REP9309_CACHE_TTL", -1),
        ("REP9309_CACHE_TTL", "a day"),
        ("REP9309_MAX_SIZE", 1000),
        ("REP9309_MAX_REDIRECTS", -1),
        ("REP9309_RETRY_DELAY", -5),
        ("REP9309_RETRY_MAX_DELAY", "soon"),
        ("REP9309_DEFER_TIMEOUT", -5),
        ("REP9309_STALE_TTL", -1),
        ("REP9309_CACHE_SIZE", -1),
        ("REP9309_CRAWL_DELAY_MAX", -1),
    ],
)
@deferred_f_from_coro_f
async def test_invalid_setting_fails_at_startup_naming_it(name: str, value: object) -> None:
    crawler = make_crawler(crawl_settings(OURS_ENABLED, {name: value}))

    with pytest.raises(Exception, match=name):
        await start_crawl(crawler, plan=[])


@deferred_f_from_coro_f
async def test_a_cache_size_written_as_a_float_is_read_as_the_settings_check_reads_it(
    servers: ServerPool,
) -> None:
    """``-s REP9309_CACHE_SIZE=1e4`` passes the settings check (a whole number); the
    memory store read it again with ``getint`` and the crawl died at start-up with an
    error naming no setting (found by a second reviewer)."""
    site = servers.add(rules("User-agent: *\nDisallow: /private/\n"))

    result = await run_crawl(site.urls(["/a", "/private/1"]), {"REP9309_CACHE_SIZE": "1e4"})

    assert result.urls == {site.url("/a")}
    assert result.forbidden_urls == {site.url("/private/1")}


MISSING_MIDDLEWARE = "package_not_installed.SomeMiddleware"


def _scrapy_imports_disabled_components() -> bool:
    """Whether this Scrapy imports a component set to None itself (2.19 does, to compare
    import paths; 2.13 does not)."""
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {MISSING_MIDDLEWARE: None}})
    priorities = getattr(settings, "get_component_priority_dict_with_base", None)
    if priorities is None:
        return False
    try:
        priorities("DOWNLOADER_MIDDLEWARES")
    except ImportError:
        return True
    return False


@pytest.mark.skipif(
    _scrapy_imports_disabled_components(),
    reason="this Scrapy imports a disabled middleware itself: no crawl can disable a "
    "missing one, with or without the add-on",
)
@deferred_f_from_coro_f
async def test_the_addon_does_not_import_a_middleware_the_settings_disable(
    servers: ServerPool,
) -> None:
    """Scrapy 2.13 never imports a component set to None, so a project may disable one of
    a package this environment lacks (a shared settings module); the add-on looked for the
    built-in among every entry, the disabled ones too, and the crawl failed to start with
    ModuleNotFoundError (found by a second reviewer)."""
    site = servers.add(rules(PRIVATE_RULES))
    disabled = {"DOWNLOADER_MIDDLEWARES": {MISSING_MIDDLEWARE: None}}

    result = await run_crawl(site.urls(["/public/1", "/private/1"]), disabled, enable=ADDON_ENABLED)

    assert ours_class() in _enabled_classes(result.middlewares)
    assert result.urls == {site.url("/public/1")}
    assert result.forbidden_urls == {site.url("/private/1")}
