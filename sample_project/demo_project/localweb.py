"""The demo's offline web: small sites on 127.0.0.1, one per robots.txt situation.

Each site listens on its own free port, so each is its own origin (RFC 9309 keys
robots.txt by scheme, host and port). Every site records what it served, so the
demo can show what the servers saw and not only what the crawler believed.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from twisted.internet.defer import Deferred, DeferredList, maybeDeferred
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site

if TYPE_CHECKING:
    from twisted.internet.interfaces import IDelayedCall, IListeningPort
    from twisted.web.server import Request


@dataclass(frozen=True)
class Reply:
    """What a site answers to one request."""

    status: int
    body: str
    location: str | None = None
    delay: float = 0.0


class RobotsBehaviour(Protocol):
    """How a site answers ``/robots.txt``."""

    def reply(self, web: DemoWeb) -> Reply: ...


@dataclass
class Rules:
    """A plain 200 robots.txt."""

    text: str

    def reply(self, web: DemoWeb) -> Reply:
        return Reply(200, self.text)


@dataclass
class ErrorPage:
    """An error status whose body happens to read like rules.

    RFC 9309 2.3.1.3: a 4xx means "no rules, crawl everything", whatever the
    body says. Scrapy's built-in middleware parses the body anyway.
    """

    status: int
    text: str

    def reply(self, web: DemoWeb) -> Reply:
        return Reply(self.status, self.text)


@dataclass
class FailsThenRecovers:
    """Answers ``status`` ``failures`` times (a server restarting), then the rules."""

    failures: int
    status: int
    text: str
    answered: int = 0

    def reply(self, web: DemoWeb) -> Reply:
        self.answered += 1
        if self.answered <= self.failures:
            return Reply(self.status, "<html><body>Service Unavailable</body></html>")
        return Reply(200, self.text)


@dataclass
class RedirectsTo:
    """A permanent redirect of robots.txt to another origin (a CDN, a new domain)."""

    site: str
    path: str

    def reply(self, web: DemoWeb) -> Reply:
        return Reply(301, "", location=web.url(self.site, self.path))


@dataclass
class Slow:
    """The rules, after ``delay`` seconds (an overloaded server)."""

    delay: float
    text: str

    def reply(self, web: DemoWeb) -> Reply:
        return Reply(200, self.text, delay=self.delay)


@dataclass(frozen=True)
class Served:
    """One request a site answered: its path and status."""

    path: str
    status: int


@dataclass
class DemoSite:
    """One origin of the demo web.

    ``pages`` maps a path (with query) to its links; a link is ``/path`` on the
    same site or ``name:/path`` on another site. ``files`` are served as text.
    """

    name: str
    about: str
    robots: RobotsBehaviour
    pages: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    served: list[Served] = field(default_factory=list)
    port: int = 0

    def log_summary(self) -> str:
        """What this site served, in order: text files one by one, pages counted."""
        parts: list[str] = []
        pages = 0
        for entry in self.served:
            if entry.path in self.pages:
                pages += 1
                continue
            if pages:
                parts.append(f"{pages} page{'s' * (pages != 1)}")
                pages = 0
            parts.append(f"{entry.path} {entry.status}")
        if pages:
            parts.append(f"{pages} page{'s' * (pages != 1)}")
        return " -> ".join(_collapse_repeats(parts)) or "nothing"


def _collapse_repeats(parts: list[str]) -> list[str]:
    """``["a", "a", "a", "b"]`` -> ``["a x3", "b"]``."""
    collapsed: list[str] = []
    count = 0
    for index, part in enumerate(parts):
        count += 1
        if index + 1 < len(parts) and parts[index + 1] == part:
            continue
        collapsed.append(f"{part} x{count}" if count > 1 else part)
        count = 0
    return collapsed


class _SiteResource(Resource):
    """Serves one ``DemoSite``: robots.txt, text files, HTML pages, else 404."""

    isLeaf = True

    def __init__(self, site: DemoSite, web: DemoWeb) -> None:
        super().__init__()
        self.site = site
        self.web = web

    def render_GET(self, request: Request) -> bytes | int:
        path = request.uri.decode("latin-1")
        reply = self._reply_for(path)
        self.site.served.append(Served(path, reply.status))
        request.setResponseCode(reply.status)
        if reply.location:
            request.setHeader(b"Location", reply.location.encode("ascii"))
        content_type = b"text/html" if path in self.site.pages else b"text/plain"
        request.setHeader(b"Content-Type", content_type + b"; charset=utf-8")
        body = reply.body.encode("utf-8")
        if not reply.delay:
            return body
        self._finish_later(request, body, reply.delay)
        return NOT_DONE_YET

    def _reply_for(self, path: str) -> Reply:
        if path == "/robots.txt":
            return self.site.robots.reply(self.web)
        if path in self.site.files:
            return Reply(200, self.site.files[path])
        if path in self.site.pages:
            return Reply(200, self._page(path))
        return Reply(404, "Not Found")

    def _page(self, path: str) -> str:
        links = "".join(
            f'<li><a href="{html.escape(self.web.resolve(self.site.name, link))}">'
            f"{html.escape(link)}</a></li>"
            for link in self.site.pages[path]
        )
        title = html.escape(f"{self.site.name} {path}")
        return f"<html><head><title>{title}</title></head><body><ul>{links}</ul></body></html>"

    def _finish_later(self, request: Request, body: bytes, delay: float) -> None:
        from twisted.internet import reactor

        def finish() -> None:
            request.write(body)
            request.finish()

        call: IDelayedCall = reactor.callLater(delay, finish)  # type: ignore[attr-defined]
        request.notifyFinish().addErrback(lambda _failure: call.active() and call.cancel())


class _QuietSite(Site):
    """A twisted.web Site without access-log lines (the demo prints its own summary)."""

    def log(self, request: Request) -> None:
        return None


class DemoWeb:
    """The running demo sites, each on a free port of 127.0.0.1."""

    host = "127.0.0.1"

    def __init__(self, sites: list[DemoSite], port_base: int = 0) -> None:
        self.sites = {site.name: site for site in sites}
        #: 0: any free port per site; else consecutive ports from here, so that a paused
        #: crawl (JOBDIR) finds the same origins when it resumes.
        self.port_base = port_base
        self._ports: list[IListeningPort] = []

    def start(self) -> None:
        """Listen on one port per site (call with the reactor installed)."""
        from twisted.internet import reactor

        for number, site in enumerate(self.sites.values()):
            port = reactor.listenTCP(  # type: ignore[attr-defined]
                self.port_base + number if self.port_base else 0,
                _QuietSite(_SiteResource(site, self)),
                interface=self.host,
            )
            site.port = port.getHost().port
            self._ports.append(port)

    def stop(self) -> Deferred[object]:
        """Stop listening; fires when every port is closed."""
        ports, self._ports = self._ports, []
        return DeferredList([maybeDeferred(port.stopListening) for port in ports])

    def origin(self, name: str) -> str:
        return f"http://{self.host}:{self.sites[name].port}"

    def url(self, name: str, path: str = "/") -> str:
        return self.origin(name) + path

    def resolve(self, current: str, link: str) -> str:
        """Absolute URL of a link written ``/path`` or ``site:/path``."""
        if link.startswith("/"):
            return self.url(current, link)
        name, _, path = link.partition(":")
        return self.url(name, path)

    def site_of(self, url: str) -> DemoSite | None:
        """The site serving ``url``, if any."""
        for name, site in self.sites.items():
            origin = self.origin(name)
            if url == origin or url.startswith(origin + "/"):
                return site
        return None


SHOP_RULES = """\
# The shop keeps orders and search results out of crawlers' reach.
User-agent: *
Disallow: /private/
Disallow: /search
Allow: /private/help
"""

NEWS_RULES = """\
User-agent: *
Disallow: /drafts/
"""

DOCS_RULES = """\
# Served from the CDN for docs: robots.txt redirects here.
User-agent: *
Disallow: /internal/
"""

OUTLET_RULES = """\
User-agent: *
Disallow: /cart
"""

BLOG_ERROR_PAGE = """\
404 Not Found

