"""Parsed robots.txt rules and decisions: the public API of the package.

Parsing only records groups as raw bytes; a group's patterns are normalised and
compiled the first time a crawler they apply to asks for a decision, and the selected
rules are cached per crawler token. Most robots.txt files are asked about by one
crawler only, so most groups are never compiled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scrapy_rep9309.matcher import RawRule, RuleSet
from scrapy_rep9309.parser import MIN_MAX_SIZE, tokenize
from scrapy_rep9309.urlnorm import normalise_text, path_and_query
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
    """One group as read: its user-agent values, raw rules and crawl-delay values."""

    __slots__ = ("agents", "crawl_delays", "rules")

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.rules: list[RawRule] = []
        self.crawl_delays: list[bytes] = []


class _GroupBuilder:
    """Parser handler that turns records into groups (RFC 9309 section 2.1-2.2.1)."""

    __slots__ = ("current", "groups", "in_rules", "sitemaps")

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.current: _Group | None = None
        self.in_rules = False
        self.sitemaps: list[str] = []

    def user_agent(self, line_no: int, value: bytes) -> None:
        if self.current is None or self.in_rules:
            self.current = _Group()
            self.groups.append(self.current)
            self.in_rules = False
        self.current.agents.append(value.decode("utf-8", "replace"))

    def allow(self, line_no: int, value: bytes) -> None:
        if self.current is not None:
            self.in_rules = True
            self.current.rules.append((True, value, line_no))

    def disallow(self, line_no: int, value: bytes) -> None:
        if self.current is not None:
            self.in_rules = True
            self.current.rules.append((False, value, line_no))

    def sitemap(self, line_no: int, value: bytes) -> None:
        if value:
            self.sitemaps.append(value.decode("utf-8", "replace"))

    def crawl_delay(self, line_no: int, value: bytes) -> None:
        if self.current is not None:
            self.current.crawl_delays.append(value)

    def unknown(self, line_no: int, key: bytes, value: bytes) -> None:
        """Unknown records are ignored and, per RFC 9309, do not end a group."""


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class _Selection:
    """What applies to one crawler token: merged rules, group names and crawl-delay."""

    __slots__ = ("crawl_delay", "rules", "user_agents")

    def __init__(self, groups: list[_Group]) -> None:
        self.rules = RuleSet(rule for group in groups for rule in group.rules)
        self.user_agents = tuple(dict.fromkeys(agent for group in groups for agent in group.agents))
        self.crawl_delay: float | None = None
        for group in groups:
            for value in group.crawl_delays:
                self.crawl_delay = _parse_delay(value)
                if self.crawl_delay is not None:
                    return


class RobotsTxt:
    """The rules of one robots.txt file, as RFC 9309 reads them."""

    __slots__ = ("_by_token", "_groups", "_selections", "sitemaps")

    def __init__(self, groups: list[_Group], sitemaps: list[str]) -> None:
        self._groups = groups
        #: Lower-cased product token (or ``*``) -> indexes of the groups naming it.
        self._by_token: dict[str, list[int]] = {}
        for index, group in enumerate(groups):
            for agent in group.agents:
                token = group_token(agent)
                if token:
                    indexes = self._by_token.setdefault(token, [])
                    if not indexes or indexes[-1] != index:
                        indexes.append(index)
        self._selections: dict[str, _Selection | None] = {}
        #: Every ``Sitemap:`` value, in file order, wherever it appeared.
        self.sitemaps = sitemaps

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
            body = body.encode("utf-8", "surrogateescape")
        builder = _GroupBuilder()
        tokenize(body, builder, max_size)
        return cls(builder.groups, builder.sitemaps)

    def _select(self, user_agent: str) -> _Selection | None:
        token = crawler_token(user_agent)
        try:
            return self._selections[token]
        except KeyError:
            pass
        indexes = self._by_token.get(token) if token != GLOBAL_TOKEN else None
        if indexes is None:
            indexes = self._by_token.get(GLOBAL_TOKEN)
        selection = None if indexes is None else _Selection([self._groups[i] for i in indexes])
        self._selections[token] = selection
        return selection

    def explain(self, url: str, user_agent: str) -> Decision:
        """Return the decision for ``url`` and the crawler ``user_agent``, with its reason."""
        path = normalise_text(path_and_query(url))
        if path == _ROBOTS_TXT_PATH:
            return Decision(True)
        selection = self._select(user_agent)
        if selection is None:
            return Decision(True)
        rule = selection.rules.decide(path)
        if rule is None:
            return Decision(True, user_agents=selection.user_agents)
        return Decision(rule.allow, rule.text(), rule.line, selection.user_agents)

    def allowed(self, url: str, user_agent: str) -> bool:
        """Return whether the crawler ``user_agent`` may fetch ``url``."""
        path = normalise_text(path_and_query(url))
        if path == _ROBOTS_TXT_PATH:
            return True
        selection = self._select(user_agent)
        if selection is None:
            return True
        rule = selection.rules.decide(path)
        return rule is None or rule.allow

    def crawl_delay(self, user_agent: str) -> float | None:
        """Return the ``Crawl-delay`` of the group that applies to ``user_agent``, in seconds."""
        selection = self._select(user_agent)
        return None if selection is None else selection.crawl_delay
