"""``python -m scrapy_rep9309 check ROBOTS URL...``: why is a URL allowed or not?

Works without a Scrapy project: ROBOTS is a local file or an http(s) URL
(fetched with urllib, with the middleware's status, redirect and size rules).
Exit status: 0 all downloaded by a crawl, 1 any disallowed (or refused by a required
usage label), 2 bad input (one-line error).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn
from urllib.parse import SplitResult, urlsplit

from scrapy_rep9309.policy.fetchresult import DEFAULT_MAX_SIZE
from scrapy_rep9309.policy.origin import Origin
from scrapy_rep9309.policy.record import AVAILABLE
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.rules.usage import vocabulary_labels
from scrapy_rep9309.tools.explain import (
    Verdict,
    as_sent,
    describe_fetch,
    describe_file,
    describe_licenses,
    describe_user_agent,
    exit_status,
    judge,
)
from scrapy_rep9309.tools.urlfetch import fetch_robots

#: The product token of Scrapy's default USER_AGENT ("Scrapy/VERSION (+https://scrapy.org)").
DEFAULT_USER_AGENT = "Scrapy"
EXIT_BAD_INPUT = 2
HTTP_SCHEMES = ("http", "https")


class BadInput(Exception):
    """Input the tool cannot work with; reported in one line, exit status 2."""


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but errors are one line (no usage block) and exit with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="python -m scrapy_rep9309",
        description="Explain robots.txt decisions the way scrapy-rep9309 makes them.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    check = commands.add_parser(
        "check",
        help="say whether URLs are allowed by a robots.txt, and which rule decided",
        description=(
            "Print, for each URL, allowed or disallowed, the deciding rule and its line, "
            "the group that applied and the URL's usage preferences (Content-Usage and "
            "Content-Signal), if any. Exit status: 0 when all are allowed, 1 when any is "
            "disallowed, 2 on bad input."
        ),
    )
    check.add_argument(
        "robots",
        metavar="ROBOTS",
        help="a robots.txt file, or an http(s) URL to fetch it from "
        "(2xx: rules; 4xx: allow all; 429, 5xx, network errors: disallow all)",
    )
    check.add_argument(
        "urls",
        metavar="URL",
        nargs="+",
        help="absolute http(s) URL, or a path like /a/b?q=1",
    )
    check.add_argument(
        "--user-agent",
        default=DEFAULT_USER_AGENT,
        metavar="UA",
        help="product token or full User-Agent header to decide for "
        f"(default: {DEFAULT_USER_AGENT!r}, the token of Scrapy's default USER_AGENT)",
    )
    check.add_argument(
        "--extra-user-agent",
        action="append",
        default=[],
        metavar="UA",
        dest="extra_user_agents",
        help="another user agent whose group must allow the URL too, such as a purpose "
        "token (Google-Extended), as REP9309_EXTRA_USER_AGENTS does; repeatable",
    )
    check.add_argument(
        "--require-usage",
        action="append",
        default=[],
        metavar="LABEL",
        dest="require_usage",
        help="a usage label (train-ai, search) the crawl needs: a URL whose preferences "
        "refuse it is reported as not downloaded (exit status 1), as REP9309_REQUIRE_USAGE "
        "does; repeatable",
    )
    check.add_argument(
        "--max-size",
        type=int,
        default=DEFAULT_MAX_SIZE,
        metavar="BYTES",
        help=f"octets of robots.txt read and parsed, as REP9309_MAX_SIZE (default and "
        f"least: {DEFAULT_MAX_SIZE}, RFC 9309's 500 KiB)",
    )
    check.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="network timeout when ROBOTS is a URL (default: 30)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run_check(
            args.robots,
            args.urls,
            args.user_agent,
            args.timeout,
            args.extra_user_agents,
            required=args.require_usage,
            max_size=args.max_size,
        )
    except BadInput as exc:
        print(f"python -m scrapy_rep9309 check: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def run_check(
    robots: str,
    urls: list[str],
    user_agent: str,
    timeout: float,
    extra_user_agents: Sequence[str] = (),
    *,
    required: Sequence[str] = (),
    max_size: int = DEFAULT_MAX_SIZE,
) -> int:
    """Print the report for ``urls`` and return the exit status."""
    urls = [as_sent(url) for url in urls]  # the origin and the verdict of what is sent
    remote = _split(robots, "robots.txt URL").scheme in HTTP_SCHEMES
    if remote and Origin.from_url(robots) is None:
        raise BadInput(f"not a valid robots.txt URL: {robots!r}")
    for url in urls:
        _check_url(url, robots if remote else None)
    if not user_agent.strip():
        raise BadInput("--user-agent must not be empty")
    if not all(extra.strip() for extra in extra_user_agents):
        raise BadInput("--extra-user-agent must not be empty")
    if not (math.isfinite(timeout) and timeout > 0):  # nan, inf: no timeout a socket takes
        raise BadInput("--timeout must be a finite number greater than 0")
    try:
        required = vocabulary_labels(required)
    except ValueError as exc:
        raise BadInput(f"--require-usage: {exc}") from None
    if max_size < DEFAULT_MAX_SIZE:
        raise BadInput(f"--max-size must be at least {DEFAULT_MAX_SIZE} (RFC 9309's 500 KiB)")
    if remote:
        result = fetch_robots(
            robots, user_agent=user_agent, timeout=timeout, max_size=max_size, progress=_progress
        )
        header = describe_fetch(robots, result)
        outcome, body = result.outcome, result.body
    else:
        body = _read_file(robots)
        header = describe_file(robots, len(body), len(body) > max_size)
        outcome = AVAILABLE
    rules = RobotsTxt.parse(body, max_size) if outcome == AVAILABLE else None
    verdicts: list[Verdict] = [
        judge(url, user_agent, outcome, rules, extra_user_agents, required, "--require-usage")
        for url in urls
    ]
    print("\n".join([*header, *describe_licenses(rules)]))
    print(describe_user_agent(user_agent, rules, extra_user_agents))
    for verdict in verdicts:
        print()
        print("\n".join(verdict.lines()))
    return exit_status(verdicts)


def _check_url(url: str, robots_url: str | None) -> None:
    """Reject what is neither an http(s) URL nor a path; warn about another origin's URL."""
    parts = _split(url, "http(s) URL")
    if parts.scheme in HTTP_SCHEMES:
        origin = Origin.from_url(url)
        if origin is None:
            raise BadInput(f"not a valid http(s) URL: {url!r}")
        if robots_url is not None and origin != Origin.from_url(robots_url):
            _progress(f"note: {url} is not on the origin of {robots_url}; its rules do not apply")
        return
    if not parts.scheme and not parts.netloc and url.startswith("/"):
        return
    raise BadInput(f"not an http(s) URL or a path starting with '/': {url!r}")


def _split(value: str, what: str) -> SplitResult:
    """``urlsplit``, with what it cannot split (``http://[::1``) reported as bad input."""
    try:
        return urlsplit(value)
    except ValueError as exc:
        raise BadInput(f"not a valid {what}: {value!r} ({exc})") from None


def _read_file(path: str) -> bytes:
    if "://" in path:
        raise BadInput(f"ROBOTS must be a file or an http(s) URL, not {path!r}")
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
