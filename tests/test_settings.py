"""Settings are validated once, at start-up, with messages naming the setting."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings

from scrapy_rep9309.integration.addon import Addon
from scrapy_rep9309.integration.middleware import RobotsTxtMiddleware
from scrapy_rep9309.integration.settings import (
    BUILTIN_MIDDLEWARE,
    Rep9309Settings,
    SettingsError,
    check_builtin_disabled,
)


def _read(**values: Any) -> Rep9309Settings:
    return Rep9309Settings.from_settings(Settings({"ROBOTSTXT_OBEY": True, **values}))


def test_defaults_match_the_readme() -> None:
    settings = _read()
    assert settings == Rep9309Settings(
        user_agent=None,
        cache_ttl=86400,
        min_ttl=60,
        max_size=512000,
        max_redirects=5,
        retry_delay=60,
        retry_max_delay=3600,
        defer_timeout=3600,
        stale_ttl=2592000,
        cache_size=10000,
        crawl_delay=False,
        crawl_delay_max=60,
    )


@pytest.mark.parametrize("obey", [False, 0, "False", "0", None])
def test_robotstxt_obey_off_means_not_configured(obey: Any) -> None:
    with pytest.raises(NotConfigured):
        Rep9309Settings.from_settings(Settings({"ROBOTSTXT_OBEY": obey}))


def test_values_from_the_command_line_are_strings() -> None:
    settings = _read(
        REP9309_CACHE_TTL="0.5",
        REP9309_MAX_SIZE="600000",
        REP9309_CRAWL_DELAY="true",
        ROBOTSTXT_USER_AGENT="  MyBot  ",
    )
    assert settings.cache_ttl == 0.5
    assert settings.max_size == 600000
    assert settings.crawl_delay is True
    assert settings.user_agent == "MyBot"


def test_float_durations_are_allowed() -> None:
    settings = _read(REP9309_RETRY_DELAY=0.2, REP9309_RETRY_MAX_DELAY=0.4)
    assert (settings.retry_delay, settings.retry_max_delay) == (0.2, 0.4)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REP9309_CACHE_TTL", 0),
        ("REP9309_CACHE_TTL", -1),
        ("REP9309_CACHE_TTL", "soon"),
        ("REP9309_CACHE_TTL", True),
        ("REP9309_CACHE_TTL", float("inf")),
        ("REP9309_CACHE_TTL", [1]),
        # Past a float: an OverflowError, which named no setting (a second reviewer).
        pytest.param("REP9309_CACHE_TTL", 10**400, id="REP9309_CACHE_TTL-10**400"),
        pytest.param("REP9309_CONCURRENT_FETCHES", 10**400, id="CONCURRENT_FETCHES-10**400"),
        ("REP9309_MAX_SIZE", 511999),
        ("REP9309_MAX_SIZE", 600000.5),
        ("REP9309_MAX_REDIRECTS", -1),
        ("REP9309_MAX_REDIRECTS", 1.5),
        ("REP9309_CONCURRENT_FETCHES", 0),
        ("REP9309_CONCURRENT_FETCHES", 2.5),
        ("REP9309_CONCURRENT_FETCHES", "many"),
        ("REP9309_RETRY_DELAY", 0),
        ("REP9309_DEFER_TIMEOUT", -5),
        ("REP9309_STALE_TTL", -1),
        # A copy stale as it arrives (found by a reviewer: the answer was taken for
        # unreachable and robots.txt fetched a thousand times a second).
        ("REP9309_MIN_TTL", 0),
        ("REP9309_MIN_TTL", -1),
        ("REP9309_MIN_TTL", float("nan")),
        # Lost in the clock's resolution (a second reviewer: 1e-9 looped as 0 did).
        ("REP9309_MIN_TTL", 1e-9),
        ("REP9309_CACHE_TTL", 1e-9),
        ("REP9309_CACHE_SIZE", 0),
        ("REP9309_CRAWL_DELAY", "maybe"),
        ("REP9309_CRAWL_DELAY", 2),
        ("REP9309_CRAWL_DELAY_MAX", -0.1),
        ("ROBOTSTXT_USER_AGENT", 42),
        ("REP9309_STORE", "no.such.module.Store"),
        ("REP9309_STORE", "scrapy_rep9309.storage.memory.NoSuchStore"),
        ("REP9309_STORE", "scrapy_rep9309.storage.memory.DEFAULT_CAPACITY"),
        ("REP9309_STORE", 42),
        ("REP9309_ALL_FORBIDDEN_CLOSE_REASON", "robots txt"),
        ("REP9309_ALL_FORBIDDEN_CLOSE_REASON", "x" * 65),
        ("REP9309_ALL_FORBIDDEN_CLOSE_REASON", 1),
    ],
)
def test_invalid_value_names_the_setting(name: str, value: Any) -> None:
    with pytest.raises(SettingsError, match=name):
        _read(**{name: value})


def test_the_redis_store_without_the_redis_client_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The documented value is right; what is missing is the extra (a reviewer, as a new
    user, was told the setting was invalid)."""
    import sys

    import scrapy_rep9309
    from scrapy_rep9309 import integration, storage

    # As in a process that never imported them (the lazy export keeps what it loaded).
    # First: deleting the lazy export reads it, which imports them (while redis imports).
    monkeypatch.delattr(scrapy_rep9309, "RedisStore", raising=False)
    monkeypatch.delattr(storage, "redisstore", raising=False)
    monkeypatch.delattr(integration, "fleet", raising=False)
    monkeypatch.delitem(sys.modules, "scrapy_rep9309.storage.redisstore", raising=False)
    monkeypatch.delitem(sys.modules, "scrapy_rep9309.integration.fleet", raising=False)
    monkeypatch.setitem(sys.modules, "redis", None)  # "import redis" fails
    with pytest.raises(SettingsError, match="REP9309_STORE") as raised:
        _read(REP9309_STORE="scrapy_rep9309.RedisStore")
    assert 'pip install "scrapy-rep9309[redis]"' in str(raised.value)


