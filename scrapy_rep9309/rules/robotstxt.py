"""Parsed robots.txt rules and decisions: the public API of the package.

Parsing is lazy, because most files are asked about by one crawler and most of their
lines are other crawlers' groups, comments or HTML. ``RobotsTxt.parse`` only finds the
groups (a ``GroupIndex``); the first decision for a crawler tokenizes just the groups
that apply to it and compiles their rules (a ``RuleSet``). Both classes come from
:mod:`scrapy_rep9309.rules.core`: compiled where the extension was built, Python otherwise.
Everything is cached per crawler.

Records that no crawl decision needs (``Content-Usage``, ``Content-Signal``, which
user-agent lines a ``Crawl-delay`` follows) are read from the same groups only when
asked for, by the reference tokenizer of :mod:`~scrapy_rep9309.rules.parser`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType

from scrapy_rep9309.rules import core
from scrapy_rep9309.rules.groups import records_of_kind
from scrapy_rep9309.rules.matcher import ROBOTS_TXT_PATH, MatchKey
from scrapy_rep9309.rules.parser import (
    MAX_LINE_OCTETS,
    MIN_MAX_SIZE,
    prepare,
    split_lines,
    tokenize_lines,
)
from scrapy_rep9309.rules.urlnorm import normalised_path, utf8_octets
from scrapy_rep9309.rules.usage import (
    Preference,
    UsageRules,
    combine_content_signals,
    signal_preferences,
)
from scrapy_rep9309.rules.useragent import (
    GLOBAL_TOKEN,
    crawler_token,
    group_token,
    is_product_token,
)

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
    #: The URL's usage preferences (``Content-Usage`` rules of the same group), one per
    #: vocabulary label stated, with the rule that stated it; ``()`` if disallowed.
    usage: tuple[Preference, ...] = ()
    #: Set by :meth:`RobotsTxt.explain_for_all`: the user agent, as passed, whose group
    #: forbids the URL.
    forbidden_for: str | None = None

    @property
    def preferences(self) -> dict[str, str]:
        """``usage`` as ``{label: "y" | "n"}``, like :meth:`RobotsTxt.content_usage`."""
        return {preference.label: preference.value for preference in self.usage}


#: A valid Crawl-delay: a decimal number of seconds (not ``1_0``, ``1e3``, ``-1``, ``nan``).
_DELAY = re.compile(rb"[ \t]*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)[ \t]*")


def _parse_delay(value: bytes) -> float | None:
    valid = _DELAY.fullmatch(value)
    if valid is None:
        return None
    delay = float(valid.group(1))
    return delay if math.isfinite(delay) else None  # 400 nines are no number of seconds


def _names(agent: bytes, token: str) -> bool:
    """Whether a ``User-agent`` value names ``token`` (lower-case, or ``*``), as groups do."""
    return group_token(agent.decode("latin-1")) == token


class _OnRequestRecords:
    """Tokenizer handler keeping the group records read only on request.

    ``delays`` pairs each ``Crawl-delay`` value with the user-agent lines it belongs to:
    those directly above it, i.e. the last run of user-agent lines before it (as Protego
    and crawler-commons read it; RFC 9309 leaves ``Crawl-delay`` to crawlers). A run
    ends where a ``Crawl-delay`` line follows it.
    """

    unknown = None

    def __init__(self) -> None:
        self.delays: list[tuple[bytes, list[bytes]]] = []
        self.usage_rules: dict[int, bytes] = {}
        self.signals: list[tuple[int, bytes]] = []
        self._run: list[bytes] = []
        self._run_ended = False

    def start_group(self) -> None:
        """A new group starts: the user-agent lines of the one before are no run of it
        (the groups read may not follow each other in the file)."""
        self._run, self._run_ended = [], False

    def user_agent(self, line_no: int, value: bytes) -> None:
        if self._run_ended:
            self._run, self._run_ended = [], False
        self._run.append(value)

    def crawl_delay(self, line_no: int, value: bytes) -> None:
        self.delays.append((value, self._run))
        self._run_ended = True

    def content_usage(self, line_no: int, value: bytes) -> None:
        self.usage_rules[line_no] = value

    def content_signal(self, line_no: int, value: bytes) -> None:
        self.signals.append((line_no, value))

    def drop_cut(self, whole_lines: list[bytes], first_line_no: int) -> None:
        """Mend the usage records of lines the tokenizer cut at MAX_LINE_OCTETS inside
        their value (not in a comment or trailing blanks). A cut ``Content-Usage``
        statement states nothing: it could have lost its last member, and with it an
        ``n`` that wins over an earlier ``y`` (RFC 9651: a repeated key keeps its last
        value). A cut ``Content-Signal`` keeps the items wholly before the cut (``no``
        wins wherever it stands); the cut one goes (``ai-train=yesterday`` cut to
        ``ai-train=yes``)."""
        # Line number -> whether the cut fell between two items (at a comma).
        cut = {
            first_line_no + offset: line[MAX_LINE_OCTETS:].lstrip(b" \t").startswith(b",")
            for offset, line in enumerate(whole_lines)
            if len(line) > MAX_LINE_OCTETS and _cut_inside_value(line)
        }
        if not cut:
            return
        for line_no in cut:
            self.usage_rules.pop(line_no, None)
        self.signals = [
            (line_no, value.rpartition(b",")[0] if cut.get(line_no) is False else value)
            for line_no, value in self.signals
        ]

    def _elsewhere(self, line_no: int, value: bytes) -> None:
        """Rules are compiled by the ``RuleSet``; sitemaps and licenses are file-wide."""

    allow = disallow = sitemap = license = _elsewhere


def _cut_inside_value(line: bytes) -> bool:
    """Whether cutting ``line`` at MAX_LINE_OCTETS cuts its record's value: the value
    ends at the first ``#``, without trailing SP or HTAB."""
    comment = line.find(b"#")
    value = line if comment < 0 else line[:comment]
    return len(value.rstrip(b" \t")) > MAX_LINE_OCTETS


