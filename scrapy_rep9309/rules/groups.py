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

from bisect import bisect_right
from collections.abc import Callable
from itertools import compress, count, repeat

from scrapy_rep9309.rules.parser import (
    CLASSIFIED_PREFIXES,
    KIND_OF_KEY,
    KINDS,
    MAX_LINE_OCTETS,
    RULE_KEY,
    classify,
    fast_record,
    line_number_at,
    split_lines,
    tokenize_lines,
)

#: ``(line start, line end, value)`` of one record.
Record = tuple[int, int, bytes]
#: Records that end a run of user-agent lines: RFC 9309's ``rule``, which
#: draft-ietf-aipref-attach extends with ``content-usage``.
_RULE_KINDS = ("allow", "disallow", "content_usage")
_RULE_KIND_NUMBERS = frozenset(KINDS.index(kind) for kind in _RULE_KINDS if kind in KINDS)
_WHITESPACE = frozenset(b" \t\n\v\f\r")
_TOKEN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")
#: What may follow a product token in a user-agent value naming it.
_NOT_TOKEN = frozenset(range(256)) - _TOKEN


class GroupIndex:
    """The groups of one robots.txt body (RFC 9309 2.1), found without tokenizing it all.

    Consecutive user-agent lines start one group, and a user-agent line after a rule
    starts the next; rules before the first user-agent line belong to none. A group runs
    from its first user-agent line to the next group's first one (or the end of the
    file): that range holds all its rules and crawl-delay lines. The user-agent values
    are kept in one list for the whole file (a file may have hundreds of groups), with
    the position of each group's first one.
    """

    __slots__ = ("_agents", "_body", "_first_agents", "_start_lines", "_starts")

    def __init__(self, body: bytes) -> None:
        self._body = body
        #: Where each group starts in the body, in file order; every ``User-agent``
        #: value, as written, in file order; for each group, the index in ``_agents`` of
        #: its first value.
        self._starts, self._agents, self._first_agents = _find_groups(body, body.lower())
        #: The line number of each group's start, worked out for all of them at once on
        #: first use: counted from the start of the body for each group, the first
        #: answers for a crawler took time quadratic in the groups that apply to it.
        self._start_lines: list[int] | None = None

    def __len__(self) -> int:
        return len(self._starts)

    def naming(self, token: bytes) -> list[int]:
        """Indexes of the groups naming ``token`` (a lower-case product token, or ``*``).

        A user-agent value names ``token`` when it starts with it, case aside, and goes
        on with no token character (RFC 9309 2.2.1; see :func:`~.useragent.group_token`);
        ``*`` only when followed by whitespace or nothing. The values that start with
        ``token`` are found at C speed, as most files name few crawlers.
        """
        agents = self._agents
        size = len(token)
        if token == b"*":
            starting = map(bytes.startswith, agents, repeat(token))
            follows = _WHITESPACE
        else:
            starting = map(bytes.startswith, map(bytes.lower, agents), repeat(token))
            follows = _NOT_TOKEN
        named = [
            bisect_right(self._first_agents, position) - 1
            for position in compress(count(), starting)
            if len(agents[position]) == size or agents[position][size] in follows
        ]
        return named if len(named) < 2 else list(dict.fromkeys(named))

    def _bounds(self, index: int) -> tuple[int, int]:
        """Where group ``index`` starts and ends in the body."""
        starts = self._starts
        end = starts[index + 1] if index + 1 < len(starts) else len(self._body)
        return starts[index], end

    def agents(self, index: int) -> list[bytes]:
        """The ``User-agent`` values of group ``index``, as written."""
        first_agents = self._first_agents
        end = first_agents[index + 1] if index + 1 < len(first_agents) else len(self._agents)
        return self._agents[first_agents[index] : end]

    def collect(
        self,
        index: int,
        allows: dict[int, bytes],
        disallows: dict[int, bytes],
        crawl_delays: dict[int, bytes],
    ) -> None:
        """Add the records of group ``index`` to the dicts (line number -> value)."""
        start, end = self._bounds(index)
        lines = split_lines(self._body[start:end])
        _collect(lines, self._start_line(index), allows, disallows, crawl_delays)

    def span(self, index: int) -> tuple[int, int, int]:
        """``(start, end, line number of start)`` of group ``index`` in the body.

        For the records read only on request (``Content-Usage``, ``Content-Signal``,
        which user-agent lines a ``Crawl-delay`` follows): the caller tokenizes
        ``body[start:end]`` itself, so :meth:`collect` stays as lean as it can be.
        """
        start, end = self._bounds(index)
        return start, end, self._start_line(index)

    def _start_line(self, index: int) -> int:
        numbers = self._start_lines
        if numbers is None:
            numbers = self._start_lines = _line_numbers_at(self._body, self._starts)
        return numbers[index]


def _line_numbers_at(body: bytes, offsets: list[int]) -> list[int]:
    """:func:`~.parser.line_number_at` of each of ``offsets`` (line starts, ascending), in
    one pass: a line end never straddles a line start, so the counts between two of
    them add up."""
    numbers = []
    line, previous = 1, 0
    for offset in offsets:
        line += line_number_at(body[previous:offset], offset - previous) - 1
        numbers.append(line)
        previous = offset
    return numbers