def test_all_forbidden_close_reason_is_off_unless_set() -> None:
    assert _read().all_forbidden_close_reason is None
    assert _read(REP9309_ALL_FORBIDDEN_CLOSE_REASON="").all_forbidden_close_reason is None
    reason = _read(REP9309_ALL_FORBIDDEN_CLOSE_REASON=" robotstxt_forbidden ")
    assert reason.all_forbidden_close_reason == "robotstxt_forbidden"


def test_max_size_message_names_the_minimum() -> None:
    with pytest.raises(SettingsError, match="512000"):
        _read(REP9309_MAX_SIZE=1000)


def test_retry_max_delay_below_retry_delay() -> None:
    with pytest.raises(SettingsError, match="REP9309_RETRY_MAX_DELAY"):
        _read(REP9309_RETRY_DELAY=120, REP9309_RETRY_MAX_DELAY=60)


def test_zero_stale_ttl_and_zero_redirects_are_valid() -> None:
    settings = _read(REP9309_STALE_TTL=0, REP9309_MAX_REDIRECTS=0)
    assert (settings.stale_ttl, settings.max_redirects) == (0, 0)


def test_builtin_middleware_enabled_by_default_is_an_error() -> None:
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {"scrapy_rep9309.RobotsTxtMiddleware": 100}})
    with pytest.raises(SettingsError) as info:
        check_builtin_disabled(settings)
    message = str(info.value)
    assert f'"{BUILTIN_MIDDLEWARE}": None' in message
    assert "scrapy_rep9309.Addon" in message


def test_builtin_middleware_disabled_by_its_path() -> None:
    settings = Settings(
        {"DOWNLOADER_MIDDLEWARES": {BUILTIN_MIDDLEWARE: None, RobotsTxtMiddleware: 100}}
    )
    check_builtin_disabled(settings)