This blog has no robots.txt. Its error page quotes an example one:

User-agent: *
Disallow: /
"""


def build_demo_web(
    *, flaky_failures: int = 3, slow_delay: float = 3.0, port_base: int = 0
) -> DemoWeb:
    """The demo's sites; ``shop:/`` links to all the others."""
    return DemoWeb(
        [
            DemoSite(
                name="shop",
                about="robots.txt with rules: some pages disallowed",
                robots=Rules(SHOP_RULES),
                pages={
                    "/": [
                        "/products/1",
                        "/products/2",
                        "/private/orders",
                        "/private/help",
                        "/search?q=shoes",
                        "blog:/",
                        "news:/",
                        "news:/world",
                        "news:/drafts/budget",
                        "docs:/",
                        "outlet:/",
                    ],
                    "/products/1": ["/", "/products/2", "/private/orders"],
                    "/products/2": ["/", "/search?q=boots"],
                    "/private/help": ["/"],
                    "/private/orders": ["/"],
                    "/search?q=shoes": ["/products/1"],
                    "/search?q=boots": ["/products/2"],
                },
            ),
            DemoSite(
                name="blog",
                about="robots.txt answers 404 (its body reads 'Disallow: /')",
                robots=ErrorPage(404, BLOG_ERROR_PAGE),
                pages={
                    "/": ["/posts/1", "/posts/2", "/about"],
                    "/posts/1": ["/", "/posts/2"],
                    "/posts/2": ["/"],
                    "/about": ["/"],
                },
            ),
            DemoSite(
                name="news",
                about=f"robots.txt answers 503 {flaky_failures} times, then rules",
                robots=FailsThenRecovers(flaky_failures, 503, NEWS_RULES),
                pages={
                    "/": ["/world", "/sport", "/drafts/budget"],
                    "/world": ["/", "/drafts/election"],
                    "/sport": ["/"],
                    "/drafts/budget": ["/"],
                    "/drafts/election": ["/"],
                },
            ),
            DemoSite(
                name="docs",
                about="robots.txt redirects (301) to the cdn origin",
                robots=RedirectsTo("cdn", "/robots/docs.txt"),
                pages={
                    "/": ["/guide", "/api", "/internal/roadmap"],
                    "/guide": ["/", "/api"],
                    "/api": ["/"],
                    "/internal/roadmap": ["/"],
                },
            ),
            DemoSite(
                name="outlet",
                about=f"robots.txt takes {slow_delay:g} s to answer",
                robots=Slow(slow_delay, OUTLET_RULES),
                pages={
                    "/": ["/item/1", "/item/2", "/cart"],
                    "/item/1": ["/", "/cart"],
                    "/item/2": ["/"],
                    "/cart": ["/"],
                },
            ),
            DemoSite(
                name="cdn",
                about="hosts the docs site's robots.txt (never crawled itself)",
                robots=ErrorPage(404, "Not Found"),
                files={"/robots/docs.txt": DOCS_RULES},
            ),
        ],
        port_base,
    )
