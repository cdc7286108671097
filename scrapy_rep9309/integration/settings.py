"""The middleware's settings, read and validated once at start-up.

A wrong value must stop the crawl before it starts, with a message naming the
setting, rather than surface hours later as a crawl that ignores robots.txt.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep9309.integration.fetch import ROBOTS_REQUEST_META
from scrapy_rep9309.policy.fetchresult import DEFAULT_MAX_REDIRECTS, DEFAULT_MAX_SIZE
from scrapy_rep9309.rules.usage import vocabulary_labels
from scrapy_rep9309.storage.memory import MemoryStore

MIN_MAX_SIZE = DEFAULT_MAX_SIZE
DEFAULT_REDIS_URL = "redis://localhost:6379/0"
DEFAULT_REDIS_PREFIX = "rep9309"
BUILTIN_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
THIS_MIDDLEWARE = "scrapy_rep9309.RobotsTxtMiddleware"


class SettingsError(ValueError):
    """A setting has a value the middleware cannot work with."""


@dataclass(frozen=True)
class Rep9309Settings:
    """Validated settings; durations are seconds (floats allowed)."""

    user_agent: str | None = None
    cache_ttl: float = 86400.0
    min_ttl: float = 60.0
    max_size: int = MIN_MAX_SIZE
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    #: robots.txt downloads under way at once, across origins (REP9309_CONCURRENT_FETCHES);
    #: by default half of CONCURRENT_REQUESTS (Scrapy's default: 16).
    concurrent_fetches: int = 8
    retry_delay: float = 60.0
    retry_max_delay: float = 3600.0
    defer_timeout: float = 3600.0
    stale_ttl: float = 2592000.0
    cache_size: int = 10000
    crawl_delay: bool = False
    crawl_delay_max: float = 60.0
    store: type = MemoryStore
    #: Meta merged into every robots.txt request (REP9309_FETCH_META), read-only.
    fetch_meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    #: ``download_timeout`` of robots.txt requests; None leaves the crawl's own timeout.
    fetch_timeout: float | None = None
    #: Vocabulary labels a request's robots.txt preference must not refuse (``n``).
    require_usage: tuple[str, ...] = ()
    #: User agents whose groups must allow a request too (purpose tokens).
    extra_user_agents: tuple[str, ...] = ()
    #: The spider's close reason when robots.txt let no request through; None: "finished".
    all_forbidden_close_reason: str | None = None

    def __post_init__(self) -> None:
        if self.retry_max_delay < self.retry_delay:
            raise SettingsError(
                f"REP9309_RETRY_MAX_DELAY ({self.retry_max_delay}) must not be smaller "
                f"than REP9309_RETRY_DELAY ({self.retry_delay})"
            )
        conflict = fetch_meta_conflict(self.fetch_meta)
        if conflict is not None:
            raise SettingsError(f"Invalid value for REP9309_FETCH_META: {conflict}")
        # A caller's dict must not change the requests behind the validation's back.
        object.__setattr__(self, "fetch_meta", MappingProxyType(dict(self.fetch_meta)))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Rep9309Settings:
        """Read every setting; NotConfigured when ROBOTSTXT_OBEY is off."""
        if not _read(settings, "ROBOTSTXT_OBEY", _to_bool, False):
            raise NotConfigured("ROBOTSTXT_OBEY is False")
        defaults = cls()
        return cls(
            user_agent=_read(settings, "ROBOTSTXT_USER_AGENT", _to_optional_str, None),
            cache_ttl=_read(settings, "REP9309_CACHE_TTL", _lifetime, defaults.cache_ttl),
            min_ttl=_read(settings, "REP9309_MIN_TTL", _lifetime, defaults.min_ttl),
            max_size=_read(settings, "REP9309_MAX_SIZE", _max_size, defaults.max_size),
            max_redirects=_read(
                settings, "REP9309_MAX_REDIRECTS", _non_negative_int, defaults.max_redirects
            ),
            concurrent_fetches=_read(
                settings,
                "REP9309_CONCURRENT_FETCHES",
                _positive_int,
                _half_the_downloader(settings),
            ),
            retry_delay=_read(settings, "REP9309_RETRY_DELAY", _positive, defaults.retry_delay),
            retry_max_delay=_read(
                settings, "REP9309_RETRY_MAX_DELAY", _positive, defaults.retry_max_delay
            ),
            defer_timeout=_read(
                settings, "REP9309_DEFER_TIMEOUT", _positive, defaults.defer_timeout
            ),
            stale_ttl=_read(settings, "REP9309_STALE_TTL", _non_negative, defaults.stale_ttl),
            cache_size=_read(settings, "REP9309_CACHE_SIZE", _positive_int, defaults.cache_size),
            crawl_delay=_read(settings, "REP9309_CRAWL_DELAY", _to_bool, defaults.crawl_delay),
            crawl_delay_max=_read(
                settings, "REP9309_CRAWL_DELAY_MAX", _non_negative, defaults.crawl_delay_max
            ),
            store=_read(settings, "REP9309_STORE", _store_class, defaults.store),
            fetch_meta=_read(settings, "REP9309_FETCH_META", _meta_dict, defaults.fetch_meta),
            fetch_timeout=_read(settings, "REP9309_FETCH_TIMEOUT", _positive, None),
            require_usage=_read(settings, "REP9309_REQUIRE_USAGE", _labels, ()),
            extra_user_agents=_read(settings, "REP9309_EXTRA_USER_AGENTS", _user_agents, ()),
            all_forbidden_close_reason=_read(
                settings, "REP9309_ALL_FORBIDDEN_CLOSE_REASON", _close_reason, None
            ),
        )


@dataclass(frozen=True)
class RedisStoreSettings:
    """Where the fleet's store lives (read when ``REP9309_STORE`` is ``RedisStore``)."""

    url: str = DEFAULT_REDIS_URL
    prefix: str = DEFAULT_REDIS_PREFIX

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RedisStoreSettings:
        """REP9309_REDIS_URL, else the Redis scrapy-redis's queue uses, else the local
        default: a fleet shares the Redis it is already configured with."""
        url = _read(settings, "REP9309_REDIS_URL", _redis_url, None)
        if url is None:
            url = _scrapy_redis_url(settings)
        prefix = _read(settings, "REP9309_REDIS_PREFIX", _redis_prefix, DEFAULT_REDIS_PREFIX)
        return cls(url=url, prefix=prefix)


