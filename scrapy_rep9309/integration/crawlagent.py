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
    return crawl_user_agent_source(settings, spider)[0]


def crawl_user_agent_source(
    settings: BaseSettings, spider: Spider | None = None
) -> tuple[str, str]:
    """:func:`crawl_user_agent` and where it comes from, for messages about it: a setting's
    name (``DEFAULT_REQUEST_HEADERS``, ``USER_AGENT``) or the spider's attribute."""
    for name, value in (settings.getdict("DEFAULT_REQUEST_HEADERS") or {}).items():
        if str(name).lower() == "user-agent" and value:
            return as_text(value), "DEFAULT_REQUEST_HEADERS"
    attribute = getattr(spider, "user_agent", None)
    if attribute:
        return as_text(attribute), "the spider's user_agent attribute"
    return as_text(settings.get("USER_AGENT") or ""), "USER_AGENT"


def as_text(user_agent: object) -> str:
    """A user agent as the tools read it: bytes (which Scrapy sends as they are) as UTF-8,
    the encoding Scrapy writes a str header in; ``str()`` of bytes would be ``"b'...'"``."""
    if isinstance(user_agent, bytes):
        return user_agent.decode("utf-8", "replace")
    return str(user_agent)
