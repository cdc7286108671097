"""Allow/disallow patterns and the longest-match decision (RFC 9309 sections 2.2.2-2.2.3).

No regular expression is ever built from a pattern. A pattern with ``*`` or a final
``$`` is split on ``*`` into literal pieces: the first must be a prefix of the path,
the others are found left-most in order with ``str.find``, and a trailing ``$`` pins
the last piece to the end of the path. Greedy left-most placement is exact for
``*``-only globs, and each match costs time linear in the path length. A pattern
without either (by far the most common) is a plain prefix, kept in a dict.

A match is described by its :data:`MatchKey` ``(octets, is_allow, -line)``: the best
match is simply the largest key (longest pattern; allow wins a tie; then the earliest
line), as RFC 9309 section 2.2.2 orders them.

For speed, rules are filed in buckets by the first :data:`BUCKET_KEY_LENGTH` octets of
their value, and a bucket is only normalised and compiled the first time a path with
that start asks for a decision; values whose first octets are not already normalised
(or hold ``*``/``$``) go to a "short" bucket that every decision consults.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import partial
from itertools import compress, count, repeat
from operator import contains, itemgetter, neg
from typing import TYPE_CHECKING

from scrapy_rep9309.rules.urlnorm import (
    KEPT_AS_IS,
    clean_http_url,
    normalise_octets,
    normalised_path,
)

if TYPE_CHECKING:
    from scrapy_rep9309.rules.core import GroupIndexProtocol

BUCKET_KEY_LENGTH = 4
#: RFC 9309 2.2.2: "The /robots.txt URI is implicitly allowed": the URL whose normalised
#: path and query are exactly this (``/robots.txt?x=1`` is another resource, decided by
#: the rules). The one place this rule lives; the C twin of ``RuleSet.allowed`` mirrors it.
ROBOTS_TXT_PATH = "/robots.txt"
#: ``(pattern length in octets, is_allow, -line number)``: larger is better.
MatchKey = tuple[int, bool, int]

_NOT_KEPT_AS_IS = re.compile(f"[^{KEPT_AS_IS}]".encode("ascii"))
_NOT_KEPT_EXCEPT_STAR = re.compile(f"[^*{KEPT_AS_IS}]".encode("ascii"))
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
#: The longest of a pattern's pieces (the first of the longest).
_LONGEST = partial(max, key=len)
_IS_POSITIVE = (0).__lt__
_FIRST_OCTETS = itemgetter(slice(0, BUCKET_KEY_LENGTH))
_KEPT_OCTETS = bytes(octet for octet in range(128) if not _NOT_KEPT_AS_IS.match(bytes((octet,))))
_KEPT_OR_STAR = _KEPT_OCTETS + b"*"


class WildcardRule:
    """A pattern with ``*`` or a final ``$`` (or one that normalises to a plain prefix)."""

    __slots__ = ("anchored", "first", "key", "last", "middle", "needle")

    def __init__(self, allow: bool, line: int, pattern: bytes | str) -> None:
        """``pattern`` as written (bytes), or already normalised (text, ``*`` and a final
        ``$`` as written: the compilation of a bucket normalises many at once)."""
        if isinstance(pattern, bytes):
            pattern = _normalised_pattern(pattern)
        self.anchored = anchored = pattern.endswith("$")
        pieces = (pattern[:-1] if anchored else pattern).split("*")
        self.first = first = pieces[0]
        #: The longest literal piece: a path this rule matches must contain it. Most
        #: patterns have one "*" at most: those spare max(), the costliest step here.
        self.needle = first
        self.middle: tuple[str, ...] = ()
        self.last: str | None = None
        if len(pieces) == 2:
            self.last = last = pieces[1]
            if len(last) > len(first):
                self.needle = last
        elif len(pieces) > 2:
            self.middle = tuple(pieces[1:-1])
            self.last = pieces[-1]
            self.needle = max(pieces, key=len)
        #: RFC 9309: the most specific match has the most octets; like Google's library,
        #: a pattern's ``*`` and ``$`` count too.
        self.key: MatchKey = (len(pattern), allow, -line)

    def matches(self, path: str) -> bool:
        """Return whether this pattern matches ``path`` (already normalised) from its start."""
        if not path.startswith(self.first):
            return False
        last = self.last
        if last is None:
            return not self.anchored or len(path) == len(self.first)
        if self.anchored and not path.endswith(last):  # cheapest test first
            return False
        position = len(self.first)
        for piece in self.middle:
            found = path.find(piece, position)
            if found < 0:
                return False
            position = found + len(piece)
        if self.anchored:
            return len(path) - len(last) >= position
        return path.find(last, position) >= 0


def _normalised_pattern(value: bytes) -> str:
    """``value`` normalised (:func:`~.urlnorm.normalise_octets`) but its ``*`` and final ``$``."""
    rest = value.translate(None, _KEPT_OR_STAR)
    if not rest or (rest == b"$" and value.endswith(b"$")):  # nothing to change
        return value.decode("ascii")
    anchored = value.endswith(b"$")
    if anchored:
        value = value[:-1]
    if _NOT_KEPT_EXCEPT_STAR.search(value) is None:
        text = value.decode("ascii")
    else:
        text = "*".join([normalise_octets(piece) for piece in value.split(b"*")])
    return text + "$" if anchored else text


def _only_wildcards_unkept(blob: bytes, unkept: bytes) -> bool:
    """Whether the values of ``blob`` (joined by newlines, holding none) are all normalised
    already but for their ``*`` and a final ``$``; ``unkept`` is what of ``blob`` is not
    kept as is."""
    wildcards = unkept.count(b"*") + unkept.count(b"$")
    return len(unkept) == unkept.count(b"\n") + wildcards and blob.count(b"$") == (
        blob.count(b"$\n") + blob.endswith(b"$")
    )


def index_html_directory(value: bytes) -> bytes | None:
    """Google's rule: ``Allow: /dir/index.htm[l]`` also allows ``/dir/`` itself (``/dir/$``)."""
    slash = value.rfind(b"/")
    if slash >= 0 and value.startswith(b"/index.htm", slash):
        return value[: slash + 1] + b"$"
    return None


