"""Parsed robots.txt rules and decisions: the public API of the package.

Parsing only records groups as raw bytes; a group's patterns are normalised and
compiled the first time a crawler they apply to asks for a decision, and the selected
rules are cached per crawler token. Most robots.txt files are asked about by one
crawler only, so most groups are never compiled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scrapy_rep9309.matcher import RuleSet, RuleSource
from scrapy_rep9309.parser import MIN_MAX_SIZE, tokenize
from scrapy_rep9309.urlnorm import normalised_path, utf8_octets
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
    """One group as read: its user-agent values and where its rules are in the rule tables.

    Rules are not copied per group: a group owns the slice of the (file-ordered) allow
    and disallow tables recorded between its first user-agent line and the next group's.
    """

    __slots__ = ("agents", "allows", "crawl_delays", "disallows")

    def __init__(self, first_agent: bytes, allow_start: int, disallow_start: int) -> None:
        self.agents = [first_agent]
        self.allows = [allow_start, allow_start]
        self.disallows = [disallow_start, disallow_start]
        self.crawl_delays: list[bytes] = []

    def names(self, token: str) -> bool:
        """Whether a user-agent line of this group names ``token`` (or ``*``)."""
        prefix = token.encode("ascii", "replace")
        return any(
            agent[: len(prefix)].lower() == prefix and group_token(agent.decode("latin-1")) == token
            for agent in self.agents
        )


class _GroupBuilder:
    """Parser handler that turns records into groups (RFC 9309 section 2.1-2.2.1).

    ``allow`` and ``disallow`` are plain ``dict.__setitem__`` methods (line number ->
    value): they run for most lines of every file, so they must cost no Python call.
    A user-agent line starts a new group when a rule was recorded since the current
    group started; rules before the first user-agent line belong to no group.
    """

    __slots__ = ("_current", "allow", "allows", "disallow", "disallows", "groups", "sitemaps")

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.sitemaps: list[str] = []
        self.allows: dict[int, bytes] = {}
        self.disallows: dict[int, bytes] = {}
        self.allow = self.allows.__setitem__
        self.disallow = self.disallows.__setitem__
        self._current: _Group | None = None

    def user_agent(self, line_no: int, value: bytes) -> None:
        allows, disallows = len(self.allows), len(self.disallows)
        current = self._current
        if current is not None and (current.allows[0], current.disallows[0]) == (allows, disallows):
            current.agents.append(value)
            return
        self._close_group()
        self._current = _Group(value, allows, disallows)
        self.groups.append(self._current)

    def sitemap(self, line_no: int, value: bytes) -> None:
        if value:
            self.sitemaps.append(value.decode("utf-8", "replace"))

    def crawl_delay(self, line_no: int, value: bytes) -> None:
        if self._current is not None:
            self._current.crawl_delays.append(value)

    def unknown(self, line_no: int, key: bytes, value: bytes) -> None:
        """Unknown records are ignored and, per RFC 9309, do not end a group."""

    def _close_group(self) -> None:
        if self._current is not None:
            self._current.allows[1] = len(self.allows)
            self._current.disallows[1] = len(self.disallows)

    def finish(self) -> None:
        self._close_group()
        self._current = None


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class _Selection:
    """What applies to one crawler token: merged rules, group names and crawl-delay."""

    __slots__ = ("crawl_delay", "rules", "user_agents")

    def __init__(
        self, groups: list[_Group], allows: dict[int, bytes], disallows: dict[int, bytes]
    ) -> None:
        sources: list[RuleSource] = []
        for group in groups:
            sources.append((allows, *group.allows))
            sources.append((disallows, *group.disallows))
        self.rules = RuleSet(allows, disallows, sources)
        self.user_agents = tuple(
            dict.fromkeys(
                agent.decode("utf-8", "replace") for group in groups for agent in group.agents
            )
        )
        self.crawl_delay: float | None = None
        for group in groups:
            for value in group.crawl_delays:
                self.crawl_delay = _parse_delay(value)
                if self.crawl_delay is not None:
                    return


_NOTHING_APPLIES = _Selection([], {}, {})


class RobotsTxt:
    """The rules of one robots.txt file, as RFC 9309 reads them."""

    __slots__ = ("_allows", "_by_token", "_disallows", "_groups", "_selections", "sitemaps")

    def __init__(self, builder: _GroupBuilder) -> None:
        builder.finish()
        self._groups = builder.groups
        self._allows = builder.allows
        self._disallows = builder.disallows
        #: Lower-cased product token -> what applies to it; filled on demand.
        self._by_token: dict[str, _Selection] = {}
        #: The same, keyed by the user_agent string exactly as callers pass it.
        self._selections: dict[str, _Selection] = {}
        #: Every ``Sitemap:`` value, in file order, wherever it appeared.
        self.sitemaps = builder.sitemaps

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
        builder = _GroupBuilder()
        tokenize(body, builder, max_size)
        return cls(builder)

    def _select(self, user_agent: str) -> _Selection:
        """Find (and cache) the merged groups that apply to ``user_agent`` (RFC 9309 2.2.1)."""
        token = crawler_token(user_agent)
        selection = self._by_token.get(token)
        if selection is None:
            groups = [group for group in self._groups if token and group.names(token)]
            if not groups or token == GLOBAL_TOKEN:
                groups = [group for group in self._groups if group.names(GLOBAL_TOKEN)]
            if groups:
                selection = _Selection(groups, self._allows, self._disallows)
            else:
                selection = _NOTHING_APPLIES
            self._by_token[token] = selection
        self._selections[user_agent] = selection
        return selection

    def explain(self, url: str, user_agent: str) -> Decision:
        """Return the decision for ``url`` and the crawler ``user_agent``, with its reason."""
        path = normalised_path(url)
        if path == _ROBOTS_TXT_PATH:
            return Decision(True)
        selection = self._selections.get(user_agent) or self._select(user_agent)
        match = selection.rules.decide(path)
        if match is None:
            return Decision(True, user_agents=selection.user_agents)
        _, allow, line = match
        return Decision(allow, selection.rules.rule_text(match), -line, selection.user_agents)

    def allowed(self, url: str, user_agent: str) -> bool:
        """Return whether the crawler ``user_agent`` may fetch ``url``."""
        path = normalised_path(url)
        if path == _ROBOTS_TXT_PATH:
            return True
        selection = self._selections.get(user_agent) or self._select(user_agent)
        match = selection.rules.decide(path)
        return match is None or match[1]

    def crawl_delay(self, user_agent: str) -> float | None:
        """Return the ``Crawl-delay`` of the group that applies to ``user_agent``, in seconds."""
        selection = self._selections.get(user_agent) or self._select(user_agent)
        return selection.crawl_delay