def records_of_kind(lines: bytes, lowered: bytes, kind: str, needle: bytes) -> list[Record]:
    """``(line start, line end, value)`` of every ``kind`` record of ``lines``, in order.

    Every such line contains ``needle`` (lower-case) within its first
    :data:`MAX_LINE_OCTETS` octets, so only lines where a C-speed search of
    ``lowered`` (``lines.lower()``) finds it are tokenized, by the rule
    :func:`~.parser.tokenize` uses (its fast path first, as the tokenizer's).
    """
    lowered = _with_line_feeds_only(lowered)
    kind_number = KINDS.index(kind) if kind in KINDS else -1
    records = []
    found = lowered.find(needle)
    while found >= 0:
        start, end = _line_around(lowered, found)
        line = lines[start : min(end, start + MAX_LINE_OCTETS)]
        fast = fast_record(line)
        if fast is None:
            record = classify(line)
            if record is not None and record[0] == kind:
                records.append((start, end, record[1]))
        elif fast[0] == kind_number:
            records.append((start, end, fast[1]))
        found = lowered.find(needle, end)
    return records


def _with_line_feeds_only(lowered: bytes) -> bytes:
    """``lowered`` with every CR made an LF (the same length, the same lines): a line is
    then found by searching for one octet each way, and the searches stop at the nearest
    line break of either kind. Searching for both kinds, a file of CR-only line ends took
    time quadratic in its lines (each search for an LF ran to an end of the body)."""
    return lowered.replace(b"\r", b"\n") if 13 in lowered else lowered  # b"\r"


def _line_around(lowered: bytes, found: int) -> tuple[int, int]:
    """Start and end (its line break, or the end of the body) of the line holding
    ``found``, in a lowered body with line feeds only (``_with_line_feeds_only``)."""
    start = lowered.rfind(b"\n", 0, found) + 1
    end = lowered.find(b"\n", found)
    return start, (len(lowered) if end < 0 else end)


def _has_rule(body: bytes, lowered: bytes, start: int, end: int) -> bool:
    """Whether a line of ``body[start:end]`` (whole lines) is a rule record (even empty).

    Only lines holding a piece of a rule's key (:data:`~.parser.RULE_KEY`) are
    classified, found by a C-speed search of ``lowered``; the first one usually is.
    """
    found = RULE_KEY.search(lowered, start, end)
    while found is not None:
        line_start, line_end = _line_around(lowered, found.start())
        line = body[line_start : min(line_end, line_start + MAX_LINE_OCTETS)]
        record = fast_record(line)
        if record is not None:
            if record[0] in _RULE_KIND_NUMBERS:
                return True
        else:
            classified = classify(line)
            if classified is not None and classified[0] in _RULE_KINDS:
                return True
        found = RULE_KEY.search(lowered, line_end, end)
    return False


def _find_groups(body: bytes, lowered: bytes) -> tuple[list[int], list[bytes], list[int]]:
    """Group starts, user-agent values and each group's first value (see :class:`GroupIndex`)."""
    starts: list[int] = []
    agents: list[bytes] = []
    first_agents: list[int] = []
    lowered = _with_line_feeds_only(lowered)
    previous_end = -1
    for start, end, agent in records_of_kind(body, lowered, "user_agent", b"agent"):
        # Most user-agent lines follow another, or a rule at once: the search answers.
        if previous_end < 0 or (
            RULE_KEY.search(lowered, previous_end, start) is not None
            and _has_rule(body, lowered, previous_end, start)
        ):
            starts.append(start)
            first_agents.append(len(agents))
        agents.append(agent)
        previous_end = end
    return starts, agents, first_agents


def _collect(
    lines: list[bytes],
    first_line_no: int,
    allows: dict[int, bytes],
    disallows: dict[int, bytes],
    crawl_delays: dict[int, bytes],
) -> None:
    """:func:`~.parser.tokenize_lines` with a :class:`_RuleCollector`, its loop specialised.

    The lines its fast path takes (nearly all of a group's) are filed here, with no call
    per line; every other line goes through ``tokenize_lines`` itself, in line order.
    """
    tables = (None, allows, disallows, None, crawl_delays)  # by kind number, as KINDS
    kind_of_key = KIND_OF_KEY
    collector = None
    for line_no, line in enumerate(lines, first_line_no):
        key, colon, value = line.partition(b":")
        if colon:
            kind = kind_of_key.get(key)
            if kind is None:
                kind = kind_of_key.get(key.lower())
            if kind is not None:
                table = tables[kind]
                if table is not None:
                    if 35 in value:  # b"#": an int, as in tokenize_lines
                        value = value[: value.index(35)]
                    table[line_no] = value.strip()
                continue
            # Skipped as tokenize_lines skips them, without a call: a comment (a "#"
            # with nothing before it), an unknown key that no known one starts.
            if 35 in key:
                if not key[: key.index(35)].strip():
                    continue
            elif not key.lower().lstrip().startswith(CLASSIFIED_PREFIXES):
                continue
        else:  # the common colon-less lines (comments, blank lines, prose) likewise
            uncommented = line.partition(b"#")[0]
            if len(uncommented.split(None, 2)) != 2 and not (
                b"\x0b" in uncommented or b"\x0c" in uncommented
            ):
                continue
        if collector is None:
            collector = _RuleCollector(allows, disallows, crawl_delays)
        tokenize_lines([line], collector, line_no)


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