class _Pending:
    """Rules before compilation: line numbers only (ints cost the garbage collector nothing).

    ``index_pages`` are lines of ``Allow: .../index.htm*`` whose extra ``.../$`` rule
    belongs here; ``None`` asks the compilation to find them among ``allows``.
    """

    __slots__ = ("allows", "disallows", "index_pages")

    def __init__(
        self, allows: list[int], disallows: list[int], index_pages: list[int] | None
    ) -> None:
        self.allows = allows
        self.disallows = disallows
        self.index_pages = index_pages


class _Bucket:
    """Compiled rules organised so that a decision touches as few of them as possible.

    Plain prefixes sit in a dict (prefix -> signed line: positive allows), so the
    longest one matching a path costs one lookup per distinct prefix length; the other
    rules are tried best first, only those whose longest literal piece is in the path.
    Both kinds are skipped at C speed when nothing can match. Compiling values
    that need no normalisation (the usual case) takes a handful of C-level calls.
    """

    __slots__ = (
        "_wild_rules",
        "lengths",
        "needles",
        "plain",
        "plain_firsts",
        "screen",
        "wild",
        "wild_keys",
    )

    def __init__(
        self, pending: _Pending, allows: dict[int, bytes], disallows: dict[int, bytes]
    ) -> None:
        self.plain: dict[str, int] = {}
        wild: list[str] = []
        wild_lines: list[int] = []  # signed, as in ``plain``
        index_pages = pending.index_pages or []
        # Disallows first so that an allow with the same prefix replaces it (allow wins a
        # tie); lines reversed so that the earliest of identical rules is kept.
        for sign, lines, table in ((-1, pending.disallows, disallows), (1, pending.allows, allows)):
            if not lines:
                continue
            lines = lines[::-1]
            values = list(map(table.__getitem__, lines))
            if b"" in values:  # RFC 9309: an empty value matches nothing
                lines = [line for line, value in zip(lines, values, strict=True) if value]
                values = list(filter(None, values))
                if not values:
                    continue
            blob = b"\n".join(values)
            if sign > 0 and pending.index_pages is None and b"/index.htm" in blob:
                index_pages = [line for line in lines if b"/index.htm" in table[line]]
            # The joining newlines, wildcards and whatever needs normalising: usually only
            # the newlines. (Values read from a file hold no newline; other ones may.)
            unkept = blob.translate(None, _KEPT_OCTETS)
            if len(unkept) == len(values) - 1:  # all plain and normalised
                prefixes = blob.decode("ascii").split("\n")
                self.plain.update(zip(prefixes, map(sign.__mul__, lines), strict=True))
                continue
            # Normalised at once but for "*" and a final "$" (most often there is nothing
            # to change), then split: the earliest line of identical values is kept.
            if unkept.count(b"\n") == len(values) - 1 and _only_wildcards_unkept(blob, unkept):
                texts = blob.decode("ascii").split("\n")
            else:  # one by one: most of them still need nothing
                texts = list(map(_normalised_pattern, values))
            signed = dict(zip(texts, map(sign.__mul__, lines), strict=True))
            wildcards = [text for text in signed if "*" in text or "$" in text]
            wild += wildcards
            wild_lines += map(signed.pop, wildcards)
            self.plain.update(signed)
        for line in index_pages:
            directory = index_html_directory(allows[line])
            if directory is not None:
                wild.append(_normalised_pattern(directory))
                wild_lines.append(line)
        self.plain_firsts = tuple(self.plain)
        self.lengths = tuple(sorted(set(map(len, self.plain_firsts)), reverse=True))
        #: A path that starts with none of these matches no rule of the bucket.
        self.screen = self.plain_firsts
        #: The patterns with ``*`` or a final ``$`` (normalised), best first, their match
        #: keys, and for each a piece any path it matches contains (the longest).
        self.wild: tuple[str, ...] = ()
        self.wild_keys: tuple[MatchKey, ...] = ()
        self.needles: tuple[str, ...] = ()
        #: Each pattern of ``wild`` made a :class:`WildcardRule` when a path first holds
        #: its needle (few do): a bucket is compiled at C speed, without one object per rule.
        self._wild_rules: list[WildcardRule | None] = []
        if wild:
            allow = map(_IS_POSITIVE, wild_lines)
            keys = zip(map(len, wild), allow, map(neg, map(abs, wild_lines)), strict=True)
            ranked = sorted(zip(keys, wild, strict=True), key=_FIRST, reverse=True)
            self.wild_keys = tuple(map(_FIRST, ranked))
            self.wild = tuple(map(_SECOND, ranked))
            unanchored = map(str.removesuffix, self.wild, repeat("$"))
            pieces = list(map(str.split, unanchored, repeat("*")))
            # First: a wildcard rule's first piece is often "/", which every path starts
            # with, and ``str.startswith`` stops at the first prefix that matches.
            self.screen = tuple(map(_FIRST, pieces)) + self.screen
            self.needles = tuple(map(_LONGEST, pieces))
            self._wild_rules = [None] * len(wild)

    @classmethod
    def of_plain(cls, allows: dict[int, bytes], disallows: dict[int, bytes]) -> _Bucket | None:
        """The bucket of rules that are all plain, normalised, non-empty prefixes with no
        index page (most small rule sets), built in a few C-level calls; else ``None``.

        The same dict as the general compilation's: disallows first so that an allow of
        the same prefix replaces one, each table in reverse line order so that the
        earliest of identical rules is kept.
        """
        values = [*allows.values(), *disallows.values()]
        blob = b"\n".join(values)
        if (
            # Only the joining newlines are not kept as is (a value may hold one, if not
            # read from a file: then there are more).
            len(blob.translate(None, _KEPT_OCTETS)) != len(values) - 1
            or b"" in values
            or b"/index.htm" in blob
        ):
            return None
        prefixes = blob.decode("ascii").split("\n")
        signed_lines = [*allows, *map(neg, disallows)]
        bucket = cls.__new__(cls)
        bucket.plain = plain = dict(zip(reversed(prefixes), reversed(signed_lines), strict=True))
        bucket.plain_firsts = bucket.screen = plain_firsts = tuple(plain)
        bucket.lengths = tuple(sorted(set(map(len, plain_firsts)), reverse=True))
        bucket.wild = bucket.needles = bucket.wild_keys = ()
        bucket._wild_rules = []
        return bucket

    @classmethod
    def of_prefix(cls, prefix: str, signed_line: int) -> _Bucket:
        """The bucket of one plain, normalised prefix, built directly."""
        bucket = cls.__new__(cls)
        bucket.plain = {prefix: signed_line}
        bucket.plain_firsts = bucket.screen = (prefix,)
        bucket.lengths = (len(prefix),)
        bucket.wild = bucket.needles = bucket.wild_keys = ()
        bucket._wild_rules = []
        return bucket

    def best(self, path: str, best: MatchKey | None) -> MatchKey | None:
        """Return the best of ``best`` and this bucket's rules matching ``path``."""
        if path.startswith(self.plain_firsts):
            plain = self.plain
            for length in self.lengths:
                prefix = path[:length]
                line = plain.get(prefix)
                if line is not None:
                    key = (len(prefix), line > 0, -abs(line))
                    if best is None or key > best:
                        best = key
                    break
        # Most paths hold no rule's longest piece: a plain loop tells at once (building
        # the iterators below would cost more than the loop).
        for needle in self.needles:
            if needle in path:
                break
        else:
            return best
        # Only rules whose longest piece occurs in the path, in order.
        keys = self.wild_keys
        for index in compress(count(), map(contains, repeat(path), self.needles)):
            key = keys[index]
            if best is not None and key <= best:
                break
            rule = self._wild_rules[index] or self._wild_rule(index)
            if rule.matches(path):
                return key
        return best

    def _wild_rule(self, index: int) -> WildcardRule:
        """Pattern ``index`` of ``wild``, compiled (kept for the next paths)."""
        _, allow, line = self.wild_keys[index]
        rule = self._wild_rules[index] = WildcardRule(allow, -line, self.wild[index])
        return rule


