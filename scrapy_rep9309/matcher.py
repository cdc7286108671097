"""Compiled allow/disallow patterns and the longest-match decision (RFC 9309 section 2.2.2-2.2.3).

No regular expression is ever built from a pattern: a pattern is split on ``*`` into
literal pieces; the first piece must be a prefix of the path, the others are found
left-most in order with ``str.find``, and a trailing ``$`` pins the last piece to the
end of the path. Greedy left-most placement is exact for ``*``-only globs, and each
match costs time linear in the path length.

For speed, rules are kept in buckets keyed by the first :data:`BUCKET_KEY_LENGTH`
characters of their literal prefix, and a bucket is only normalised and compiled the
first time a path needs it: a decision looks at one bucket plus the few rules whose
literal prefix is shorter than the key (``/``, ``/*.php$``, ...).
"""

from __future__ import annotations

import re
from itertools import islice

from scrapy_rep9309.urlnorm import KEPT_AS_IS, normalise_octets

BUCKET_KEY_LENGTH = 4
_NOT_KEPT_AS_IS = re.compile(f"[^{KEPT_AS_IS}]".encode("ascii"))
_NOT_KEPT_EXCEPT_STAR = re.compile(f"[^*{KEPT_AS_IS}]".encode("ascii"))
_KEPT_OCTETS = bytes(octet for octet in range(128) if not _NOT_KEPT_AS_IS.match(bytes((octet,))))


class CompiledRule:
    """One allow/disallow pattern, normalised and split for matching."""

    __slots__ = ("allow", "anchored", "first", "last", "line", "middle", "priority", "value")

    def __init__(self, allow: bool, value: bytes, line: int, pattern: bytes) -> None:
        self.allow = allow
        self.value = value
        self.line = line
        self.anchored = pattern.endswith(b"$")
        if self.anchored:
            pattern = pattern[:-1]
        if _NOT_KEPT_EXCEPT_STAR.search(pattern) is None:  # the usual case: nothing to normalise
            pieces = pattern.decode("ascii").split("*")
        else:
            pieces = [normalise_octets(piece) for piece in pattern.split(b"*")]
        self.first = pieces[0]
        self.middle = tuple(pieces[1:-1])
        self.last: str | None = pieces[-1] if len(pieces) > 1 else None
        #: RFC 9309: the most specific match is the one with the most octets; a pattern's
        #: length counts its ``*`` and ``$`` too, as in Google's library.
        self.priority = sum(map(len, pieces)) + len(pieces) - 1 + self.anchored

    def matches(self, path: str) -> bool:
        """Return whether this pattern matches ``path`` (already normalised) from its start."""
        if not path.startswith(self.first):
            return False
        last = self.last
        if last is None:
            return not self.anchored or len(path) == len(self.first)
        position = len(self.first)
        for piece in self.middle:
            found = path.find(piece, position)
            if found < 0:
                return False
            position = found + len(piece)
        if self.anchored:
            return path.endswith(last) and len(path) - len(last) >= position
        return path.find(last, position) >= 0

    def beats(self, other: CompiledRule | None) -> bool:
        """Return whether this rule wins over ``other`` when both match (longest; allow on ties)."""
        if other is None or self.priority > other.priority:
            return True
        return self.priority == other.priority and self.allow and not other.allow

    def text(self) -> str:
        """Return the rule as written, e.g. ``Disallow: /private``."""
        key = "Allow" if self.allow else "Disallow"
        return f"{key}: {self.value.decode('utf-8', 'replace')}"


class _Bucket:
    """Compiled rules sorted so that the first matching one is the best of the bucket."""

    __slots__ = ("firsts", "rules")

    def __init__(self, rules: list[CompiledRule]) -> None:
        rules.sort(key=lambda rule: (-rule.priority, not rule.allow, rule.line))
        self.rules = tuple(rules)
        #: Every literal prefix, for one C-speed "could anything here match?" test.
        self.firsts = tuple({rule.first for rule in rules})

    def best(self, path: str, incumbent: CompiledRule | None) -> CompiledRule | None:
        """Return the best rule among ``incumbent`` and this bucket's matching rules."""
        if not path.startswith(self.firsts):
            return incumbent
        for rule in self.rules:
            if incumbent is not None and not rule.beats(incumbent):
                return incumbent
            if rule.matches(path):
                return rule
        return incumbent


_EMPTY_BUCKET = _Bucket([])


def _index_html_directory(value: bytes) -> bytes | None:
    """Google's rule: ``Allow: /dir/index.htm[l]`` also allows ``/dir/`` itself."""
    slash = value.rfind(b"/")
    if slash >= 0 and value.startswith(b"/index.htm", slash):
        return value[: slash + 1] + b"$"
    return None


#: Where a group's rules are: a rule table (line number -> value) and a slice of it.
RuleSource = tuple[dict[int, bytes], int, int]


class RuleSet:
    """The rules of the group(s) that apply to one crawler, ready for decisions.

    Rules are filed by line number only (ints cost the garbage collector nothing);
    values are looked up in the allow/disallow tables when a bucket is compiled. A
    negative line number stands for Google's extra ``index.html`` rule of that line.
    """

    __slots__ = ("_allows", "_buckets", "_disallows", "_short")

    def __init__(
        self, allows: dict[int, bytes], disallows: dict[int, bytes], sources: list[RuleSource]
    ) -> None:
        self._allows = allows
        self._disallows = disallows
        by_octets: dict[bytes, list[int]] = {}
        for table, start, stop in sources:
            for line, value in islice(table.items(), start, stop):
                key = value[:BUCKET_KEY_LENGTH]
                lines = by_octets.get(key)
                if lines is None:
                    by_octets[key] = [line]
                else:
                    lines.append(line)
            if table is allows:
                for line, value in islice(table.items(), start, stop):
                    if b"/index.htm" in value:
                        directory = _index_html_directory(value)
                        if directory is not None:
                            by_octets.setdefault(directory[:BUCKET_KEY_LENGTH], []).append(-line)
        self._buckets: dict[str, _Bucket | list[int]] = {}
        short: list[int] = []
        for octets, lines in by_octets.items():
            # Only octets that need no normalisation (and hold no "*" or "$") are
            # exactly the start of the normalised literal prefix.
            if len(octets) == BUCKET_KEY_LENGTH and not octets.translate(None, _KEPT_OCTETS):
                self._buckets[octets.decode("ascii")] = lines
            else:
                short.extend(lines)
        self._short = self._compile(short) if short else _EMPTY_BUCKET

    def _compile(self, lines: list[int]) -> _Bucket:
        rules = []
        for line in lines:
            if line < 0:
                value = self._allows[-line]
                pattern = _index_html_directory(value)
                rules.append(CompiledRule(True, value, -line, pattern or value))
                continue
            value = self._allows.get(line)
            allow = value is not None
            if value is None:
                value = self._disallows[line]
            if value:
                rules.append(CompiledRule(allow, value, line, value))
        return _Bucket(rules)

    def decide(self, path: str) -> CompiledRule | None:
        """Return the rule that decides for normalised ``path``, or ``None`` when none matches."""
        key = path[:BUCKET_KEY_LENGTH]
        bucket = self._buckets.get(key)
        if bucket is None:
            best = None
        else:
            if bucket.__class__ is list:
                bucket = self._buckets[key] = self._compile(bucket)  # type: ignore[arg-type]
            best = bucket.best(path, None)  # type: ignore[union-attr]
        return self._short.best(path, best)
