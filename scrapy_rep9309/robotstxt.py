"""Parsed robots.txt rules and decisions: the public API of the package.

Parsing only records groups as raw bytes; a group's patterns are normalised and
compiled the first time a crawler they apply to asks for a decision, and the selected
rules are cached per crawler token. Most robots.txt files are asked about by one
crawler only, so most groups are never compiled.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from scrapy_rep9309.matcher import RuleSet, RuleSource
from scrapy_rep9309.parser import MIN_MAX_SIZE, tokenize
from scrapy_rep9309.urlnorm import clean_http_url, normalised_path, utf8_octets
from scrapy_rep9309.useragent import GLOBAL_TOKEN, crawler_token, group_token

_ROBOTS_TXT_PATH = "/robots.txt"


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
    """One group as read: its user-agent values and where its records are.

    Rules are not copied per group: a group owns the slice of the (file-ordered) allow
    and disallow tables recorded between its first user-agent line and the next group's,
    and the crawl-delay lines in that range of lines.
    """

    __slots__ = ("agents", "allows", "disallows", "lines")

    def __init__(self, line: int, first_agent: bytes, allow_start: int, disallow_start: int):
        self.agents = [first_agent]
        self.allows = [allow_start, allow_start]
        self.disallows = [disallow_start, disallow_start]
        self.lines = [line, sys.maxsize]

    def names(self, token: str) -> bool:
        """Whether a user-agent line of this group names ``token`` (or ``*``)."""
        prefix = token.encode("ascii", "replace")
        return any(
            agent[: len(prefix)].lower() == prefix and group_token(agent.decode("latin-1")) == token
            for agent in self.agents
        )


class _GroupBuilder:
    """Parser handler that turns records into groups (RFC 9309 section 2.1-2.2.1).

    Every handler method except ``user_agent`` is a plain ``dict.__setitem__`` (line
    number -> value): they run for most lines of every file, so they cost no Python
    call. A user-agent line starts a new group when a rule was recorded since the
    current group started; rules before the first user-agent line belong to no group.
    """

    __slots__ = (
        "_current",
        "allow",
        "allows",
        "crawl_delay",
        "crawl_delays",
        "disallow",
        "disallows",
        "groups",
        "sitemap",
        "sitemaps",
    )
    #: Unknown records are ignored (and, per RFC 9309, do not end a group).
    unknown = None

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.allows: dict[int, bytes] = {}
        self.disallows: dict[int, bytes] = {}
        self.sitemaps: dict[int, bytes] = {}
        self.crawl_delays: dict[int, bytes] = {}
        self.allow = self.allows.__setitem__
        self.disallow = self.disallows.__setitem__
        self.sitemap = self.sitemaps.__setitem__
        self.crawl_delay = self.crawl_delays.__setitem__
        self._current: _Group | None = None

    def user_agent(self, line_no: int, value: bytes) -> None:
        allows, disallows = len(self.allows), len(self.disallows)
        current = self._current
        if current is not None and (current.allows[0], current.disallows[0]) == (allows, disallows):
            current.agents.append(value)
            return
        self._close_group(line_no)
        self._current = _Group(line_no, value, allows, disallows)
        self.groups.append(self._current)

    def _close_group(self, next_line: int) -> None:
        if self._current is not None:
            self._current.allows[1] = len(self.allows)
            self._current.disallows[1] = len(self.disallows)
            self._current.lines[1] = next_line

    def finish(self) -> None:
        self._close_group(sys.maxsize)
        self._current = None


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class _Selection:
    """What applies to one crawler token: merged rules, group names and crawl-delay."""

    __slots__ = ("_crawl_delays", "_groups", "rules")

    def __init__(self, groups: list[_Group], robots: _GroupBuilder) -> None:
        self._groups = groups
        self._crawl_delays = robots.crawl_delays
        sources: list[RuleSource] = []
        for group in groups:
            sources.append((robots.allows, *group.allows))
            sources.append((robots.disallows, *group.disallows))
        self.rules = RuleSet(robots.allows, robots.disallows, sources)

    @property
    def user_agents(self) -> tuple[str, ...]:
        agents = (
            agent.decode("utf-8", "replace") for group in self._groups for agent in group.agents
        )
        return tuple(dict.fromkeys(agents))

    @property
    def crawl_delay(self) -> float | None:
        """The first valid ``Crawl-delay`` of the groups, in file order."""
        for line, value in self._crawl_delays.items():
            if any(start <= line < end for start, end in (group.lines for group in self._groups)):
                delay = _parse_delay(value)
                if delay is not None:
                    return delay
        return None


class RobotsTxt:
    """The rules of one robots.txt file, as RFC 9309 reads them."""

    __slots__ = ("_by_token", "_records", "_selections")

    def __init__(self, records: _GroupBuilder) -> None:
        records.finish()
        self._records = records
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
        records = _GroupBuilder()
        tokenize(body, records, max_size)
        return cls(records)

    @property
    def sitemaps(self) -> list[str]:
        """Every non-empty ``Sitemap:`` value, in file order, wherever it appeared."""
        return [
            value.decode("utf-8", "replace") for value in self._records.sitemaps.values() if value
        ]

    def _select(self, user_agent: str) -> _Selection | None:
        """Find (and cache) the merged groups that apply to ``user_agent`` (RFC 9309 2.2.1)."""
        token = crawler_token(user_agent)
        try:
            selection = self._by_token[token]
        except KeyError:
            all_groups = self._records.groups
            groups = [group for group in all_groups if token and group.names(token)]
            if not groups or token == GLOBAL_TOKEN:
                groups = [group for group in all_groups if group.names(GLOBAL_TOKEN)]
            selection = self._by_token[token] = (
                _Selection(groups, self._records) if groups else None
            )
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
        clean = clean_http_url(url)
        path = clean.group(1) if clean is not None else normalised_path(url)
        if path == _ROBOTS_TXT_PATH:
            return True
        match = selection.rules.decide(path)
        return match is None or match[1]

    def crawl_delay(self, user_agent: str) -> float | None:
        """Return the ``Crawl-delay`` of the group that applies to ``user_agent``, in seconds."""
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        return None if selection is None else selection.crawl_delay