class _Extras:
    """What a selection reads only on request: usage rules, signals, its crawl-delay."""

    __slots__ = ("crawl_delay", "signal_usage", "signals", "states_usage", "usage")

    def __init__(
        self,
        usage: UsageRules,
        signals: Mapping[str, str],
        signal_usage: tuple[Preference, ...],
        crawl_delay: float | None,
    ) -> None:
        self.usage = usage
        self.signals = signals
        self.signal_usage = signal_usage
        #: Whether any URL can have a usage preference (a per-request test).
        self.states_usage = bool(usage) or bool(signal_usage)
        self.crawl_delay = crawl_delay


#: The extras of the groups of most files: none. One instance for all of them, read-only
#: like every ``_Extras``: a crawl keeps thousands of origins' rules for hours.
_NO_EXTRAS = _Extras(UsageRules({}), MappingProxyType({}), (), None)


def _read_extras(selection: _Selection, body: bytes, groups: core.GroupIndexProtocol) -> _Extras:
    """One pass of the reference tokenizer over the selected groups' lines, skipping
    groups without the records it needs (a search of the lower-cased bytes)."""
    token = selection.token
    indexes = selection.indexes
    # Only a group of several user-agent lines can give a delay to some of them.
    crawl_delays = selection.crawl_delays(groups)
    attribute_delays = bool(crawl_delays) and len(selection.agents(groups)) > len(indexes)
    records = _OnRequestRecords()
    for index in indexes:
        start, end, first_line_no = groups.span(index)
        lines = body[start:end]
        lowered = lines.lower()
        if b"content-" in lowered or (attribute_delays and b"crawl" in lowered):
            records.start_group()
            tokenize_lines(split_lines(lines), records, first_line_no)
            if len(lines) > MAX_LINE_OCTETS:
                records.drop_cut(lines.splitlines(), first_line_no)
    delays: Iterable[bytes] = crawl_delays
    if attribute_delays:
        delays = [
            value for value, run in records.delays if any(_names(agent, token) for agent in run)
        ]
    crawl_delay = _first_valid_delay(delays)
    if not records.usage_rules and not records.signals and crawl_delay is None:
        return _NO_EXTRAS
    return _Extras(
        UsageRules(records.usage_rules),
        combine_content_signals(value for _, value in records.signals),
        signal_preferences(records.signals),
        crawl_delay,
    )


def _first_valid_delay(values: Iterable[bytes]) -> float | None:
    for value in values:
        delay = _parse_delay(value)
        if delay is not None:
            return delay
    return None


