"""Scriptable local HTTP(S) origins for end-to-end crawls.

Each origin is a real ``twisted.web`` server listening on its own loopback
address (Linux routes all of 127/8 to loopback), so Scrapy gives every origin
its own download slot, exactly as distinct hosts on the internet would get.
A route (``/robots.txt`` above all) answers from a script: a list of
``Reply`` consumed one per fetch, the last one repeating. Every request is
logged with its time and User-Agent so tests can assert "fetched once",
"refetched" or "never crawled". Any path without a script is an HTML page.
"""

from __future__ import annotations

import datetime
import itertools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal
from urllib.parse import urlsplit

from twisted.internet import ssl
from twisted.internet.base import DelayedCall
from twisted.internet.defer import Deferred, DeferredList, maybeDeferred
from twisted.internet.interfaces import IListeningPort, IReactorCore
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request, Site

Action = Literal["respond", "reset", "hang"]


def _reactor() -> Any:
    """The running reactor, imported late: pytest-twisted installs asyncio's first."""
    from twisted.internet import reactor

    assert IReactorCore.providedBy(reactor)
    return reactor


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``action`` "reset" aborts the TCP connection (RST) after ``delay``;
    "hang" never answers. ``chunk_size`` streams the body in pieces every
    ``chunk_interval`` seconds, so a client that stops reading early is seen
    by the server (bytes sent < body length) instead of being hidden by
    socket buffers.
    """

    status: int = 200
    body: bytes | str = b""
    #: A tuple value sends one header line per item.
    headers: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    delay: float = 0.0
    action: Action = "respond"
    chunk_size: int | None = None
    chunk_interval: float = 0.0

    @property
    def payload(self) -> bytes:
        return self.body.encode() if isinstance(self.body, str) else self.body


def rules(text: bytes | str, *, status: int = 200, **kwargs: Any) -> Reply:
    """A robots.txt answer (text/plain) with the given body."""
    headers = {"Content-Type": "text/plain", **kwargs.pop("headers", {})}
    return Reply(status=status, body=text, headers=headers, **kwargs)


def redirect(location: str, status: int = 301) -> Reply:
    return Reply(status=status, headers={"Location": location})


def reset(delay: float = 0.0) -> Reply:
    return Reply(action="reset", delay=delay)


def hang() -> Reply:
    return Reply(action="hang")


@dataclass
class LoggedRequest:
    """What an origin saw: updated while a streamed body is being sent."""

    uri: str
    path: str
    method: str
    user_agent: str | None
    headers: dict[str, str]
    received: float
    answered: float | None = None
    bytes_sent: int = 0
    body_length: int = 0
    connection_lost: bool = False


class _Script:
    """Replies for one path, consumed in order, the last one repeating."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        if not replies:
            raise ValueError("a script needs at least one Reply")
        self._replies = list(replies)
        self._served = 0

    def next_reply(self) -> Reply:
        reply = self._replies[min(self._served, len(self._replies) - 1)]
        self._served += 1
        return reply


def page_html(path: str) -> bytes:
    """A small page linking to the next one, so link-following spiders work."""
    head, _, tail = path.rpartition("/")
    next_link = f"{head}/{int(tail) + 1}" if tail.isdigit() else "/page/1"
    return (
        f"<html><head><title>{path}</title></head>"
        f'<body><p>{path}</p><a href="{next_link}">next</a></body></html>'
    ).encode()


class _OriginResource(Resource):
    """Answers every path of one origin (absolute URIs too, for proxying)."""

    isLeaf = True

    def __init__(self, origin: ScriptedOrigin) -> None:
        super().__init__()
        self._origin = origin

    def render(self, request: Request) -> bytes | int:
        uri = request.uri.decode("latin-1")
        path = urlsplit(uri).path or "/"
        user_agent = request.getHeader("User-Agent")
        entry = LoggedRequest(
            uri=uri,
            path=path,
            method=request.method.decode("ascii"),
            user_agent=user_agent,
            headers={
                name.decode("latin-1"): b", ".join(values).decode("latin-1")
                for name, values in request.requestHeaders.getAllRawHeaders()
            },
            received=time.monotonic(),
        )
        self._origin.log.append(entry)
        script = self._origin.routes.get(path)
        reply = script.next_reply() if script else self._origin.page_reply(path)
        return _Responder(self._origin, request, reply, entry).start()