def test_builtin_disabled_by_class_object_still_runs_and_is_reported() -> None:
    """DOWNLOADER_MIDDLEWARES_BASE names it by path; a class key does not override that."""
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as Builtin

    settings = Settings({"DOWNLOADER_MIDDLEWARES": {Builtin: None, RobotsTxtMiddleware: 100}})
    with pytest.raises(SettingsError, match="still enabled"):
        check_builtin_disabled(settings)


def test_builtin_subclass_is_also_detected() -> None:
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as Builtin

    class Custom(Builtin):
        pass

    settings = Settings({"DOWNLOADER_MIDDLEWARES": {BUILTIN_MIDDLEWARE: None, Custom: 700}})
    with pytest.raises(SettingsError):
        check_builtin_disabled(settings)


def _enabled(settings: Settings) -> dict[Any, Any]:
    return dict(settings.getwithbase("DOWNLOADER_MIDDLEWARES"))


def test_addon_swaps_the_builtin_at_its_priority() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    enabled = _enabled(settings)
    assert enabled[BUILTIN_MIDDLEWARE] is None
    assert enabled[RobotsTxtMiddleware] == 100
    assert settings.getbool("ROBOTSTXT_OBEY")
    check_builtin_disabled(settings)


def test_addon_takes_over_an_explicitly_enabled_builtin() -> None:
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {BUILTIN_MIDDLEWARE: 543}})
    Addon().update_settings(settings)
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[RobotsTxtMiddleware] == 543
    check_builtin_disabled(settings)


def test_addon_does_not_override_an_explicit_obey_false() -> None:
    settings = Settings()
    settings.set("ROBOTSTXT_OBEY", False, priority="project")
    Addon().update_settings(settings)
    assert not settings.getbool("ROBOTSTXT_OBEY")


# -- REP9309_FETCH_META, REP9309_FETCH_TIMEOUT ------------------------------------


def test_fetch_meta_as_a_dict_or_json_text() -> None:
    assert dict(_read(REP9309_FETCH_META={"playwright": False}).fetch_meta) == {"playwright": False}
    from_command_line = _read(REP9309_FETCH_META='{"proxy": null, "zyte_api_automap": false}')
    assert dict(from_command_line.fetch_meta) == {"proxy": None, "zyte_api_automap": False}


def test_fetch_meta_is_a_read_only_copy() -> None:
    given = {"playwright": False}
    settings = _read(REP9309_FETCH_META=given)
    given["playwright"] = True
    assert settings.fetch_meta["playwright"] is False
    with pytest.raises(TypeError):
        settings.fetch_meta["playwright"] = True  # type: ignore[index]


def test_fetch_timeout_from_the_command_line() -> None:
    assert _read(REP9309_FETCH_TIMEOUT="2.5").fetch_timeout == 2.5
    assert _read().fetch_timeout is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("[1, 2]", "expected a dict"),
        ("{not json", "not a JSON object"),
        (42, "expected a dict"),
        ({1: True}, "strings"),
        ({"dont_obey_robotstxt": False}, "cannot be changed"),
        ({"dont_redirect": False}, "cannot be changed"),
        ({"dont_retry": False}, "cannot be changed"),
        ({"download_maxsize": 1000}, "cannot be changed"),
        ({"handle_httpstatus_all": False}, "cannot be changed"),
        ({"download_timeout": 5}, "REP9309_FETCH_TIMEOUT"),
        ({"_rep9309_size_budget": None}, "reserved"),
        ({"rep9309_scheduled": True}, "reserved"),
    ],
)
def test_invalid_fetch_meta_names_the_setting(value: Any, reason: str) -> None:
    with pytest.raises(SettingsError, match="REP9309_FETCH_META") as info:
        _read(REP9309_FETCH_META=value)
    assert reason in str(info.value)


def test_fetch_meta_may_repeat_a_control_key_with_its_own_value() -> None:
    settings = _read(REP9309_FETCH_META={"dont_redirect": True, "playwright": False})
    assert dict(settings.fetch_meta) == {"dont_redirect": True, "playwright": False}