class _Selection:
    """What applies to one crawler token: merged rules, group names and crawl-delays.

    It keeps no reference to the file: thousands of selections may be kept for hours,
    so what is read on request gets the body and the groups from its caller. The rules
    are kept once, compiled (a rule as written is read again by ``rules.written``).
    """

    __slots__ = ("_agents", "_crawl_delays", "_extras", "indexes", "rules", "token")

    def __init__(
        self,
        groups: core.GroupIndexProtocol,
        indexes: list[int],
        token: str,
        rule_set_class: core.RuleSetClass,
    ) -> None:
        self.rules = rule_set_class.from_groups(groups, indexes)
        #: The groups that apply, by their index in the file's ``GroupIndex``.
        self.indexes = indexes
        #: The token the groups were chosen by: the crawler's, or ``*``.
        self.token = token
        self._agents: list[bytes] | None = None
        self._crawl_delays: tuple[bytes, ...] | None = None
        self._extras: _Extras | None = None

    def agents(self, groups: core.GroupIndexProtocol) -> list[bytes]:
        """The ``User-agent`` values of the groups, as written (read when first asked)."""
        if self._agents is None:
            self._agents = [agent for index in self.indexes for agent in groups.agents(index)]
        return self._agents

    def crawl_delays(self, groups: core.GroupIndexProtocol) -> tuple[bytes, ...]:
        """Every ``Crawl-delay`` value of the groups, in file order (read when first asked)."""
        if self._crawl_delays is None:
            crawl_delays: dict[int, bytes] = {}
            for index in self.indexes:
                groups.collect(index, {}, {}, crawl_delays)
            self._crawl_delays = tuple(crawl_delays.values())
        return self._crawl_delays

    def user_agents(self, groups: core.GroupIndexProtocol) -> tuple[str, ...]:
        agents = (agent.decode("utf-8", "replace") for agent in self.agents(groups))
        return tuple(dict.fromkeys(agents))

    def extras(self, body: bytes, groups: core.GroupIndexProtocol) -> _Extras:
        """What is read on request only, from the file the selection was made from."""
        if self._extras is None:
            self._extras = _read_extras(self, body, groups)
        return self._extras

    def crawl_delay(self, body: bytes, groups: core.GroupIndexProtocol) -> float | None:
        """The first valid ``Crawl-delay``, in file order, of the user-agent lines naming the token.

        RFC 9309 merges ``User-agent: a`` / ``Crawl-delay: 1`` / ``User-agent: b`` /
        ``Disallow: /x`` into one group for the rules, but that delay is ``a``'s only.
        """
        if not self.crawl_delays(groups):
            return None
        return self.extras(body, groups).crawl_delay

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
        return self._global_values("sitemap", b"site")

    @property
    def licenses(self) -> list[str]:
        """Every non-empty ``License:`` value (RSL 1.0), in file order, wherever it appeared."""
        return self._global_values("license", b"license")

    def _global_values(self, kind: str, needle: bytes) -> list[str]:
        records = records_of_kind(self._body, self._body.lower(), kind, needle)
        return [value.decode("utf-8", "replace") for _, _, value in records if value]

    def _select(self, user_agent: str) -> _Selection | None:
        """Find (and cache) the merged groups that apply to ``user_agent`` (RFC 9309 2.2.1)."""
        token, octets = _naming_token(user_agent)
        if token in self._by_token:
            selection = self._by_token[token]
        else:
            indexes = [] if octets is None else self._groups.naming(octets)
            named_by = token
            if not indexes:
                named_by = GLOBAL_TOKEN
                indexes = self._groups.naming(b"*")
            selection = None
            if indexes:
                selection = _Selection(self._groups, indexes, named_by, self._rule_set_class)
            self._by_token[token] = selection
        if len(self._selections) >= _MAX_CACHED_USER_AGENTS:  # e.g. a rotating User-Agent
            self._selections.clear()
        self._selections[user_agent] = selection
        return selection

    def _selection(self, user_agent: str) -> _Selection | None:
        try:
            return self._selections[user_agent]
        except KeyError:
            return self._select(user_agent)

    def explain(self, url: str, user_agent: str) -> Decision:
        """Return the decision for ``url`` and the crawler ``user_agent``, with its reason.

        For an allowed URL it also gives the URL's usage preferences (``usage``).
        """
        path = normalised_path(url)
        if path == ROBOTS_TXT_PATH:  # see matcher.is_robots_txt
            return Decision(True)
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        if selection is None:
            return Decision(True)
        match = selection.rules.decide(path)
        if match is None:
            return Decision(
                True,
                user_agents=selection.user_agents(self._groups),
                usage=self._usage(selection, path),
            )
        _, allow, line = match
        usage = self._usage(selection, path) if allow else ()
        user_agents = selection.user_agents(self._groups)
        return Decision(allow, selection.rule_text(match), -line, user_agents, usage)

    def _usage(self, selection: _Selection, path: str) -> tuple[Preference, ...]:
        """The usage preferences of normalised ``path``, which ``selection`` allows."""
        rules = selection.extras(self._body, self._groups).usage
        return rules.preferences(path) if rules else ()

    def allowed(self, url: str, user_agent: str) -> bool:
        """Return whether the crawler ``user_agent`` may fetch ``url``."""
        try:
            selection = self._selections[user_agent]
        except KeyError:
            selection = self._select(user_agent)
        return selection is None or selection.rules.allowed(url)

    def allowed_for_all(self, url: str, user_agents: Iterable[str]) -> tuple[bool, str | None]:
        """Whether every one of ``user_agents`` may fetch ``url``; else the first that may not.

        For a crawler that must obey the groups of several tokens (its own and, say,
        ``Google-Extended`` for a purpose): ``(True, None)``, or ``(False, user_agent)``
        naming the first, in the order given, whose group forbids ``url``.
        """
        for user_agent in user_agents:
            if not self.allowed(url, user_agent):
                return False, user_agent
        return True, None

    def explain_for_all(self, url: str, user_agents: Iterable[str]) -> Decision:
        """:meth:`explain` for the first of ``user_agents`` forbidden ``url``, naming it.

        The decision of the first user agent whose group forbids ``url``, with
        ``forbidden_for`` set to it; when all may fetch it, the decision of the first
        (``Decision(True)`` for none).
        """
        agents = list(user_agents)
        for user_agent in agents:
            if not self.allowed(url, user_agent):
                return replace(self.explain(url, user_agent), forbidden_for=user_agent)
        return self.explain(url, agents[0]) if agents else Decision(True)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Return the ``Crawl-delay`` for ``user_agent``, in seconds.

        The first valid value, in file order, of the ``Crawl-delay`` lines that follow
        user-agent lines naming the crawler (or ``*``) in the groups that apply.
        """
        selection = self._selection(user_agent)
        return None if selection is None else selection.crawl_delay(self._body, self._groups)

    def content_usage(self, url: str, user_agent: str) -> dict[str, str]:
        """Return the usage preferences of ``url`` for ``user_agent``: ``{label: "y" | "n"}``.

        Labels are draft-ietf-aipref-vocab's (``train-ai``, ``search``); a label without
        an explicit preference is absent. ``{}`` when the URL is disallowed (only what
        may be crawled has preferences) and for ``/robots.txt`` itself.
        """
        return self.explain(url, user_agent).preferences

    def states_usage(self, user_agent: str) -> bool:
        """Whether the groups that apply to ``user_agent`` state any usage preference.

        False when they have no ``Content-Usage`` rule and no ``Content-Signal`` key
        the vocabulary has a label for: then no URL has preferences, from either. Cached
        per crawler, so a crawl asks it for every request of a file without such lines
        and pays a dictionary look-up.
        """
        selection = self._selection(user_agent)
        return selection is not None and selection.extras(self._body, self._groups).states_usage

    def signal_preferences(self, user_agent: str) -> tuple[Preference, ...]:
        """:meth:`content_signals` as preferences of the vocabulary, with their lines.

        ``ai-train`` is ``train-ai`` and ``search`` is ``search`` (``yes`` -> ``y``,
        ``no`` -> ``n``); other keys (``ai-input``) have no label. See
        :data:`~scrapy_rep9309.rules.usage.CONTENT_SIGNAL_LABELS`.
        """
        selection = self._selection(user_agent)
        if selection is None:
            return ()
        return selection.extras(self._body, self._groups).signal_usage

    def content_signals(self, user_agent: str) -> dict[str, str]:
        """Return the ``Content-Signal`` values of the group that applies: ``{key: "yes" | "no"}``.

        Keys as written, lower-cased (``search``, ``ai-input``, ``ai-train``); several
        lines are combined, ``no`` winning over ``yes``.
        """
        selection = self._selection(user_agent)
        if selection is None:
            return {}
        return dict(selection.extras(self._body, self._groups).signals)
