"""Compiled allow/disallow patterns and the longest-match decision (RFC 9309 section 2.2.2-2.2.3).

No regular expression is ever built from a pattern: a pattern is split on ``*`` into
literal pieces; the first piece must be a prefix of the path, the others are found
left-most in order with ``str.find``, and a trailing ``$`` pins the last piece to the
end of the path. Greedy left-most placement is exact for ``*``-only globs, and each
match costs time linear in the path length.
"""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_rep9309.urlnorm import normalise_octets

#: A raw rule as read from the file: (is_allow, value as written, 1-based line number).
RawRule = tuple[bool, bytes, int]


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

    def text(self) -> str:
        """Return the rule as written, e.g. ``Disallow: /private``."""
        key = "Allow" if self.allow else "Disallow"
        return f"{key}: {self.value.decode('utf-8', 'replace')}"


def _index_html_directory(value: bytes) -> bytes | None:
    """Google's rule: ``Allow: /dir/index.htm[l]`` also allows ``/dir/`` itself."""
    slash = value.rfind(b"/")
    if slash >= 0 and value.startswith(b"/index.htm", slash):
        return value[: slash + 1] + b"$"
    return None


class RuleSet:
    """The rules of the group(s) that apply to one crawler, ready for decisions."""

    __slots__ = ("rules",)

    def __init__(self, raw_rules: Iterable[RawRule]) -> None:
        compiled: list[CompiledRule] = []
        for allow, value, line in raw_rules:
            if not value:
                continue
            compiled.append(CompiledRule(allow, value, line, value))
            if allow:
                directory = _index_html_directory(value)
                if directory is not None:
                    compiled.append(CompiledRule(allow, value, line, directory))
        # Longest first; on equal length allow first: the first match decides.
        compiled.sort(key=lambda rule: (-rule.priority, not rule.allow, rule.line))
        self.rules = tuple(compiled)

    def decide(self, path: str) -> CompiledRule | None:
        """Return the rule that decides for normalised ``path``, or ``None`` when none matches."""
        for rule in self.rules:
            if rule.matches(path):
                return rule
        return None
