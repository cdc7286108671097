"""``ROBOTSTXT_PARSER = "scrapy_rep9309.RobotParser"``: this parser behind Scrapy's own middleware.

Scrapy's built-in middleware then matches with RFC 9309 rules (product-token equality,
percent-encoding normalisation, longest match) while keeping its own fetching
behaviour; :class:`scrapy_rep9309.RobotsTxtMiddleware` replaces both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.robotstxt import RobotParser as ScrapyRobotParser

from scrapy_rep9309.rules.robotstxt import RobotsTxt

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    # typing.Self requires Python 3.11
    from typing_extensions import Self


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class RobotParser(ScrapyRobotParser):
    """Scrapy's robots.txt parser interface, backed by :class:`~scrapy_rep9309.RobotsTxt`."""

    def __init__(self, robotstxt_body: bytes | str | RobotsTxt) -> None:
        # Already-parsed rules are wrapped as they are: the middleware's robots_parsed
        # signal hands out the rules it decides with, without parsing the body again.
        if isinstance(robotstxt_body, RobotsTxt):
            self.rules = robotstxt_body
        else:
            self.rules = RobotsTxt.parse(robotstxt_body)

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> Self:
        return cls(robotstxt_body)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return self.rules.allowed(_text(url), _text(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.rules.crawl_delay(_text(user_agent))

    def sitemaps(self) -> list[str]:
        """The ``Sitemap:`` URLs of the file, in file order, as written (maybe relative).

        Scrapy's ``RobotParser.sitemaps()`` (``SitemapSpider`` reads them from the
        ``robots_parsed`` signal instead of downloading robots.txt a second time);
        defined here whatever the installed Scrapy, so either finds them.
        """
        return self.rules.sitemaps
