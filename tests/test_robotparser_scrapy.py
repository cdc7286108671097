"""``scrapy_rep9309.RobotParser``: Scrapy's parser interface, alone and behind Scrapy's middleware.

The end-to-end test runs a real crawl (real engine, downloader and the built-in
``RobotsTxtMiddleware`` with ``ROBOTSTXT_PARSER = "scrapy_rep9309.RobotParser"``)
against a twisted.web server on 127.0.0.1 started by the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.robotstxt import RobotParser as ScrapyRobotParser
from twisted.internet.interfaces import IListeningPort
from twisted.python.failure import Failure
from twisted.web.resource import Resource
from twisted.web.server import Request as WebRequest
from twisted.web.server import Site

from scrapy_rep9309 import RobotParser, RobotsTxt

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

UA_HEADER = "MyBot/1.0 (+https://mybot.example.org)"

ROBOTS_TXT = b"""\
# "org" is a substring of our User-Agent header, but not our product token.
User-agent: org
Disallow: /

User-agent: mybot
Crawl-delay: 0.25
Disallow: /private
Allow: /private/open
Disallow: /*.pdf$

User-agent: *
Disallow: /
"""


def test_is_a_scrapy_robot_parser() -> None:
    parser = RobotParser.from_crawler(None, ROBOTS_TXT)  # type: ignore[arg-type]
    assert isinstance(parser, ScrapyRobotParser)


@pytest.mark.parametrize(
    ("url", "user_agent", "expected"),
    [
        ("https://example.org/page", UA_HEADER, True),
        ("https://example.org/private/x", UA_HEADER, False),
        ("https://example.org/private/open/x", UA_HEADER, True),
        ("https://example.org/file.pdf", UA_HEADER, False),
        ("https://example.org/file.pdf?download=1", UA_HEADER, True),
        (b"https://example.org/private/x", UA_HEADER.encode(), False),
        (b"https://example.org/page", b"OtherBot/2.0", False),
        ("https://example.org/robots.txt", "OtherBot/2.0", True),
    ],
)
def test_allowed_accepts_str_and_bytes(url: str | bytes, user_agent: str | bytes, expected: bool):
    parser = RobotParser.from_crawler(None, ROBOTS_TXT)  # type: ignore[arg-type]
    assert parser.allowed(url, user_agent) is expected


def test_crawl_delay_comes_from_the_group_that_applies() -> None:
    parser = RobotParser.from_crawler(None, ROBOTS_TXT)  # type: ignore[arg-type]
    assert parser.crawl_delay(UA_HEADER) == 0.25
    assert parser.crawl_delay(UA_HEADER.encode()) == 0.25
    assert parser.crawl_delay("OtherBot") is None


def test_wraps_rules_already_parsed_without_parsing_again() -> None:
    # What the middleware's robots_parsed signal hands out: the rules it decides with.
    rules = RobotsTxt.parse(ROBOTS_TXT)
    parser = RobotParser(rules)
    assert parser.rules is rules
    assert parser.allowed("https://example.org/private/x", UA_HEADER) is False
    assert parser.crawl_delay(UA_HEADER) == 0.25


def test_an_empty_body_allows_everything() -> None:
    # Scrapy's middleware builds one parser from b"" at start-up to check dependencies.
    parser = RobotParser.from_crawler(None, b"")  # type: ignore[arg-type]
    assert parser.allowed("https://example.org/anything", UA_HEADER) is True
    assert parser.crawl_delay(UA_HEADER) is None


class _Site(Resource):
    """``/robots.txt`` answers ROBOTS_TXT; every other path a small HTML page."""

    isLeaf = True

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def render_GET(self, request: WebRequest) -> bytes:
        path = request.uri.decode()
        self.paths.append(path)
        if path == "/robots.txt":
            request.setHeader(b"Content-Type", b"text/plain")
            return ROBOTS_TXT
        request.setHeader(b"Content-Type", b"text/html")
        return b"<html><body>ok</body></html>"


@pytest.fixture
def site() -> Iterator[tuple[_Site, str]]:
    from twisted.internet import reactor

    resource = _Site()
    port: IListeningPort = reactor.listenTCP(0, Site(resource), interface="127.0.0.1")  # type: ignore[attr-defined]
    try:
        yield resource, f"http://127.0.0.1:{port.getHost().port}"
    finally:
        port.stopListening()


class _RecordingSpider(Spider):
    name = "robotparser-e2e"
    paths: tuple[str, ...] = ()
    base = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fetched: list[str] = []
        self.forbidden: list[str] = []

    async def start(self) -> Any:
        # One request first, the others once robots.txt is parsed: in Scrapy 2.19 the
        # built-in middleware hands the parser only to the first request waiting for
        # it (the Deferred's result becomes None for the next ones, which then pass
        # unchecked), and this test is about the parser, not about that race.
        yield self._request(self.paths[0])

    def _request(self, path: str) -> Request:
        return Request(self.base + path, callback=self.parse, errback=self.failed)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Request]:
        self.fetched.append(response.url.removeprefix(self.base))
        if len(self.fetched) == 1:
            yield from map(self._request, self.paths[1:])

    def failed(self, failure: Failure) -> None:
        if failure.check(IgnoreRequest):
            self.forbidden.append(failure.request.url.removeprefix(self.base))  # type: ignore[attr-defined]


@pytest_twisted.inlineCallbacks
def test_scrapy_builtin_middleware_with_this_parser(site: tuple[_Site, str]) -> Iterator[Any]:
    resource, base = site
    paths = ("/page", "/private/x", "/private/open/x", "/doc.pdf", "/doc.pdf?v=2")
    settings = {
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_PARSER": "scrapy_rep9309.RobotParser",
        "USER_AGENT": UA_HEADER,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "DOWNLOAD_TIMEOUT": 5,
        "CLOSESPIDER_TIMEOUT": 20,
    }
    crawler = Crawler(_RecordingSpider, settings)
    parsers: list[Any] = []

    def robots_parsed(robotparser: Any, request: Request) -> None:
        parsers.append(robotparser)

    # The robots_parsed signal exists since Scrapy 2.18.
    has_signal = hasattr(signals, "robots_parsed")
    if has_signal:
        crawler.signals.connect(robots_parsed, signal=signals.robots_parsed)
    yield crawler.crawl(paths=paths, base=base)
    spider = crawler.spider
    assert isinstance(spider, _RecordingSpider)

    # "User-agent: org" did not capture us, and "mybot" rules applied, longest match first.
    assert sorted(spider.fetched) == ["/doc.pdf?v=2", "/page", "/private/open/x"]
    assert sorted(spider.forbidden) == ["/doc.pdf", "/private/x"]
    assert crawler.stats.get_value("robotstxt/forbidden") == 2
    assert resource.paths.count("/robots.txt") == 1
    assert "/private/x" not in resource.paths
    if has_signal:
        assert len(parsers) == 1 and isinstance(parsers[0], RobotParser)
        assert parsers[0].crawl_delay(UA_HEADER) == 0.25