#: The REDIS_PARAMS keys that say where Redis is and how to log in (scrapy-redis passes
#: them to redis-py), besides TLS options (``ssl_*``); the others (timeouts, encoding...)
#: concern scrapy-redis's own client.
_REDIS_PARAMS_LOCATION = ("url", "host", "port", "db", "username", "password", "ssl")
_REDIS_PARAMS_SOCKET = "unix_socket_path"
#: The single scrapy-redis settings, and the REDIS_PARAMS key each one overrides.
_REDIS_SINGLE_SETTINGS = (
    ("REDIS_URL", "url"),
    ("REDIS_HOST", "host"),
    ("REDIS_PORT", "port"),
    ("REDIS_DB", "db"),
)


def _scrapy_redis_url(settings: BaseSettings) -> str:
    """Where scrapy-redis connects, as one URL, the way redis-py combines what scrapy-redis
    gives it: REDIS_URL, else REDIS_HOST and REDIS_PORT (or REDIS_PARAMS's
    ``unix_socket_path``, which wins over a host); REDIS_PORT, REDIS_DB and REDIS_PARAMS's
    ``username``, ``password`` and (over TLS) ``ssl_*`` options apply where the URL does
    not say otherwise; a single setting wins over the same key of REDIS_PARAMS. Else the local
    default. A bad value names its setting."""
    try:
        params = settings.getdict("REDIS_PARAMS")
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"Invalid value for REDIS_PARAMS: {exc}") from None
    where = {
        key: value
        for key, value in params.items()
        if value and (key in _REDIS_PARAMS_LOCATION or key == _REDIS_PARAMS_SOCKET)
    }
    names = dict.fromkeys(where, "REDIS_PARAMS")
    for name, key in _REDIS_SINGLE_SETTINGS:
        if settings.get(name):  # scrapy-redis ignores empty values too
            where[key], names[key] = settings.get(name), name
    tls = {
        key: value
        for key, value in params.items()
        if key.startswith("ssl_") and isinstance(value, (str, int, bool))
    }
    if not where:
        return DEFAULT_REDIS_URL
    if "url" in where:
        parts = urlsplit(_read_param(where, names, "url", _redis_url, None))
    elif _REDIS_PARAMS_SOCKET in where:
        path = _read_param(where, names, _REDIS_PARAMS_SOCKET, _socket_path, None)
        parts = urlsplit(f"unix://{path}")
    else:
        host = _read_param(where, names, "host", _host, "localhost")
        port = _read_param(where, names, "port", _port, 6379)
        parts = urlsplit(f"{'rediss' if where.get('ssl') else 'redis'}://{host}:{port}")
    netloc, path, query = parts.netloc, parts.path, parts.query
    if parts.scheme != "unix" and parts.port is None and "port" in where:  # a URL's own
        netloc = f"{netloc}:{_read_param(where, names, 'port', _port, None)}"
    if parts.username is None and parts.password is None:  # the URL gives no login
        if where.get("username") or where.get("password"):
            username = quote(str(where.get("username") or ""), safe="")
            password = quote(str(where.get("password") or ""), safe="")
            netloc = f"{username}:{password}@{netloc}"
    options = dict(parse_qsl(query))
    path_db = "" if parts.scheme == "unix" else path.strip("/")
    if not path_db and "db" not in options and "db" in where:
        options["db"] = str(_read_param(where, names, "db", _non_negative_int, 0))
    if parts.scheme != "unix" and not path_db:
        path = f"/{options.pop('db', '0')}"
    for key, value in tls.items() if parts.scheme == "rediss" else ():  # TLS only
        flag = "yes" if value else "no"
        options.setdefault(key, flag if isinstance(value, bool) else str(value))
    url = f"{parts.scheme}://{netloc}{path}"
    return f"{url}?{urlencode(options, safe='/')}" if options else url


