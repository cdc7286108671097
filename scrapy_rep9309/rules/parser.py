"""Robots.txt line tokenizer: bytes in, one event per recognised record out.

Like ``robots.cc`` in Google's library, the tokenizer knows nothing about groups or
matching: it finds ``key: value`` records and calls a handler. Keeping the two apart
lets :mod:`scrapy_rep9309.rules.robotstxt` read single lines (:func:`classify`) and just the
ranges of lines it needs (:func:`tokenize_lines`), and lets other handlers (statistics,
linting) reuse the same reading rules (:func:`tokenize`).

Reading rules (RFC 9309 section 2.2, plus Google's leniency):

- CR, LF and CRLF each end one line; line numbers are 1-based.
- A UTF-8 byte order mark (or a leading part of one) at the very start is skipped.
- Lines are cut to :data:`MAX_LINE_OCTETS` octets before anything else, as Google does.
- ``#`` starts a comment; keys and values are stripped of surrounding whitespace.
- A line without ``:`` is still a record when it is exactly two tokens separated by
  SP or HTAB (``disallow /``); like Google, no other whitespace separates them.
- Keys are case-insensitive and include Google's accepted misspellings; like Google,
  a key that merely *starts with* a known key (``user-agents``) counts as that key.
- ``Content-Usage`` (draft-ietf-aipref-attach) is read exactly as its draft says: the
  label with only SP or HTAB around it and the colon, the value up to ``#``; it is a
  rule, like ``Allow``. ``Content-Signal`` and ``License`` are exact keys, not prefixes.
- Values stay bytes: the handler decides how to decode them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Protocol

#: Google's limit: "many times" the 2083-octet maximum URL length, minus a NUL.
MAX_LINE_OCTETS = 2083 * 8 - 1

#: The RFC's lower bound for what a crawler must parse (500 KiB).
MIN_MAX_SIZE = 512000


class RobotsTxtHandler(Protocol):
    """Receives the records of a robots.txt, in file order."""

    def user_agent(self, line_no: int, value: bytes) -> None: ...

    def allow(self, line_no: int, value: bytes) -> None: ...

    def disallow(self, line_no: int, value: bytes) -> None: ...

    def sitemap(self, line_no: int, value: bytes) -> None: ...

    def crawl_delay(self, line_no: int, value: bytes) -> None: ...

    #: ``Content-Usage`` rules: the rule value (path and statement of preference).
    def content_usage(self, line_no: int, value: bytes) -> None: ...

    def content_signal(self, line_no: int, value: bytes) -> None: ...

    def license(self, line_no: int, value: bytes) -> None: ...

    #: Called with unknown records; ``None`` when the handler ignores them, which spares
    #: the tokenizer cutting their values out.
    unknown: Callable[[int, bytes, bytes], None] | None


#: Key prefixes in the order Google tests them; the first that a key starts with wins.
_KEY_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"user-agent", "user_agent"),
    (b"useragent", "user_agent"),
    (b"user agent", "user_agent"),
    (b"allow", "allow"),
    (b"disallow", "disallow"),
    (b"dissallow", "disallow"),
    (b"dissalow", "disallow"),
    (b"disalow", "disallow"),
    (b"diasllow", "disallow"),
    (b"disallaw", "disallow"),
    (b"sitemap", "sitemap"),
    (b"site-map", "sitemap"),
    (b"crawl-delay", "crawl_delay"),
    (b"crawldelay", "crawl_delay"),
    (b"crawl delay", "crawl_delay"),
)
_EXACT_KEYS: dict[bytes, str] = dict(_KEY_PREFIXES)
_ALL_PREFIXES = tuple(_EXACT_KEYS)
#: Keys of newer records, recognised only as written (``licenses:`` is not ``license``).
_EXACT_ONLY_KEYS: dict[bytes, str] = {b"content-signal": "content_signal", b"license": "license"}
_CONTENT_USAGE_KEY = b"content-usage"
#: Keys that an unknown-looking key may turn out to be once classified.
CLASSIFIED_PREFIXES = (*_ALL_PREFIXES, *_EXACT_ONLY_KEYS, _CONTENT_USAGE_KEY)
#: draft-ietf-aipref-attach, "Processing Content-Usage Rules": SP and HTAB (only) are
#: ignored around the label and the colon; the rule value runs to the first "#".
_CONTENT_USAGE_LINE = re.compile(rb"[ \t]*content-usage[ \t]*:[ \t]*([^#]*)", re.IGNORECASE)
#: What separates the two tokens of a colon-less line (Google: " \t", not \v or \f).
_BLANKS = re.compile(rb"[ \t]+")
_LINE_ENDS = b"\r\n"
_HASH = ord("#")
_BOM = b"\xef\xbb\xbf"


def key_kind(key: bytes) -> str | None:
    """Return the record kind of a lower-cased key, or ``None`` for an unknown key."""
    kind = _EXACT_KEYS.get(key) or _EXACT_ONLY_KEYS.get(key)
    if kind is not None or not key.startswith(_ALL_PREFIXES):
        return kind
    for prefix, prefixed_kind in _KEY_PREFIXES:
        if key.startswith(prefix):
            return prefixed_kind
    return None


def limit_size(body: bytes, max_size: int) -> bytes:
    """Return the part of ``body`` that is read: at most ``max_size`` octets, whole lines only.

    A line cut by the limit is dropped rather than read in part: half a rule can mean
    something else entirely (``Allow: /shop/cart`` cut to ``Allow: /sh``).
    """
    if len(body) <= max_size:
        return body
    kept = body[:max_size]
    if body[max_size] in _LINE_ENDS:
        return kept
    return whole_lines(kept)


def whole_lines(body: bytes) -> bytes:
    """``body`` without a last line that has no line end: one cut short, by a size limit."""
    if not body or body[-1] in _LINE_ENDS:
        return body
    last_end = max(body.rfind(b"\n"), body.rfind(b"\r"))
    return body[: last_end + 1]


def skip_bom(body: bytes) -> bytes:
    """Drop a UTF-8 byte order mark, or the leading part of one, from the start of ``body``."""
    if body[:1] != b"\xef":
        return body
    skipped = 1
    while skipped < 3 and body[skipped : skipped + 1] == _BOM[skipped : skipped + 1]:
        skipped += 1
    return body[skipped:]


def split_record(line: bytes) -> tuple[bytes, bytes] | None:
    """Return the stripped ``(key, value)`` of one line, or ``None`` if it holds no record.

    The general rule, used by :func:`tokenize` for every line its fast path cannot take.
    """
    comment = line.find(b"#")
    if comment >= 0:
        line = line[:comment]
    key, colon, value = line.partition(b":")
    if not colon:
        # Like Google's GetKeyAndValueFrom: the stripped line must be two tokens
        # separated by SP or HTAB; "disallow\v/" is one token, not a record.
        parts = _BLANKS.split(line.strip())
        if len(parts) != 2:
            return None
        key, value = parts
    key = key.strip()
    return (key, value.strip()) if key else None


def _spellings(key: bytes) -> Iterator[bytes]:
    """Frequent spellings of a lower-case key, so most lines skip ``bytes.lower``."""
    for cased in {key, key.capitalize(), key.upper(), key.title()}:
        yield from (cased, cased + b" ", b" " + cased, b" " + cased + b" ", cased + b"\t")


#: The kinds :func:`fast_record` tells, by number.
KINDS = ("user_agent", "allow", "disallow", "sitemap", "crawl_delay")
#: Key as found before the colon (common spellings, and all lower-case ones) -> kind index.
KIND_OF_KEY: dict[bytes, int] = {
    spelling: KINDS.index(kind) for key, kind in _EXACT_KEYS.items() for spelling in _spellings(key)
}
#: Finds, in lower-cased text, every line that may hold a rule record (``Allow`` and
#: ``Disallow`` in all their spellings, ``Content-Usage``): its key is in the line.
RULE_KEY = re.compile(
    b"|".join(
        [re.escape(key) for key, kind in _KEY_PREFIXES if kind in ("allow", "disallow")]
        + [re.escape(_CONTENT_USAGE_KEY)]
    )
)


def fast_record(line: bytes) -> tuple[int, bytes] | None:
    """``(kind number in KINDS, value)`` of a ``key: value`` line whose key is a known one
    as commonly written (the tokenizer's fast path, which most lines take); ``None`` for
    any other line, which :func:`classify` must read.
    """
    key, colon, value = line.partition(b":")
    if not colon:
        return None
    kind = KIND_OF_KEY.get(key)
    if kind is None:
        kind = KIND_OF_KEY.get(key.lower())
        if kind is None:
            return None
    if _HASH in value:
        value = value[: value.index(_HASH)]
    return kind, value.strip()


def prepare(body: bytes, max_size: int = MIN_MAX_SIZE) -> bytes:
    """The part of ``body`` that is read: size-limited, without a leading byte order mark."""
    return skip_bom(limit_size(body, max_size))


def split_lines(data: bytes) -> list[bytes]:
    """Split on CR, LF and CRLF (one line each) and cut lines to :data:`MAX_LINE_OCTETS`."""
    lines = data.splitlines()
    if len(data) > MAX_LINE_OCTETS and max(map(len, lines)) > MAX_LINE_OCTETS:
        lines = [line[:MAX_LINE_OCTETS] for line in lines]
    return lines


def classify(line: bytes) -> tuple[str, bytes] | None:
    """Return ``(kind, value)`` of one line's record (kinds as handler method names).

    ``None`` for a line without a record; ``("unknown", value)`` for an unknown key.
    A ``content_usage`` value is the draft's rule value: after the colon and any SP or
    HTAB, up to ``#``, without trailing SP or HTAB (the ABNF's ``EOL`` starts with ``*WS``).
    """
    record = split_record(line)
    if record is None:
        return None
    key, value = record
    key = key.lower()
    kind = key_kind(key)
    if kind is not None:
        return (kind, value)
    if key == _CONTENT_USAGE_KEY:
        content_usage = _CONTENT_USAGE_LINE.match(line)
        if content_usage is not None:
            return ("content_usage", content_usage.group(1).rstrip(b" \t"))
    return ("unknown", value)


def line_number_at(data: bytes, offset: int) -> int:
    """1-based number of the line starting at ``offset`` (CR, LF and CRLF end one line each)."""
    carriage_returns = data.count(b"\r", 0, offset)
    line_feeds = data.count(b"\n", 0, offset)
    if not carriage_returns:  # most files
        return line_feeds + 1
    return line_feeds + carriage_returns - data.count(b"\r\n", 0, offset) + 1


def tokenize(body: bytes, handler: RobotsTxtHandler, max_size: int = MIN_MAX_SIZE) -> None:
    """Send each record of ``body`` to ``handler``; never raises because of the content."""
    tokenize_lines(split_lines(prepare(body, max_size)), handler)


def tokenize_lines(lines: list[bytes], handler: RobotsTxtHandler, first_line_no: int = 1) -> None:
    """Send each record of ``lines`` (numbered from ``first_line_no``) to ``handler``."""
    emitters = (
        handler.user_agent,
        handler.allow,
        handler.disallow,
        handler.sitemap,
        handler.crawl_delay,
    )
    unknown = handler.unknown
    kind_of_key = KIND_OF_KEY
    for line_no, line in enumerate(lines, first_line_no):
        # Fast path, taken by most lines: "key: value" with a known key (which holds no "#").
        key, colon, value = line.partition(b":")
        if colon:
            kind = kind_of_key.get(key)
            if kind is None:
                kind = kind_of_key.get(key.lower())
            if kind is not None:
                if _HASH in value:  # an int: ``b"#" in value`` costs ten times more
                    value = value[: value.index(_HASH)]
                emitters[kind](line_no, value.strip())
                continue
            # An unknown key: skip it cheaply unless it may be a known key after all
            # (comment before the colon, key merely starting with a known one, a
            # record the fast path leaves to ``classify``).
            if unknown is None and _HASH not in key:
                if not key.lower().lstrip().startswith(CLASSIFIED_PREFIXES):
                    continue
        else:
            # Most colon-less lines are HTML or prose: reject them cheaply. Two words
            # are needed; more can still be two tokens if \v or \f separates them.
            uncommented = line.partition(b"#")[0]
            if len(uncommented.split(None, 2)) != 2 and not (
                b"\x0b" in uncommented or b"\x0c" in uncommented
            ):
                continue
        record = classify(line)
        if record is None:
            continue
        kind_name, value = record
        if kind_name != "unknown":
            getattr(handler, kind_name)(line_no, value)
        elif unknown is not None:
            key = split_record(line)[0]  # type: ignore[index]
            unknown(line_no, key, value)
