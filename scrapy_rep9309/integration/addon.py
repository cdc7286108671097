"""``ADDONS = {"scrapy_rep9309.Addon": 0}``: swap Scrapy's RobotsTxtMiddleware for this one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from scrapy_rep9309.integration.settings import BUILTIN_MIDDLEWARE

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Priority of Scrapy's built-in middleware in DOWNLOADER_MIDDLEWARES_BASE.
DEFAULT_PRIORITY = 100


class Addon:
    """Disable the built-in middleware and enable ``RobotsTxtMiddleware`` in its place.

    Also sets ``ROBOTSTXT_OBEY = True`` with add-on priority: enabling the
    add-on means obeying robots.txt, while an explicit project, spider or
    command-line ``ROBOTSTXT_OBEY = False`` still wins.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        from scrapy_rep9309.integration.middleware import RobotsTxtMiddleware

        builtin = load_object(BUILTIN_MIDDLEWARE)
        replace = getattr(settings, "replace_in_component_priority_dict", None)
        if replace is not None and _enabled_in(settings.getdict("DOWNLOADER_MIDDLEWARES"), builtin):
            # The project enabled the built-in explicitly: take over its priority.
            replace("DOWNLOADER_MIDDLEWARES", builtin, RobotsTxtMiddleware)
        else:
            priority = settings.getwithbase("DOWNLOADER_MIDDLEWARES").get(BUILTIN_MIDDLEWARE)
            settings["DOWNLOADER_MIDDLEWARES"][RobotsTxtMiddleware] = (
                DEFAULT_PRIORITY if priority is None else priority
            )
        # DOWNLOADER_MIDDLEWARES_BASE lists the built-in by import path: only a
        # None under that same path disables it.
        settings["DOWNLOADER_MIDDLEWARES"][BUILTIN_MIDDLEWARE] = None
        settings.set("ROBOTSTXT_OBEY", True, priority="addon")


def _enabled_in(components: dict[object, object], builtin: type) -> bool:
    """Whether ``components`` enables ``builtin``. A component set to None is not loaded:
    Scrapy never imports a disabled one, and its package may not be installed."""
    for component, priority in components.items():
        if priority is None:
            continue
        cls = load_object(component) if isinstance(component, str) else component
        if cls is builtin:
            return True
    return False
