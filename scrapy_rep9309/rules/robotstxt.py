"""Parsed robots.txt rules and decisions: the public API of the package.

Parsing is lazy, because most files are asked about by one crawler and most of their
lines are other crawlers' groups, comments or HTML. ``RobotsTxt.parse`` only finds the
groups (a ``GroupIndex``); the first decision for a crawler tokenizes just the groups
that apply to it and compiles their rules (a ``RuleSet``). Both classes come from
:mod:`scrapy_rep9309.rules.core`: compiled where the extension was built, Python otherwise.
Everything is cached per crawler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from scrapy_rep9309.rules import core
from scrapy_rep9309.rules.groups import records_of_kind
from scrapy_rep9309.rules.matcher import ROBOTS_TXT_PATH, MatchKey
from scrapy_rep9309.rules.parser import MIN_MAX_SIZE, prepare
from scrapy_rep9309.rules.urlnorm import normalised_path, utf8_octets
from scrapy_rep9309.rules.useragent import crawler_token, is_product_token

_MAX_CACHED_USER_AGENTS = 64


@lru_cache(maxsize=256)
def _naming_token(user_agent: str) -> tuple[str, bytes | None]:
    """The crawler token of ``user_agent``, and its octets for ``GroupIndex.naming`` when
    it is a product token (only then can a group name it); cached, as it is asked once
    per file parsed."""
    token = crawler_token(user_agent)
    return token, token.encode("ascii") if is_product_token(token) else None


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


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class _Selection:
    """What applies to one crawler token: the merged rules of its groups, compiled.

    The rules are kept once, compiled; what only log lines and explanations need (the
    groups' names, a rule as written) and the crawl-delay are read from the groups
    when first asked.
    """

    __slots__ = ("_crawl_delays", "_groups", "_indexes", "rules")

    def __init__(
        self,
        groups: core.GroupIndexProtocol,
        indexes: list[int],
        rule_set_class: core.RuleSetClass,
    ) -> None:
        self._groups = groups
        self._indexes = indexes
        self._crawl_delays: list[bytes] | None = None
        self.rules = rule_set_class.from_groups(groups, indexes)

    @property
    def user_agents(self) -> tuple[str, ...]:
        agents = (
            agent.decode("utf-8", "replace")
            for index in self._indexes
            for agent in self._groups.agents(index)
        )
        return tuple(dict.fromkeys(agents))

    @property
    def crawl_delay(self) -> float | None:
        """The first valid ``Crawl-delay`` of the groups, in file order."""
        if self._crawl_delays is None:
            crawl_delays: dict[int, bytes] = {}
            for index in self._indexes:
                self._groups.collect(index, {}, {}, crawl_delays)
            self._crawl_delays = list(crawl_delays.values())
        for value in self._crawl_delays:
            delay = _parse_delay(value)
            if delay is not None:
                return delay
        return None

    def rule_text(self, key: MatchKey) -> str:
        """The rule a match key stands for, as written: ``Disallow: /private``."""
        value = self.rules.written(key)
        return f"{'Allow' if key[1] else 'Disallow'}: {value.decode('utf-8', 'replace')}"


class RobotsTxt:
    """The rules of one robots.txt file, as RFC 9309 reads them."""

    __slots__ = ("_body", "_by_token", "_groups", "_rule_set_class", "_selections")

    def __init__(self, body: bytes) -> None:
        #: The octets read (size-limited, without byte order mark).
        self._body = body
        implementation = core.ACTIVE
        self._groups = implementation.GroupIndex(body)
        self._rule_set_class = implementation.RuleSet
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
        records = records_of_kind(self._body, self._body.lower(), "sitemap", b"site")
        return [value.decode("utf-8", "replace") for _, _, value in records if value]

    def _select(self, user_agent: str) -> _Selection | None:
        """Find (and cache) the merged groups that apply to ``user_agent`` (RFC 9309 2.2.1)."""
        token, octets = _naming_token(user_agent)
        if token in self._by_token:
            selection = self._by_token[token]
        else:
            indexes = [] if octets is None else self._groups.naming(octets)
            if not indexes:
                indexes = self._groups.naming(b"*")
            selection = _Selection(self._groups, indexes, self._rule_set_class) if indexes else None
            self._by_token[token] = selection
        if len(self._selections) >= _MAX_CACHED_USER_AGENTS:  # e.g. a rotating User-Agent
            self._selections.clear()
        self._selections[user_agent] = selection
        return selection

    def explain(self, url: str, user_agent: str) -> Decision:
        """Return the decision for ``url`` and the crawler ``user_agent``, with its reason."""
        path = normalised_path(url)
        if path == ROBOTS_TXT_PATH:
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
        return Decision(allow, selection.rule_text(match), -line, selection.user_agents)

    def allowed(self, url: str, user_agent: str) -> bool:
        """Return whether the crawler ``user_agent`` may fetch ``url``."""
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        return selection is None or selection.rules.allowed(url)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Return the ``Crawl-delay`` of the group that applies to ``user_agent``, in seconds."""
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        return None if selection is None else selection.crawl_delay
