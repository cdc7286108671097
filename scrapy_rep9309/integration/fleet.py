"""``REP9309_STORE = "scrapy_rep9309.RedisStore"``: one robots.txt cache for a fleet of
crawl processes (scrapy-redis or any other scheduler), kept in Redis.

The store itself (``storage/redisstore.py``) knows nothing of Scrapy; this subclass
reads and checks the settings and makes sure Redis answers before the crawl starts:
a fleet process that cannot reach its Redis would fetch every robots.txt on its own
and hold requests nobody else can see, so it stops at start-up instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_rep9309.integration.settings import (
    RedisStoreSettings,
    Rep9309Settings,
    SettingsError,
)
from scrapy_rep9309.storage.base import StoreUnavailable
from scrapy_rep9309.storage.redisstore import RedisOriginStore, redact

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self  # typing.Self requires Python 3.11

#: Seconds the start-up check waits for Redis to answer.
STARTUP_TIMEOUT = 5.0


class RedisStore(RedisOriginStore):
    """The Redis store, built from the crawl's settings (docs/fleet.md)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        options = RedisStoreSettings.from_settings(crawler.settings)
        settings = Rep9309Settings.from_settings(crawler.settings)
        _require_asyncio_reactor()
        check_reachable(options.url)
        return cls(
            options.url,
            settings,
            prefix=options.prefix,
            max_size=settings.max_size,
            stats=crawler.stats,
        )


def check_reachable(url: str) -> None:
    """PING Redis once; StoreUnavailable naming REP9309_REDIS_URL if it does not answer."""
    import redis

    client = redis.Redis.from_url(
        url, socket_connect_timeout=STARTUP_TIMEOUT, socket_timeout=STARTUP_TIMEOUT
    )
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise StoreUnavailable(
            f"REP9309_REDIS_URL: Redis at {redact(url)} does not answer ({exc}); "
            "REP9309_STORE is the Redis store, so the crawl cannot start without it"
        ) from None
    finally:
        client.close()


def _require_asyncio_reactor() -> None:
    from scrapy.utils.reactor import is_asyncio_reactor_installed

    if not is_asyncio_reactor_installed():
        raise SettingsError(
            "Invalid value for REP9309_STORE: the Redis store needs the asyncio reactor "
            '(TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor", '
            "Scrapy's default)"
        )
