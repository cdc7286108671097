"""Parsed robots.txt rules and decisions: the public API of the package.

Parsing is lazy, because most files are asked about by one crawler and most of their
lines are other crawlers' groups, comments or HTML. ``RobotsTxt.parse`` only finds the
user-agent lines (a C-speed search for ``agent``, each hit checked by the tokenizer's
own rule) and from them the groups, as byte ranges. The first decision for a crawler
tokenizes just the groups that apply to it, and :mod:`scrapy_rep9309.matcher` compiles
just the rules the URL needs. Everything is cached per crawler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scrapy_rep9309.matcher import RuleSet
from scrapy_rep9309.parser import (
    MAX_LINE_OCTETS,
    MIN_MAX_SIZE,
    classify,
    line_number_at,
    prepare,
    split_lines,
    tokenize_lines,
)
from scrapy_rep9309.urlnorm import clean_http_url, normalised_path, utf8_octets
from scrapy_rep9309.useragent import crawler_token, is_product_token

_ROBOTS_TXT_PATH = "/robots.txt"
_MAX_CACHED_USER_AGENTS = 64


@dataclass(frozen=True, slots=True)
class Decision:
    """Why a URL is allowed or not: the rule that decided and the group it belongs to."""

    allowed: bool
    #: The deciding rule as written, e.g. ``"Disallow: /private"``; ``None`` when no rule matched.
    rule: str | None = None
    #: 1-based line number of ``rule`` in the robots.txt.
    line: int | None = None
    #: The ``User-agent`` values of the group(s) that applied, as written; ``()`` if none.
    user_agents: tuple[str, ...] = ()


class _Group:
    """One group: its user-agent values and the bytes of its lines.

    A group runs from its first user-agent line to the next group's first one (or the
    end of the file): that range holds all its rules and crawl-delay lines.
    """

    __slots__ = ("agents", "end", "start")

    def __init__(self, start: int, first_agent: bytes) -> None:
        self.start = start
        self.end = -1
        self.agents = [first_agent]

    def names(self, token: bytes) -> bool:
        """Whether a user-agent line of this group names ``token``, a valid lower-case
        product token or ``*`` (RFC 9309 2.2.1; see :func:`~.useragent.group_token`).
        """
        size = len(token)
        if token == b"*":
            return any(
                agent[:1] == b"*" and (len(agent) == 1 or agent[1] in _WHITESPACE)
                for agent in self.agents
            )
        return any(
            agent[:size].lower() == token and (len(agent) == size or agent[size] not in _TOKEN)
            for agent in self.agents
        )


def _records_of_kind(lines: bytes, lowered: bytes, kind: str, needle: bytes) -> list[_Record]:
    """``(line start, line end, value)`` of every ``kind`` record of ``lines``, in order.

    Every such line contains ``needle`` (lower-case) within its first
    :data:`MAX_LINE_OCTETS` octets, so only lines where a C-speed search of
    ``lowered`` (``lines.lower()``) finds it are tokenized, by the rule
    :func:`~.parser.tokenize` uses.
    """
    has_cr = 13 in lines  # b"\r"
    records = []
    found = lowered.find(needle)
    while found >= 0:
        start = lowered.rfind(b"\n", 0, found) + 1
        end = lowered.find(b"\n", found)
        if end < 0:
            end = len(lowered)
        if has_cr:
            start = max(start, lowered.rfind(b"\r", start, found) + 1)
            carriage_return = lowered.find(b"\r", found, end)
            end = end if carriage_return < 0 else carriage_return
        record = classify(lines[start : min(end, start + MAX_LINE_OCTETS)])
        if record is not None and record[0] == kind:
            records.append((start, end, record[1]))
        found = lowered.find(needle, end)
    return records


def _has_rule(body: bytes, start: int, end: int) -> bool:
    """Whether a line of ``body[start:end]`` is an allow or disallow record (even empty).

    A rule usually follows its user-agent lines at once: look at the first few lines
    before splitting a whole group (thousands of lines) into a list.
    """
    glimpse_end = min(end, start + _GLIMPSE)
    lines = split_lines(body[start:glimpse_end])
    if glimpse_end < end:
        lines = lines[:-1]  # may be cut short
    if any(_is_rule(line) for line in lines):
        return True
    return glimpse_end < end and any(map(_is_rule, split_lines(body[start:end])))


def _is_rule(line: bytes) -> bool:
    record = classify(line) if line else None
    return record is not None and record[0] in _RULE_KINDS


_Record = tuple[int, int, bytes]
_RULE_KINDS = ("allow", "disallow")
_GLIMPSE = 1024
_WHITESPACE = frozenset(b" \t\n\v\f\r")
_TOKEN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")


def _find_groups(body: bytes, lowered: bytes) -> list[_Group]:
    """The groups of ``body`` (RFC 9309 2.1): consecutive user-agent lines start one, and a
    user-agent line after a rule starts the next. Rules before the first one belong to none.
    """
    groups: list[_Group] = []
    previous_end = 0
    for start, end, agent in _records_of_kind(body, lowered, "user_agent", b"agent"):
        if groups and not _has_rule(body, previous_end, start):
            groups[-1].agents.append(agent)
        else:
            if groups:
                groups[-1].end = start
            groups.append(_Group(start, agent))
        previous_end = end
    if groups:
        groups[-1].end = len(body)
    return groups


class _RuleCollector:
    """Tokenizer handler keeping the rules and crawl-delays of the groups that apply."""

    __slots__ = ("allow", "allows", "crawl_delay", "crawl_delays", "disallow", "disallows")
    unknown = None

    def __init__(self) -> None:
        self.allows: dict[int, bytes] = {}
        self.disallows: dict[int, bytes] = {}
        self.crawl_delays: dict[int, bytes] = {}
        # C-level methods (line number -> value): these run once per rule line.
        self.allow = self.allows.__setitem__
        self.disallow = self.disallows.__setitem__
        self.crawl_delay = self.crawl_delays.__setitem__

    def user_agent(self, line_no: int, value: bytes) -> None:
        """The group's own user-agent lines: already known."""

    def sitemap(self, line_no: int, value: bytes) -> None:
        """Sitemaps are read from the whole file by :attr:`RobotsTxt.sitemaps`."""


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class _Selection:
    """What applies to one crawler token: merged rules, group names and crawl-delay."""

    __slots__ = ("_crawl_delays", "_groups", "rules")

    def __init__(self, groups: list[_Group], body: bytes) -> None:
        self._groups = groups
        collector = _RuleCollector()
        for group in groups:
            lines = split_lines(body[group.start : group.end])
            tokenize_lines(lines, collector, line_number_at(body, group.start))
        self._crawl_delays = list(collector.crawl_delays.values())
        self.rules = RuleSet(collector.allows, collector.disallows)

    @property
    def user_agents(self) -> tuple[str, ...]:
        agents = (agent for group in self._groups for agent in group.agents)
        return tuple(dict.fromkeys(agent.decode("utf-8", "replace") for agent in agents))

    @property
    def crawl_delay(self) -> float | None:
        """The first valid ``Crawl-delay`` of the groups, in file order."""
        for value in self._crawl_delays:
            delay = _parse_delay(value)
            if delay is not None:
                return delay
        return None