def test_fetch_meta_conflict_is_refused_when_built_directly() -> None:
    with pytest.raises(SettingsError, match="REP9309_FETCH_META"):
        Rep9309Settings(fetch_meta={"dont_obey_robotstxt": False})


@pytest.mark.parametrize("value", [0, -1, "never", True, float("nan")])
def test_invalid_fetch_timeout_names_the_setting(value: Any) -> None:
    with pytest.raises(SettingsError, match="REP9309_FETCH_TIMEOUT"):
        _read(REP9309_FETCH_TIMEOUT=value)


# -- REP9309_REQUIRE_USAGE, REP9309_EXTRA_USER_AGENTS ---------------------------------


@pytest.mark.parametrize(
    ("value", "labels"),
    [
        (["train-ai"], ("train-ai",)),
        ("train-ai", ("train-ai",)),
        ("train-ai, search", ("train-ai", "search")),
        (("Search", "train-ai", "search"), ("search", "train-ai")),
        ("", ()),
        ([], ()),
    ],
)
def test_require_usage_as_a_list_or_command_line_text(value: Any, labels: tuple[str, ...]) -> None:
    assert _read(REP9309_REQUIRE_USAGE=value).require_usage == labels


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("ai-train", "'ai-train' is a Content-Signal key: its label is 'train-ai'"),
        (["train-ai", "ai-input"], "unknown label 'ai-input'; the vocabulary's labels are"),
        ({"train-ai": True}, "expected a list of strings"),
        ([1], "expected strings"),
    ],
)
def test_invalid_require_usage_names_the_setting(value: Any, reason: str) -> None:
    with pytest.raises(SettingsError, match="REP9309_REQUIRE_USAGE") as info:
        _read(REP9309_REQUIRE_USAGE=value)
    assert reason in str(info.value)


@pytest.mark.parametrize(
    ("value", "agents"),
    [
        (["Google-Extended"], ("Google-Extended",)),
        ("Google-Extended,Applebot-Extended", ("Google-Extended", "Applebot-Extended")),
        (" GPTBot , , GPTBot", ("GPTBot",)),
        # Kept as given: a token no group can name is warned about at start-up.
        (["MJ12bot"], ("MJ12bot",)),
    ],
)
def test_extra_user_agents_as_a_list_or_command_line_text(
    value: Any, agents: tuple[str, ...]
) -> None:
    assert _read(REP9309_EXTRA_USER_AGENTS=value).extra_user_agents == agents


@pytest.mark.parametrize("value", [42, [b"Google-Extended"], {"Google-Extended": 1}])
def test_invalid_extra_user_agents_names_the_setting(value: Any) -> None:
    with pytest.raises(SettingsError, match="REP9309_EXTRA_USER_AGENTS"):
        _read(REP9309_EXTRA_USER_AGENTS=value)


@pytest.mark.parametrize(
    ("concurrency", "fetches"),
    [(16, 8), ("16", 8), (3, 1), (1, 1), (0, 32)],
)
def test_concurrent_fetches_default_to_half_the_downloader(concurrency: Any, fetches: int) -> None:
    """CONCURRENT_REQUESTS = 0 is a downloader without limit (Scrapy accepts it): the
    robots.txt downloads then keep the bound they had before the default followed it."""
    assert _read(CONCURRENT_REQUESTS=concurrency).concurrent_fetches == fetches


def test_an_explicit_concurrent_fetches_does_not_read_concurrent_requests() -> None:
    settings = _read(CONCURRENT_REQUESTS=0, REP9309_CONCURRENT_FETCHES=4)
    assert settings.concurrent_fetches == 4


def test_a_boolean_count_is_refused_as_a_boolean_not_as_seconds() -> None:
    """REP9309_CONCURRENT_FETCHES counts fetches: the message says what is wrong without
    calling it a number of seconds (found by a second reviewer)."""
    with pytest.raises(SettingsError, match="REP9309_CONCURRENT_FETCHES") as raised:
        _read(REP9309_CONCURRENT_FETCHES=True)
    assert "boolean" in str(raised.value)
    assert "seconds" not in str(raised.value)
