"""A deliberately simple RFC 9309 oracle that the package's matcher is checked against.

Everything here favours being obviously right over being fast: percent-encoding is
normalised octet by octet, globs are matched with a full dynamic-programming table,
and the longest match is found by trying every rule. It only understands "clean"
robots.txt files (see ``clean_reason``): the lenient parts of parsing (misspelled keys,
missing colons, cut product tokens) are tested elsewhere, against explicit examples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# RFC 3986 section 2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")
MAX_LINE_BYTES = 2083 * 8 - 1
# Keys Google's parser recognises by prefix; a different key starting with one of them
# would be read as that directive, so such files are not "clean".
GOOGLE_KEY_PREFIXES = (
    "user-agent",
    "useragent",
    "user agent",
    "allow",
    "disallow",
    "dissallow",
    "dissalow",
    "disalow",
    "diasllow",
    "disallaw",
    "sitemap",
    "site-map",
)
STANDARD_KEYS = frozenset({"user-agent", "allow", "disallow", "sitemap", "crawl-delay"})


def normalise(text: str, *, is_pattern: bool) -> str:
    """RFC 9309 2.2.2 normal form, one octet at a time.

    Non-ASCII octets become ``%XX``; ``%XX`` of an unreserved character is decoded;
    every other ``%XX`` is kept with upper-case hex. In a URL a literal ``*`` or ``$``
    is an ordinary character, written ``%2A``/``%24`` so that it can only be matched by
    the percent-encoded form in a pattern (RFC 9309 2.2.3, figure 6).
    """
    data = text.encode("utf-8", "surrogateescape")
    out: list[str] = []
    index = 0
    while index < len(data):
        octet = data[index]
        escape = data[index + 1 : index + 3]
        if octet == 0x25 and len(escape) == 2 and all(digit in HEX_DIGITS for digit in escape):
            value = int(escape, 16)
            out.append(chr(value) if value in UNRESERVED else f"%{value:02X}")
            index += 3
            continue
        if octet >= 0x80 or (not is_pattern and octet in b"*$"):
            out.append(f"%{octet:02X}")
        else:
            out.append(chr(octet))
        index += 1
    return "".join(out)


def path_and_query(url: str) -> str:
    """The part of an absolute URL (or of a path) that robots.txt rules are matched to.

    A leading ``//`` starts an authority (RFC 3986 4.2, a network-path reference), so
    ``//a/b`` means path ``/b``.
    """
    url = url.split("#", 1)[0]
    scheme_end = url.find("://")
    if url.startswith("//"):
        authority_and_rest = url[2:]
    elif scheme_end != -1 and not any(char in url[:scheme_end] for char in "/?"):
        authority_and_rest = url[scheme_end + 3 :]
    else:
        return url if url.startswith("/") else "/" + url
    cuts = [i for i in (authority_and_rest.find("/"), authority_and_rest.find("?")) if i >= 0]
    path = authority_and_rest[min(cuts) :] if cuts else ""
    return path if path.startswith("/") else "/" + path


def glob_matches(pattern: str, path: str) -> bool:
    """Whether a normalised pattern matches a normalised path from its first octet.

    ``*`` matches any run of octets; a final ``$`` requires the path to end there.
    ``reachable[j]`` says whether the pattern read so far can consume ``path[:j]``.
    """
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    reachable = [True] + [False] * len(path)
    for char in body:
        if char == "*":
            seen = False
            widened = []
            for can in reachable:
                seen = seen or can
                widened.append(seen)
            reachable = widened
        else:
            reachable = [False] + [reachable[j] and path[j] == char for j in range(len(path))]
    return reachable[-1] if anchored else any(reachable)


@dataclass(frozen=True)
class Rule:
    """One allow/disallow line as written, with the 1-based line it came from."""

    allow: bool
    pattern: str
    line: int = 0

    @property
    def normalised(self) -> str:
        return normalise(self.pattern, is_pattern=True)

    @property
    def text(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"


@dataclass(frozen=True)
class Verdict:
    """The oracle's answer: allowed, and every rule tied for the win (empty if none)."""

    allowed: bool
    winners: tuple[Rule, ...]


def decide(rules: list[Rule], url: str) -> Verdict:
    """Longest normalised pattern wins, allow wins ties, no match allows (RFC 2.2.2)."""
    path = normalise(path_and_query(url), is_pattern=False)
    if path == "/robots.txt":
        return Verdict(True, ())
    matching = [r for r in rules if r.pattern and glob_matches(r.normalised, path)]
    if not matching:
        return Verdict(True, ())
    longest = max(len(r.normalised) for r in matching)
    best = [r for r in matching if len(r.normalised) == longest]
    allowed = any(r.allow for r in best)
    return Verdict(allowed, tuple(r for r in best if r.allow == allowed))


@dataclass
class _Group:
    agents: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)


def split_lines(text: str) -> list[str]:
    """Lines ended by CR, LF or CRLF, as RFC 9309's NL production says."""
    return re.split(r"\r\n|\r|\n", text)


def _key_value(line: str) -> tuple[str, str] | None:
    content = line.split("#", 1)[0].strip()
    if not content:
        return None
    key, _, value = content.partition(":")
    return key.strip().lower(), value.strip()


def clean_reason(body: bytes) -> str | None:
    """Why the oracle cannot judge ``body``, or None when it can."""
    if len(body) > 512000:
        return "larger than the parsing limit"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "not valid UTF-8"
    for number, line in enumerate(split_lines(text.removeprefix("\ufeff")), start=1):
        if len(line.encode("utf-8")) >= MAX_LINE_BYTES:
            return f"line {number} is longer than Google's line limit"
        parsed = _key_value(line)
        if parsed is None:
            continue
        if ":" not in line.split("#", 1)[0]:
            return f"line {number} has no colon"
        key, value = parsed
        if key not in STANDARD_KEYS and key.startswith(GOOGLE_KEY_PREFIXES):
            return f"line {number} has a key read leniently: {key!r}"
        if key == "user-agent" and value != "*" and not PRODUCT_TOKEN.fullmatch(value):
            return f"line {number} names an agent that is not a bare product token"
        if key in ("allow", "disallow") and (
            any(char.isspace() for char in value) or "$" in value[:-1] or "%" in value
        ):
            return f"line {number} has a pattern with spaces, '%' or an inner '$'"
    return None


class ReferenceRobots:
    """Groups of a clean robots.txt, selected by case-insensitive product-token equality."""

    def __init__(self, body: bytes) -> None:
        text = body.decode("utf-8").removeprefix("\ufeff")
        self.groups: list[_Group] = []
        current: _Group | None = None
        after_rules = True
        for number, line in enumerate(split_lines(text), start=1):
            parsed = _key_value(line)
            if parsed is None:
                continue
            key, value = parsed
            if key == "user-agent":
                if current is None or after_rules:
                    current = _Group()
                    self.groups.append(current)
                    after_rules = False
                current.agents.append(value.lower())
            elif key in ("allow", "disallow") and current is not None:
                after_rules = True
                if value:
                    current.rules.append(Rule(key == "allow", value, number))

    def rules_for(self, token: str) -> list[Rule]:
        """Rules of every group naming ``token``, else of every ``*`` group."""
        token = token.lower()
        named = [rule for g in self.groups if token in g.agents for rule in g.rules]
        if any(token in g.agents for g in self.groups):
            return named
        return [rule for g in self.groups if "*" in g.agents for rule in g.rules]

    def decide(self, url: str, token: str) -> Verdict:
        return decide(self.rules_for(token), url)
