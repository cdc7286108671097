"""Finding the groups of a robots.txt and reading the rules of chosen ones (pure Python).

:class:`GroupIndex` is one of the two hot parts that :mod:`scrapy_rep9309.rules.core` can
swap for compiled code (``_speedups.c`` implements the same class); this one is the
reference the compiled one is tested against.

Parsing is lazy, because most files are asked about by one crawler and most of their
lines are other crawlers' groups, comments or HTML. The index only finds the
user-agent lines (a C-speed search for ``agent``, each hit checked by the tokenizer's
own rule) and from them the groups, as byte ranges; a group's lines are tokenized
when a crawler it applies to first asks.
"""

from __future__ import annotations

from collections.abc import Callable

from scrapy_rep9309.rules.parser import (
    MAX_LINE_OCTETS,
    classify,
    line_number_at,
    split_lines,
    tokenize_lines,
)

#: ``(line start, line end, value)`` of one record.
Record = tuple[int, int, bytes]
#: Records that end a run of user-agent lines: RFC 9309's ``rule``, which
#: draft-ietf-aipref-attach extends with ``content-usage``.
_RULE_KINDS = ("allow", "disallow", "content_usage")
_GLIMPSE = 1024
_WHITESPACE = frozenset(b" \t\n\v\f\r")
_TOKEN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")


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


class GroupIndex:
    """The groups of one robots.txt body (RFC 9309 2.1), found without tokenizing it all.

    Consecutive user-agent lines start one group, and a user-agent line after a rule
    starts the next; rules before the first user-agent line belong to none.
    """

    __slots__ = ("_body", "_groups")

    def __init__(self, body: bytes) -> None:
        self._body = body
        self._groups = _find_groups(body, body.lower())

    def __len__(self) -> int:
        return len(self._groups)

    def naming(self, token: bytes) -> list[int]:
        """Indexes of the groups naming ``token`` (a lower-case product token, or ``*``)."""
        return [index for index, group in enumerate(self._groups) if group.names(token)]

    def agents(self, index: int) -> list[bytes]:
        """The ``User-agent`` values of group ``index``, as written."""
        return list(self._groups[index].agents)

    def collect(
        self,
        index: int,
        allows: dict[int, bytes],
        disallows: dict[int, bytes],
        crawl_delays: dict[int, bytes],
    ) -> None:
        """Add the records of group ``index`` to the dicts (line number -> value)."""
        group = self._groups[index]
        lines = split_lines(self._body[group.start : group.end])
        collector = _RuleCollector(allows, disallows, crawl_delays)
        tokenize_lines(lines, collector, line_number_at(self._body, group.start))

    def span(self, index: int) -> tuple[int, int, int]:
        """``(start, end, line number of start)`` of group ``index`` in the body.

        For the records read only on request (``Content-Usage``, ``Content-Signal``,
        which user-agent lines a ``Crawl-delay`` follows): the caller tokenizes
        ``body[start:end]`` itself, so :meth:`collect` stays as lean as it can be.
        """
        group = self._groups[index]
        return group.start, group.end, line_number_at(self._body, group.start)


def records_of_kind(lines: bytes, lowered: bytes, kind: str, needle: bytes) -> list[Record]:
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


def _find_groups(body: bytes, lowered: bytes) -> list[_Group]:
    groups: list[_Group] = []
    previous_end = 0
    for start, end, agent in records_of_kind(body, lowered, "user_agent", b"agent"):
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
    """Tokenizer handler filing a group's rules and crawl-delays by line number."""

    __slots__ = ("allow", "crawl_delay", "disallow")
    unknown: Callable[[int, bytes, bytes], None] | None = None

    def __init__(
        self,
        allows: dict[int, bytes],
        disallows: dict[int, bytes],
        crawl_delays: dict[int, bytes],
    ) -> None:
        # C-level methods (line number -> value): these run once per rule line.
        self.allow = allows.__setitem__
        self.disallow = disallows.__setitem__
        self.crawl_delay = crawl_delays.__setitem__

    def user_agent(self, line_no: int, value: bytes) -> None:
        """The group's own user-agent lines: already known."""

    def sitemap(self, line_no: int, value: bytes) -> None:
        """Sitemaps are read from the whole file by :attr:`RobotsTxt.sitemaps`."""

    def license(self, line_no: int, value: bytes) -> None:
        """Licenses are read from the whole file by :attr:`RobotsTxt.licenses`."""

    def content_usage(self, line_no: int, value: bytes) -> None:
        """Read on request only, from :meth:`GroupIndex.span`."""

    def content_signal(self, line_no: int, value: bytes) -> None:
        """Read on request only, from :meth:`GroupIndex.span`."""
