"""The demo's ``DEMO_MIDDLEWARE`` switch: this plugin or Scrapy's built-in middleware.

Settings modules cannot see ``-s`` options, so the demo spider applies the
switch from ``update_settings``, before add-ons are loaded.
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

MODES = ("rep9309", "builtin")
PLUGIN_PATHS = frozenset(
    {
        "scrapy_rep9309.Addon",
        "scrapy_rep9309.integration.addon.Addon",
        "scrapy_rep9309.RobotsTxtMiddleware",
        "scrapy_rep9309.integration.middleware.RobotsTxtMiddleware",
    }
)
BUILTIN_PATH = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"


def apply_demo_middleware(settings: BaseSettings) -> str:
    """Apply ``DEMO_MIDDLEWARE`` to ``settings`` and return the mode."""
    mode = settings.get("DEMO_MIDDLEWARE", "rep9309")
    if mode not in MODES:
        raise ValueError(f"DEMO_MIDDLEWARE must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "builtin":
        addons = {
            key: value
            for key, value in settings.getdict("ADDONS").items()
            if _path(key) not in PLUGIN_PATHS
        }
        middlewares = {
            key: value
            for key, value in settings.getdict("DOWNLOADER_MIDDLEWARES").items()
            if _path(key) not in PLUGIN_PATHS and _path(key) != BUILTIN_PATH
        }
        settings.set("ADDONS", addons, priority="cmdline")
        settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority="cmdline")
    return mode


def _path(component: object) -> str:
    """Import path of a component given as a path or as the class itself."""
    if isinstance(component, str):
        return component
    return f"{component.__module__}.{component.__qualname__}"  # type: ignore[attr-defined]