class _Responder:
    """Plays one Reply on one request, honouring delays and streaming."""

    def __init__(
        self, origin: ScriptedOrigin, request: Request, reply: Reply, entry: LoggedRequest
    ) -> None:
        self._origin = origin
        self._request = request
        self._reply = reply
        self._entry = entry
        self._pending: DelayedCall | None = None
        self._lost = False
        self._offset = 0

    def start(self) -> int:
        self._origin.open_requests.add(self._request)
        self._request.notifyFinish().addBoth(self._finished)
        if self._reply.action == "hang":
            return NOT_DONE_YET
        self._pending = _reactor().callLater(self._reply.delay, self._act)
        return NOT_DONE_YET

    def _finished(self, result: Failure | None) -> None:
        self._origin.open_requests.discard(self._request)
        if isinstance(result, Failure):
            self._lost = True
            self._entry.connection_lost = True
            if self._pending is not None and self._pending.active():
                self._pending.cancel()

    def _act(self) -> None:
        self._pending = None
        if self._lost:
            return
        if self._reply.action == "reset":
            self._entry.answered = time.monotonic()
            self._request.transport.abortConnection()
            return
        payload = self._reply.payload
        self._entry.body_length = len(payload)
        self._request.setResponseCode(self._reply.status)
        for name, value in self._reply.headers.items():
            if isinstance(value, tuple):  # one header line per value
                self._request.responseHeaders.setRawHeaders(name, list(value))
            else:
                self._request.setHeader(name, value)
        self._request.setHeader("Content-Length", str(len(payload)))
        self._entry.answered = time.monotonic()
        self._write_next_chunk()

    def _write_next_chunk(self) -> None:
        self._pending = None
        if self._lost:
            return
        payload = self._reply.payload
        size = self._reply.chunk_size or len(payload) or 1
        chunk = payload[self._offset : self._offset + size]
        if chunk:
            self._request.write(chunk)
            self._offset += len(chunk)
            self._entry.bytes_sent = self._offset
        if self._offset >= len(payload):
            self._request.finish()
            return
        self._pending = _reactor().callLater(self._reply.chunk_interval, self._write_next_chunk)


class ScriptedOrigin:
    """One listening origin: its scripts, its request log, its URLs."""

    def __init__(
        self,
        scheme: str,
        host: str,
        routes: Mapping[str, Sequence[Reply]],
        page_delay: float = 0.0,
    ) -> None:
        self.scheme = scheme
        self.host = host
        self.port = 0
        self.routes: dict[str, _Script] = {path: _Script(r) for path, r in routes.items()}
        self.page_delay = page_delay
        self.log: list[LoggedRequest] = []
        self.open_requests: set[Request] = set()
        self.listening: IListeningPort | None = None

    @property
    def base(self) -> str:
        """``scheme://host:port`` as a crawler would write it."""
        return f"{self.scheme}://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def urls(self, paths: Iterable[str]) -> list[str]:
        return [self.url(path) for path in paths]

    def script(self, path: str, replies: Sequence[Reply]) -> None:
        """(Re)script ``path``: for origins that must know each other's URLs."""
        self.routes[path] = _Script(replies)

    def page_reply(self, path: str) -> Reply:
        return Reply(
            body=page_html(path), headers={"Content-Type": "text/html"}, delay=self.page_delay
        )

    def requests_for(self, path: str) -> list[LoggedRequest]:
        return [entry for entry in self.log if entry.path == path]

    @property
    def robots_fetches(self) -> list[LoggedRequest]:
        return self.requests_for("/robots.txt")

    @property
    def page_requests(self) -> list[LoggedRequest]:
        """Everything but scripted routes: what a crawler downloaded as content."""
        return [entry for entry in self.log if entry.path not in self.routes]

    def crawled_paths(self) -> set[str]:
        return {entry.path for entry in self.page_requests}

    def __repr__(self) -> str:
        return f"<ScriptedOrigin {self.base}>"