def _read_param(
    where: Mapping[str, Any],
    names: Mapping[str, str],
    key: str,
    convert: Callable[[Any], Any],
    default: Any,
) -> Any:
    """``where[key]`` converted (``default`` when absent); a bad value names the setting
    it came from."""
    if key not in where:
        return default
    try:
        return convert(where[key])
    except (TypeError, ValueError) as exc:
        name = f"REDIS_PARAMS[{key!r}]" if names[key] == "REDIS_PARAMS" else names[key]
        raise SettingsError(f"Invalid value for {name}: {where[key]!r} ({exc})") from None


def _port(value: Any) -> int:
    port = _integer(value)
    if not 0 < port < 65536:
        raise ValueError("expected a port number, 1 to 65535")
    return port


def _host(value: Any) -> str:
    """A host name or address for a URL (an IPv6 literal bracketed, its zone escaped)."""
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "/@?# "):
        raise ValueError("expected a host name or address")
    host = value.strip().removeprefix("[").removesuffix("]")
    return f"[{host.replace('%', '%25')}]" if ":" in host else host


def _socket_path(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/"):
        raise ValueError("expected an absolute path")
    return quote(value, safe="/")


def fetch_meta_conflict(meta: Mapping[str, Any]) -> str | None:
    """Why ``meta`` cannot be merged into robots.txt requests, or None if it can.

    The keys this package sets on its robots.txt requests keep it correct: without
    ``dont_obey_robotstxt`` the middleware would hold its own fetch, without
    ``dont_redirect`` or ``dont_retry`` Scrapy would follow or retry behind the hop
    limit and the backoff, a ``download_maxsize`` would fail a large file instead of
    truncating it. They may appear only with the value this package gives them.
    ``download_timeout`` has its own setting; ``rep9309_*`` keys are this package's.
    """
    for key, value in meta.items():
        if not isinstance(key, str):
            return f"meta keys must be strings, got {key!r}"
        if key == "download_timeout":
            return "set the robots.txt download timeout with REP9309_FETCH_TIMEOUT"
        if key.lstrip("_").startswith("rep9309_"):
            return f"{key!r} is reserved for scrapy-rep9309"
        if key == "download_maxsize":
            return (
                f"{key!r} is set on robots.txt requests by scrapy-rep9309 itself (from "
                "REP9309_MAX_SIZE) and cannot be changed"
            )
        if key in ROBOTS_REQUEST_META and value != ROBOTS_REQUEST_META[key]:
            return (
                f"{key!r} is set to {ROBOTS_REQUEST_META[key]!r} on robots.txt requests "
                "by scrapy-rep9309 itself and cannot be changed"
            )
    return None


def check_builtin_disabled(settings: BaseSettings) -> None:
    """Fail when Scrapy's own RobotsTxtMiddleware would run next to this one."""
    builtin = load_object(BUILTIN_MIDDLEWARE)
    enabled = build_component_list(settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
    for component in enabled:
        cls = load_object(component) if isinstance(component, str) else component
        if isinstance(cls, type) and issubclass(cls, builtin):
            raise SettingsError(
                f"{BUILTIN_MIDDLEWARE} is still enabled next to {THIS_MIDDLEWARE}: "
                "both would fetch and obey robots.txt. Disable it with "
                f'DOWNLOADER_MIDDLEWARES = {{"{BUILTIN_MIDDLEWARE}": None, '
                f'"{THIS_MIDDLEWARE}": 100}}, or enable the add-on instead: '
                'ADDONS = {"scrapy_rep9309.Addon": 0}'
            )


#: REP9309_CONCURRENT_FETCHES when the downloader has no limit (CONCURRENT_REQUESTS = 0).
UNBOUNDED_DOWNLOADER_FETCHES = 32


def _half_the_downloader(settings: BaseSettings) -> int:
    """The default REP9309_CONCURRENT_FETCHES: half of CONCURRENT_REQUESTS, at least one.

    robots.txt downloads take places in the downloader like pages do. Were they allowed
    all of them, robots.txt files that never answer would fill it, and every other origin
    would wait for their DOWNLOAD_TIMEOUT. CONCURRENT_REQUESTS is Scrapy's setting, left
    for Scrapy to check; 0 means a downloader without limit, which nothing can fill."""
    try:
        concurrency = settings.getint("CONCURRENT_REQUESTS")
    except (TypeError, ValueError):
        return UNBOUNDED_DOWNLOADER_FETCHES
    if concurrency <= 0:
        return UNBOUNDED_DOWNLOADER_FETCHES
    return max(1, concurrency // 2)


def _read(settings: BaseSettings, name: str, convert: Callable[[Any], Any], default: Any) -> Any:
    value = settings.get(name)
    if value is None:
        return default
    try:
        return convert(value)
    except (TypeError, ValueError, OverflowError) as exc:  # Overflow: an int past a float
        raise SettingsError(f"Invalid value for {name}: {value!r} ({exc})") from None


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError("expected a number, got a boolean")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        number = float(value.strip())
    else:
        raise TypeError(f"expected a number, got {type(value).__name__}")
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    return number


def _integer(value: Any) -> int:
    number = _number(value)
    if not number.is_integer():
        raise ValueError("must be a whole number")
    return int(number)


def _at_least(
    minimum: float, *, exclusive: bool = False, whole: bool = False, unit: str = ""
) -> Callable[[Any], Any]:
    """A converter accepting numbers >= ``minimum`` (> with ``exclusive``), ints if ``whole``."""

    def convert(value: Any) -> float:
        number = _integer(value) if whole else _number(value)
        if number < minimum or (exclusive and number == minimum):
            bound = "greater than" if exclusive else "at least"
            raise ValueError(f"must be {bound} {minimum:g}{unit}")
        return number

    return convert


_positive = _at_least(0, exclusive=True)
#: A copy's shortest lifetime: a shorter one is lost in the clock's resolution (a Unix
#: time plus 1e-9 is the same time), and a copy stale as it arrives decides nothing.
_lifetime = _at_least(0.001, unit=" seconds")
_non_negative = _at_least(0)
_positive_int = _at_least(1, whole=True)
_non_negative_int = _at_least(0, whole=True)
_max_size = _at_least(MIN_MAX_SIZE, whole=True, unit=" bytes (RFC 9309 section 2.5)")


def _store_class(value: Any) -> type:
    """An import path (or the class itself) of a class with ``from_crawler``."""
    try:
        cls = load_object(value) if isinstance(value, str) else value
    except ModuleNotFoundError as exc:
        if exc.name == "redis" and str(value).startswith("scrapy_rep9309"):
            raise ValueError(
                'the Redis store needs the redis client: pip install "scrapy-rep9309[redis]"'
            ) from None
        raise ValueError(f"cannot import it: {exc}") from None
    except (ImportError, AttributeError, NameError) as exc:
        raise ValueError(f"cannot import it: {exc}") from None
    if not isinstance(cls, type) or not callable(getattr(cls, "from_crawler", None)):
        raise TypeError("expected the import path of a store class with from_crawler()")
    return cls


def _redis_url(value: Any) -> str:
    """A ``redis://``, ``rediss://`` or ``unix://`` URL, as redis-py reads them."""
    if not isinstance(value, str):
        raise TypeError(f"expected a URL string, got {type(value).__name__}")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ValueError("expected redis://host:port/db, rediss://... or unix:///path")
    if parts.scheme != "unix" and not parts.hostname:
        raise ValueError("no host")
    if parts.scheme == "unix" and not parts.path:
        raise ValueError("no socket path")
    parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    from redis.connection import parse_url  # only a Redis store's settings come here

    parse_url(value.strip())  # ValueError for a bad option: ?db=x, ?socket_timeout=abc
    return value.strip()


_PREFIX = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _redis_prefix(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    if not _PREFIX.fullmatch(value):
        raise ValueError("1 to 64 letters, digits, '_', '.', ':' or '-'")
    return value


def _string_list(value: Any) -> list[str]:
    """A list of strings, or one comma-separated string as given on the command line
    (like ``Settings.getlist``); items are stripped, empty ones dropped."""
    if isinstance(value, str):
        items: Sequence[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise TypeError(f"expected a list of strings, got {type(value).__name__}")
    strings = []
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"expected strings, got {item!r}")
        if item.strip():
            strings.append(item.strip())
    return strings


def _labels(value: Any) -> tuple[str, ...]:
    """Labels of the usage vocabulary (any case), each once."""
    return vocabulary_labels(_string_list(value))


def _user_agents(value: Any) -> tuple[str, ...]:
    """Product tokens or User-Agent strings, each once (an invalid token is warned about
    at start-up, not refused: it still selects the ``*`` group)."""
    return tuple(dict.fromkeys(_string_list(value)))


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "0", "false"):
        return value.strip().lower() in ("1", "true")
    raise ValueError("expected True or False")


def _meta_dict(value: Any) -> Mapping[str, Any]:
    """A dict, or its JSON text as given on the command line (like ``Settings.getdict``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object: {exc}") from None
    if isinstance(value, BaseSettings):
        value = value.copy_to_dict()
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a dict of request meta, got {type(value).__name__}")
    return dict(value)


def _close_reason(value: Any) -> str | None:
    """A close reason as Scrapy's own are written (``closespider_timeout``); empty: off."""
    reason = _to_optional_str(value)
    if reason is not None and not _CLOSE_REASON.fullmatch(reason):
        raise ValueError("expected 1 to 64 letters, digits, '_', '.', ':' or '-'")
    return reason


_CLOSE_REASON = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _to_optional_str(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value.strip() or None
