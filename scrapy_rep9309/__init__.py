"""RFC 9309 robots.txt for Scrapy: a parser, a matcher and a downloader middleware.

The parser (``RobotsTxt``) does not import Scrapy, so it stays cheap to import
for command-line use; the Scrapy-facing names are loaded on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep9309.rules.robotstxt import Decision, RobotsTxt

if TYPE_CHECKING:
    from scrapy_rep9309.integration.addon import Addon
    from scrapy_rep9309.integration.fleet import RedisStore
    from scrapy_rep9309.integration.middleware import RobotsTxtMiddleware
    from scrapy_rep9309.integration.robotparser import RobotParser

__all__ = ["Addon", "Decision", "RedisStore", "RobotParser", "RobotsTxt", "RobotsTxtMiddleware"]
__version__ = "0.1.0"

_LAZY = {
    "Addon": "scrapy_rep9309.integration.addon",
    "RedisStore": "scrapy_rep9309.integration.fleet",
    "RobotParser": "scrapy_rep9309.integration.robotparser",
    "RobotsTxtMiddleware": "scrapy_rep9309.integration.middleware",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'scrapy_rep9309' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
