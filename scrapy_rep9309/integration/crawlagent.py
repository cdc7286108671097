"""The User-Agent header a crawl sends, which robots.txt groups are chosen by.

The middleware and ``scrapy robots`` must pick the same one, or the command
would explain decisions the crawl never makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.settings import BaseSettings


def crawl_user_agent(settings: BaseSettings, spider: Spider | None = None) -> str:
    """The User-Agent a request without its own header is sent with ("" if none).

    ``DEFAULT_REQUEST_HEADERS["User-Agent"]``, else the spider's ``user_agent``
    attribute, else ``USER_AGENT``: DefaultHeadersMiddleware (priority 400) runs
    before UserAgentMiddleware (500), so the first wins. ``ROBOTSTXT_USER_AGENT``
    and a request's own header take precedence over all of these; callers apply them.
    """
    for name, value in (settings.getdict("DEFAULT_REQUEST_HEADERS") or {}).items():
        if str(name).lower() == "user-agent" and value:
            return value.decode("latin-1") if isinstance(value, bytes) else str(value)
    return str(getattr(spider, "user_agent", None) or settings.get("USER_AGENT") or "")
