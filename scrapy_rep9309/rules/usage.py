"""Usage preferences stated in robots.txt: ``Content-Usage`` rules and ``Content-Signal`` lines.

``Content-Usage`` is the IETF AI Preferences working group's rule
(draft-ietf-aipref-attach-05, which updates RFC 9309), with the statement of preference
of draft-ietf-aipref-vocab: an RFC 9651 Structured Fields Dictionary such as
``train-ai=n, search=y``. A rule may carry a path, matched like ``Allow``/``Disallow``
paths; preferences exist only for URLs the same group allows.

``Content-Signal`` is Cloudflare's Content Signals Policy: ``search=yes, ai-train=no``,
for the whole group.

Both are read only when asked for (see :class:`~scrapy_rep9309.rules.robotstxt.RobotsTxt`),
so deciding whether a URL may be crawled never pays for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from scrapy_rep9309.rules.matcher import WildcardRule

#: The labels of draft-ietf-aipref-vocab's categories of use, in its order. Other labels
#: are ignored (the draft: "any unknown labels MUST be ignored").
VOCABULARY = ("train-ai", "search")
#: An explicit preference: ``y`` allows the category of use, ``n`` disallows it.
ALLOW, DISALLOW = "y", "n"

#: Content-Signal keys with a draft-ietf-aipref-vocab counterpart. ``ai-input`` (content
#: used as input to an AI model answering now: grounding, retrieval) has none: ``search``
#: excludes generated summaries and ``train-ai`` is about changing a model's parameters.
CONTENT_SIGNAL_LABELS = {"ai-train": "train-ai", "search": "search"}
SIGNAL_YES, SIGNAL_NO = "yes", "no"
_SIGNAL_VALUES = {SIGNAL_YES: ALLOW, SIGNAL_NO: DISALLOW}


def vocabulary_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """``labels`` read as labels of the vocabulary (any case), each once, in order;
    ValueError names one that is not (with its label if it is a Content-Signal key).
    The one rule for ``REP9309_REQUIRE_USAGE`` and ``check --require-usage``."""
    read = [label.strip().lower() for label in labels if label.strip()]
    for label in read:
        if label in VOCABULARY:
            continue
        hint = ""
        if label in CONTENT_SIGNAL_LABELS:
            mapped = CONTENT_SIGNAL_LABELS[label]
            hint = f" ({label!r} is a Content-Signal key: its label is {mapped!r})"
        raise ValueError(
            f"unknown label {label!r}; the vocabulary's labels are {', '.join(VOCABULARY)}{hint}"
        )
    return tuple(dict.fromkeys(read))


_BLANK = re.compile(rb"[ \t]")
_SIGNAL_KEY = re.compile(r"[a-z0-9][a-z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class Preference:
    """One usage preference of a URL and the ``Content-Usage`` rule that stated it."""

    #: A vocabulary label: ``"train-ai"`` or ``"search"``.
    label: str
    #: ``"y"`` (allowed) or ``"n"`` (disallowed).
    value: str
    #: The rule as written, e.g. ``"Content-Usage: /ai-ok/ train-ai=y"``.
    rule: str
    #: 1-based line number of ``rule``.
    line: int


def most_restrictive(values: Iterable[str | None]) -> str | None:
    """draft-ietf-aipref-vocab 5.1: any ``n`` wins, then any ``y``; otherwise unknown."""
    found = set(values)
    if DISALLOW in found:
        return DISALLOW
    return ALLOW if ALLOW in found else None


def split_rule_value(value: bytes) -> tuple[bytes | None, bytes]:
    """Return the path (``None`` when absent) and the statement of a Content-Usage value.

    draft-ietf-aipref-attach 3.2: a value starting with ``/`` carries a path, which ends
    just before the first SP or HTAB; the rest is the statement of preference (without
    the SP and HTAB that separate them: the ABNF's ``path-pattern 1*WS``). Any other
    value is a statement without a path.
    """
    if value[:1] != b"/":
        return None, value
    blank = _BLANK.search(value)
    if blank is None:
        return value, b""
    return value[: blank.start()], value[blank.start() :].lstrip(b" \t")


#: Statements up to this long are kept in a cache of 256 (the same few statements come
#: in every response of an origin); longer ones are parsed each time, so a server's huge
#: header fields are not kept.
_CACHED_STATEMENT_OCTETS = 1024
#: A ``Content-Usage`` field longer than this (its lines joined) states nothing, parsed
#: or not. RFC 9651 asks parsers to take Dictionaries of 1,024 members with 64-character
#: keys (about 70 KB); a server could send megabytes, parsed in the event loop.
MAX_FIELD_OCTETS = 128 * 1024


def statement_preferences(statement: bytes) -> tuple[tuple[str, str], ...]:
    """The ``(label, "y" | "n")`` pairs a statement of preference states, in vocabulary order.

    draft-ietf-aipref-vocab 6.5: the octets are parsed as an RFC 9651 Dictionary; if that
    fails, every preference is unknown (so ``Train-AI=n``, with an upper-case key, states
    nothing). Of each vocabulary label, the value only counts when it is the Token ``y``
    or ``n``; parameters, other labels and other values are ignored, and a repeated key
    keeps its last value (RFC 9651). The parser is linear in the statement's length.
    """
    if len(statement) > _CACHED_STATEMENT_OCTETS:
        return _parsed_statement(statement)
    return _cached_statement(statement)


@lru_cache(maxsize=256)
def _cached_statement(statement: bytes) -> tuple[tuple[str, str], ...]:
    return _parsed_statement(statement)


def _parsed_statement(statement: bytes) -> tuple[tuple[str, str], ...]:
    import http_sf  # here, not at the top: most crawls never meet a statement to parse

    try:
        dictionary = http_sf.parse(statement, tltype="dictionary")
    except http_sf.StructuredFieldError:
        return ()
    stated = []
    for label in VOCABULARY:
        member = dictionary.get(label)  # type: ignore[union-attr]
        if member is None:
            continue
        value = member[0]
        if isinstance(value, http_sf.Token) and str(value) in (ALLOW, DISALLOW):
            stated.append((label, str(value)))
    return tuple(stated)


class _UsageRule:
    """One Content-Usage rule; its statement is parsed the first time it decides a URL."""

    __slots__ = ("_stated", "_statement", "length", "line", "matcher", "text")

    def __init__(self, line: int, value: bytes) -> None:
        path, self._statement = split_rule_value(value)
        self.line = line
        self.text = f"Content-Usage: {value.decode('utf-8', 'replace')}"
        #: ``None`` for a rule without a path: it matches every URL, with length 0, so
        #: any rule with a path (even ``/``) is more specific.
        self.matcher = None if path is None else WildcardRule(False, line, path)
        self.length = 0 if self.matcher is None else self.matcher.key[0]
        self._stated: dict[str, str] | None = None

    def matches(self, path: str) -> bool:
        return self.matcher is None or self.matcher.matches(path)

    def stated(self) -> dict[str, str]:
        if self._stated is None:
            self._stated = dict(statement_preferences(self._statement))
        return self._stated


class UsageRules:
    """The Content-Usage rules of the group(s) that apply to one crawler.

    ``rules`` maps line numbers to rule values (as ``classify`` gives them).
    """

    __slots__ = ("_rules",)

    def __init__(self, rules: dict[int, bytes]) -> None:
        self._rules = [_UsageRule(line, value) for line, value in sorted(rules.items())]

    def __bool__(self) -> bool:
        return bool(self._rules)

    def preferences(self, path: str) -> tuple[Preference, ...]:
        """The preferences of normalised ``path`` (a URL the group allows), by label.

        As for ``Allow``/``Disallow``, the longest matching path decides (its length in
        octets after normalisation, ``*`` and ``$`` included); the rules matching with
        that length are combined label by label, the most restrictive value winning
        (draft-ietf-aipref-attach 3.1). Each preference names the first rule, in file
        order, that gave its value.
        """
        longest: list[_UsageRule] = []
        for rule in self._rules:
            if not rule.matches(path):
                continue
            if not longest or rule.length > longest[0].length:
                longest = [rule]
            elif rule.length == longest[0].length:
                longest.append(rule)
        found = []
        for label in VOCABULARY:
            values = [rule.stated().get(label) for rule in longest]
            value = most_restrictive(values)
            if value is not None:
                rule = longest[values.index(value)]
                found.append(Preference(label, value, rule.text, rule.line))
        return tuple(found)


def signal_items(value: bytes) -> Iterator[tuple[str, str]]:
    """The ``(key, "yes" | "no")`` items of one ``Content-Signal`` value, lower-cased.

    A value is a comma-separated list of ``key=value``; keys and values are compared
    case-insensitively (robots.txt keys are); items whose value is neither ``yes`` nor
    ``no``, or whose key is not a plain name, are ignored.
    """
    for item in value.decode("ascii", "replace").split(","):
        key, equals, signal = item.partition("=")
        key, signal = key.strip().lower(), signal.strip().lower()
        if equals and signal in (SIGNAL_YES, SIGNAL_NO) and _SIGNAL_KEY.fullmatch(key):
            yield key, signal


def combine_content_signals(values: Iterable[bytes]) -> dict[str, str]:
    """Combine ``Content-Signal`` values into ``{key: "yes" | "no"}``, ``no`` winning."""
    signals: dict[str, str] = {}
    for value in values:
        for key, signal in signal_items(value):
            if signals.get(key) != SIGNAL_NO:
                signals[key] = signal
    return signals


def signal_preferences(lines: Iterable[tuple[int, bytes]]) -> tuple[Preference, ...]:
    """``Content-Signal`` lines ``(line, value)`` as preferences of the vocabulary.

    Keys are mapped by :data:`CONTENT_SIGNAL_LABELS` (others, such as ``ai-input``,
    state nothing), ``yes`` to ``y`` and ``no`` to ``n``; several lines combine the
    most restrictive way, like :func:`combine_content_signals`. Each preference names
    the first line that gave its value, so a log line can point at it.
    """
    stated: list[Preference] = []
    for line, value in lines:
        rule = f"Content-Signal: {value.decode('utf-8', 'replace')}"
        for key, signal in signal_items(value):
            label = CONTENT_SIGNAL_LABELS.get(key)
            if label is not None:
                stated.append(Preference(label, _SIGNAL_VALUES[signal], rule, line))
    return combine_preferences(stated)


def combine_preferences(*statements: Iterable[Preference]) -> tuple[Preference, ...]:
    """Preferences from several statements combined label by label, in vocabulary order.

    draft-ietf-aipref-vocab 5.1 (:func:`most_restrictive`): any ``n`` wins, then any
    ``y``. Each label keeps the first preference, in the order given, with the winning
    value.
    """
    by_label: dict[str, list[Preference]] = {}
    for statement in statements:
        for preference in statement:
            by_label.setdefault(preference.label, []).append(preference)
    combined = []
    for label in VOCABULARY:
        candidates = by_label.get(label)
        if candidates:
            value = most_restrictive(preference.value for preference in candidates)
            combined.append(next(p for p in candidates if p.value == value))
    return tuple(combined)


def combine_statements(*statements: Mapping[str, str]) -> dict[str, str]:
    """``{label: "y" | "n"}`` statements combined label by label, the most restrictive way."""
    combined = {}
    for label in VOCABULARY:
        value = most_restrictive(statement.get(label) for statement in statements)
        if value is not None:
            combined[label] = value
    return combined


def header_preferences(field_lines: Iterable[bytes]) -> dict[str, str]:
    """The preferences of an HTTP response's ``Content-Usage`` field: ``{label: "y" | "n"}``.

    draft-ietf-aipref-attach's response header field holds a statement of preference,
    an RFC 9651 Dictionary read like a robots.txt rule's; several field lines make one
    value, joined with commas (RFC 9651 4.2), so a key repeated in a later line wins,
    as within one line. A field longer than :data:`MAX_FIELD_OCTETS` states nothing.
    """
    field = b", ".join(field_lines)
    if len(field) > MAX_FIELD_OCTETS:
        return {}
    return dict(statement_preferences(field))