#: Up to this many rules, a rule set is one bucket: compiling it all at once is cheaper
#: than filing each rule and compiling a bucket for each new path start (measured on the
#: corpora: 100 rather than 64 spares a crawl checking a few paths per site many
#: compilations for a little more on the first decision), and a decision still looks at
#: few prefixes.
SMALL_RULE_SET = 100


class RuleSet:
    """The rules of the group(s) that apply to one crawler, ready for decisions.

    ``allows`` and ``disallows`` map line numbers to values as written.
    """

    __slots__ = ("_allows", "_buckets", "_disallows", "_filed", "_short", "_unfiled", "screen")

    def __init__(self, allows: dict[int, bytes], disallows: dict[int, bytes]) -> None:
        self._allows = allows
        self._disallows = disallows
        #: Compiled buckets by the first octets of the paths they can match.
        self._buckets: dict[str, _Bucket] = {}
        #: Of a large rule set, the lines not compiled yet: allows, disallows and index
        #: pages (see :class:`_Pending`), each by the first octets of their values.
        self._filed: tuple[dict[bytes, list[int]], ...] = ()
        #: The path starts that have lines in ``_filed``.
        self._unfiled: set[str] = set()
        self._short: _Bucket | None = None
        #: A path that starts with none of these matches no rule: a caller's cheapest
        #: test, answering most decisions without a call. Only a small rule set has
        #: them all compiled; a large one's are unknown until its buckets are.
        self.screen: tuple[str, ...] = ("",)
        if len(allows) + len(disallows) <= SMALL_RULE_SET:
            self.screen = ()
            if allows or disallows:
                short = _Bucket.of_plain(allows, disallows)
                if short is None:
                    pending = _Pending(list(allows), list(disallows), None)
                    short = _Bucket(pending, allows, disallows)
                self._short = short
                self.screen = short.screen
            return
        # File lines by the first octets of their values, one C-level append each (in
        # the order of the tables: line order, as a bucket expects).
        self._filed = filed = (defaultdict(list), defaultdict(list), defaultdict(list))
        for table, by_octets in ((allows, filed[0]), (disallows, filed[1])):
            for octets, line in zip(map(_FIRST_OCTETS, table.values()), table, strict=True):
                by_octets[octets].append(line)
        if b"/index.htm" in b"\n".join(allows.values()):
            for line, value in allows.items():
                directory = index_html_directory(value)
                if directory is not None:
                    filed[2][directory[:BUCKET_KEY_LENGTH]].append(line)
        # Only octets that need no normalisation (and hold no "*" or "$") are exactly
        # the start of the normalised pattern, like the path's key; the rules filed
        # under any other octets are consulted by every decision, compiled now.
        starts = {**filed[0], **filed[1], **filed[2]}
        joined = b"\n".join(starts)  # all clean: 4 kept octets each, then a newline
        if (
            len(joined) != len(starts) * (BUCKET_KEY_LENGTH + 1) - 1
            or len(joined.translate(None, _KEPT_OCTETS)) != len(starts) - 1
        ):
            short = _Pending([], [], [])
            for octets in starts:
                if len(octets) != BUCKET_KEY_LENGTH or octets.translate(None, _KEPT_OCTETS):
                    short.allows += filed[0].pop(octets, ())
                    short.disallows += filed[1].pop(octets, ())
                    short.index_pages += filed[2].pop(octets, ())  # type: ignore[operator]
            # Gathered from several starts: back in line order, which ``_Bucket`` keeps
            # (the earliest of identical rules is the one named).
            short.allows.sort()
            short.disallows.sort()
            short.index_pages.sort()  # type: ignore[union-attr]
            self._short = _Bucket(short, allows, disallows)
            starts = {**filed[0], **filed[1], **filed[2]}
        if starts:  # decoded at once: each is 4 kept octets, ASCII
            self._unfiled = set(b"\n".join(starts).decode("ascii").split("\n"))
        else:  # every rule is in the short bucket
            self._filed = ()

    def _compile(self, key: str) -> _Bucket:
        """Compile the rules filed under the path start ``key`` (one of ``_unfiled``)."""
        self._unfiled.discard(key)
        octets = key.encode("ascii")
        allows, disallows, index_pages = self._filed
        pending = _Pending(
            allows.pop(octets, []), disallows.pop(octets, []), index_pages.pop(octets, [])
        )
        bucket = None
        if len(pending.allows) + len(pending.disallows) == 1 and not pending.index_pages:
            # Most buckets of a large rule set hold one rule, most often a plain prefix.
            sign, lines, table = (
                (1, pending.allows, self._allows)
                if pending.allows
                else (-1, pending.disallows, self._disallows)
            )
            value = table[lines[0]]
            if value and not value.translate(None, _KEPT_OCTETS):  # plain and normalised
                bucket = _Bucket.of_prefix(value.decode("ascii"), sign * lines[0])
        if bucket is None:
            bucket = _Bucket(pending, self._allows, self._disallows)
        self._buckets[key] = bucket
        return bucket

    @classmethod
    def from_groups(cls, groups: GroupIndexProtocol, indexes: Iterable[int]) -> RuleSet:
        """The merged rules of the groups ``indexes`` of ``groups`` (a ``GroupIndex``)."""
        allows: dict[int, bytes] = {}
        disallows: dict[int, bytes] = {}
        crawl_delays: dict[int, bytes] = {}
        for index in indexes:
            groups.collect(index, allows, disallows, crawl_delays)
        return cls(allows, disallows)

    def written(self, key: MatchKey) -> bytes:
        """The value of the rule a match key of :meth:`decide` stands for, as written."""
        _, allow, line = key
        return (self._allows if allow else self._disallows)[-line]

    def decide(self, path: str) -> MatchKey | None:
        """Return the key of the best rule matching normalised ``path``; ``None`` if none does."""
        best = None
        if self._filed:
            key = path[:BUCKET_KEY_LENGTH]
            bucket = self._buckets.get(key)
            if bucket is None and key in self._unfiled:
                bucket = self._compile(key)
            if bucket is not None:
                best = bucket.best(path, None)
        return best if self._short is None else self._short.best(path, best)

    def allowed(self, url: str) -> bool:
        """Whether ``url`` (absolute, or a path) may be fetched: ``/robots.txt`` always may."""
        if not self.screen:  # no rule at all: no need to read the URL
            return True
        clean = clean_http_url(url)
        path = clean[1] if clean is not None else normalised_path(url)
        # Most paths match no rule: answer those here, without a call (see ``screen``).
        if not path.startswith(self.screen) or path == ROBOTS_TXT_PATH:
            return True
        if self._filed:
            match = self.decide(path)
        else:  # one bucket holds every rule (a small set): ask it directly
            match = self._short.best(path, None)  # type: ignore[union-attr]
        return match is None or match[1]


def is_robots_txt(url: str) -> bool:
    """Whether ``url`` (absolute, or a path) is the always-allowed ``/robots.txt``."""
    return normalised_path(url) == ROBOTS_TXT_PATH