@cache
def _self_signed_tls() -> ssl.CertificateOptions:
    """A throwaway certificate: Scrapy's default TLS client does not verify it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scrapy-rep9309 test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return ssl.CertificateOptions(privateKey=key, certificate=certificate)


class _RawAnswer(Protocol):
    """Answers ``/robots.txt`` (and any other path given bytes) with its origin's bytes
    as they are, other paths with a small page; closes the connection after each answer."""

    def __init__(self, origin: RawOrigin) -> None:
        self.origin = origin
        self.received = b""

    def dataReceived(self, data: bytes) -> None:
        self.received += data
        head, blank_line, _ = self.received.partition(b"\r\n\r\n")
        if not blank_line:
            return
        path = head.split(b" ")[1].decode("latin-1")
        self.origin.paths.append(path)
        if path in self.origin.answers:
            self.transport.write(self.origin.answers[path])
        else:
            page = b"<html>page</html>"
            self.transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(page), page)
            )
        self.transport.loseConnection()


@dataclass
class RawOrigin:
    """An origin whose ``/robots.txt`` answer is raw bytes (status line, headers, body
    exactly as given): for answers a web framework would not send."""

    host: str
    #: Raw answers by path, ``/robots.txt`` among them.
    answers: dict[str, bytes]
    paths: list[str] = field(default_factory=list)
    listening: IListeningPort | None = None
    port: int = 0

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def urls(self, paths: Iterable[str]) -> list[str]:
        return [self.url(path) for path in paths]


def loopback_addresses() -> Iterator[str]:
    """127.0.0.2, 127.0.0.3, ... (127.0.0.1 is left for other local services)."""
    for third, fourth in itertools.product(range(256), range(2, 255)):
        yield f"127.0.{third}.{fourth}"


class ServerPool:
    """Starts origins on the running reactor and tears all of them down."""

    def __init__(self) -> None:
        self.origins: list[ScriptedOrigin] = []
        self.raw_origins: list[RawOrigin] = []
        self._addresses = loopback_addresses()

    def add_raw(self, robots: bytes, others: Mapping[str, bytes] | None = None) -> RawOrigin:
        """An origin answering ``/robots.txt`` with ``robots``, and the paths of
        ``others`` with theirs, bytes as they are."""
        origin = RawOrigin(next(self._addresses), {"/robots.txt": robots, **(others or {})})
        factory = Factory.forProtocol(lambda: _RawAnswer(origin))
        origin.listening = _reactor().listenTCP(0, factory, interface=origin.host)
        origin.port = origin.listening.getHost().port
        self.raw_origins.append(origin)
        return origin

    def add(
        self,
        robots: Sequence[Reply] | Reply | None = None,
        *,
        routes: Mapping[str, Sequence[Reply]] | None = None,
        host: str | None = None,
        port: int = 0,
        tls: bool = False,
        page_delay: float = 0.0,
    ) -> ScriptedOrigin:
        """Listen on a fresh loopback address (or ``host``), any free port.

        ``robots`` scripts ``/robots.txt``; no robots script means a 404
        robots.txt (allow everything), like most small sites.
        """
        all_routes: dict[str, Sequence[Reply]] = dict(routes or {})
        if isinstance(robots, Reply):
            robots = [robots]
        all_routes.setdefault("/robots.txt", robots or [Reply(status=404, body=b"not found")])
        origin = ScriptedOrigin(
            "https" if tls else "http",
            host or next(self._addresses),
            all_routes,
            page_delay,
        )
        site = Site(_OriginResource(origin))
        site.displayTracebacks = False
        site.noisy = False
        if tls:
            listening = _reactor().listenSSL(port, site, _self_signed_tls(), interface=origin.host)
        else:
            listening = _reactor().listenTCP(port, site, interface=origin.host)
        origin.listening = listening
        origin.port = listening.getHost().port
        self.origins.append(origin)
        return origin

    def close(self) -> Deferred[Any]:
        """Stop listening and abort any request left hanging by a script.

        Fires once every port is closed, so the next test can listen again on
        the same fixed port (80, 443).
        """
        stopped = [
            maybeDeferred(origin.listening.stopListening)
            for origin in self.raw_origins
            if origin.listening is not None
        ]
        for origin in self.origins:
            if origin.listening is not None:
                stopped.append(maybeDeferred(origin.listening.stopListening))
            for request in list(origin.open_requests):
                request.transport.abortConnection()
            origin.open_requests.clear()
        return DeferredList(stopped)


def closed_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` where nothing listens: connections are refused."""
    import socket

    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