class RobotsTxt:
    """The rules of one robots.txt file, as RFC 9309 reads them."""

    __slots__ = ("_body", "_by_token", "_groups", "_selections")

    def __init__(self, body: bytes) -> None:
        #: The octets read (size-limited, without byte order mark).
        self._body = body
        self._groups = _find_groups(body, body.lower())
        #: Lower-cased product token -> what applies to it; filled on demand.
        self._by_token: dict[str, _Selection | None] = {}
        #: The same, keyed by the user_agent string exactly as callers pass it.
        self._selections: dict[str, _Selection | None] = {}

    @classmethod
    def parse(cls, body: bytes | str, max_size: int = MIN_MAX_SIZE) -> RobotsTxt:
        """Parse a robots.txt body (bytes as downloaded, or text); never raises on content.

        Only the first ``max_size`` octets are read (a line cut by the limit is dropped).
        ``max_size`` below RFC 9309's 500 KiB minimum raises :class:`ValueError`.
        """
        if max_size < MIN_MAX_SIZE:
            raise ValueError(
                f"max_size must be at least {MIN_MAX_SIZE} octets (RFC 9309's 500 KiB minimum), "
                f"got {max_size}"
            )
        if isinstance(body, str):
            body = utf8_octets(body)
        return cls(prepare(body, max_size))

    @property
    def sitemaps(self) -> list[str]:
        """Every non-empty ``Sitemap:`` value, in file order, wherever it appeared."""
        records = _records_of_kind(self._body, self._body.lower(), "sitemap", b"site")
        return [value.decode("utf-8", "replace") for _, _, value in records if value]

    def _select(self, user_agent: str) -> _Selection | None:
        """Find (and cache) the merged groups that apply to ``user_agent`` (RFC 9309 2.2.1)."""
        token = crawler_token(user_agent)
        try:
            selection = self._by_token[token]
        except KeyError:
            octets = token.encode("ascii", "replace")
            groups = []
            if is_product_token(token):
                groups = [group for group in self._groups if group.names(octets)]
            if not groups:
                groups = [group for group in self._groups if group.names(b"*")]
            selection = _Selection(groups, self._body) if groups else None
            self._by_token[token] = selection
        if len(self._selections) >= _MAX_CACHED_USER_AGENTS:  # e.g. a rotating User-Agent
            self._selections.clear()
        self._selections[user_agent] = selection
        return selection

    def explain(self, url: str, user_agent: str) -> Decision:
        """Return the decision for ``url`` and the crawler ``user_agent``, with its reason."""
        path = normalised_path(url)
        if path == _ROBOTS_TXT_PATH:
            return Decision(True)
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        if selection is None:
            return Decision(True)
        match = selection.rules.decide(path)
        if match is None:
            return Decision(True, user_agents=selection.user_agents)
        _, allow, line = match
        return Decision(allow, selection.rules.rule_text(match), -line, selection.user_agents)

    def allowed(self, url: str, user_agent: str) -> bool:
        """Return whether the crawler ``user_agent`` may fetch ``url``."""
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        if selection is None:
            return True
        rules = selection.rules
        clean = clean_http_url(url)
        path = clean.group(1) if clean is not None else normalised_path(url)
        # Most paths match no rule: answer those here, without a call (see ``screen``).
        if not path.startswith(rules.screen) or path == _ROBOTS_TXT_PATH:
            return True
        match = rules.decide(path)
        return match is None or match[1]

    def crawl_delay(self, user_agent: str) -> float | None:
        """Return the ``Crawl-delay`` of the group that applies to ``user_agent``, in seconds."""
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        return None if selection is None else selection.crawl_delay
