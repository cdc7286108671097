"""Unit tests of the parser's internals: tokenizer, normalisation, tokens, matcher, laziness.

The black-box suites (test_conformance, test_parsing, ...) test the public API; these
pin down the pieces it is built from, where a regression is easier to locate.
"""

from __future__ import annotations

import random
import string

import pytest
from _implementations import for_each_implementation
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules.matcher import SMALL_RULE_SET, RuleSet, WildcardRule, index_html_directory
from scrapy_rep9309.rules.parser import (
    MAX_LINE_OCTETS,
    MIN_MAX_SIZE,
    key_kind,
    limit_size,
    skip_bom,
    split_record,
    tokenize,
)
from scrapy_rep9309.rules.urlnorm import (
    normalise_octets,
    normalise_text,
    normalised_path,
    path_and_query,
)
from scrapy_rep9309.rules.useragent import crawler_token, group_token, product_token, token_problem

UNRESERVED_CHARACTERS = string.ascii_letters + string.digits + "-._~"
KEPT_AS_IS_CHARACTERS = UNRESERVED_CHARACTERS + ":/?#[]@!&'()+,;="


class Recorder:
    """A tokenizer handler that keeps every event."""

    def __init__(self, *, with_unknown: bool = True) -> None:
        self.events: list[tuple[str, int, bytes]] = []
        if not with_unknown:
            self.unknown = None  # type: ignore[assignment]

    def user_agent(self, line_no: int, value: bytes) -> None:
        self.events.append(("user_agent", line_no, value))

    def allow(self, line_no: int, value: bytes) -> None:
        self.events.append(("allow", line_no, value))

    def disallow(self, line_no: int, value: bytes) -> None:
        self.events.append(("disallow", line_no, value))

    def sitemap(self, line_no: int, value: bytes) -> None:
        self.events.append(("sitemap", line_no, value))

    def crawl_delay(self, line_no: int, value: bytes) -> None:
        self.events.append(("crawl_delay", line_no, value))

    def content_usage(self, line_no: int, value: bytes) -> None:
        self.events.append(("content_usage", line_no, value))

    def content_signal(self, line_no: int, value: bytes) -> None:
        self.events.append(("content_signal", line_no, value))

    def license(self, line_no: int, value: bytes) -> None:
        self.events.append(("license", line_no, value))

    def unknown(self, line_no: int, key: bytes, value: bytes) -> None:
        self.events.append(("unknown:" + key.decode("latin-1"), line_no, value))


def events(body: bytes, **kwargs: bool) -> list[tuple[str, int, bytes]]:
    recorder = Recorder(**kwargs)
    tokenize(body, recorder)
    return recorder.events


# --- tokenizer -------------------------------------------------------------------------


def test_cr_lf_and_crlf_each_end_one_line() -> None:
    body = b"user-agent: a\rallow: /1\r\ndisallow: /2\n\r\nsitemap: s\r\rcrawl-delay: 3"
    assert events(body) == [
        ("user_agent", 1, b"a"),
        ("allow", 2, b"/1"),
        ("disallow", 3, b"/2"),
        ("sitemap", 5, b"s"),
        ("crawl_delay", 7, b"3"),
    ]


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
def test_a_bom_or_part_of_one_is_skipped_at_the_start_only(bom: bytes) -> None:
    assert skip_bom(bom + b"user-agent: a") == b"user-agent: a"
    assert events(bom + b"user-agent: a\n" + bom + b"allow: /x\n") == [
        ("user_agent", 1, b"a"),
        ("unknown:" + (bom + b"allow").decode("latin-1"), 2, b"/x"),
    ]


def test_comments_whitespace_and_case() -> None:
    body = b"  USER-AGENT\t:\tFoo  # bar\n# disallow: /\nDisAllow:/x#y\nallow :  \n"
    assert events(body) == [
        ("user_agent", 1, b"Foo"),
        ("disallow", 3, b"/x"),
        ("allow", 4, b""),
    ]


def test_a_missing_colon_is_accepted_for_exactly_two_tokens() -> None:
    body = b"user-agent FooBot\ndisallow /x # comment\ndisallow /y /z\nallow\n"
    assert events(body) == [("user_agent", 1, b"FooBot"), ("disallow", 2, b"/x")]
    # Only SP and HTAB separate the two tokens (Google's " \t"); the line is stripped first.
    body = b"disallow\x0b/a\nuser-agent Foo\x0cBot\n\x0bdisallow \x0b/b\x0b\nallow /c\x0b/d\n"
    assert events(body) == [
        ("user_agent", 2, b"Foo\x0cBot"),
        ("disallow", 3, b"/b"),
        ("allow", 4, b"/c\x0b/d"),
    ]
    assert split_record(b"a \x0b b") is None  # three tokens: "a", "\v", "b"
    assert split_record(b"a\x0b\tb") == (b"a", b"b")


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b"Content-Usage: train-ai=n", b"train-ai=n"),
        (b" \tcontent-usage \t: \t/ai-ok/ train-ai=y \t# comment", b"/ai-ok/ train-ai=y"),
        (b"CONTENT-USAGE:", b""),
        (b"Content-Usage:\x0btrain-ai=n\x0b", b"\x0btrain-ai=n\x0b"),
    ],
)
def test_content_usage_lines_as_the_draft_reads_them(line: bytes, value: bytes) -> None:
    # draft-ietf-aipref-attach 3.2: SP and HTAB are ignored around the label and the
    # colon; the value runs to CR, LF or "#"; the ABNF's EOL begins with *WS.
    assert events(line, with_unknown=False) == [("content_usage", 1, value)]


@pytest.mark.parametrize(
    "line",
    [b"Content-Usage\x0b: train-ai=n", b"Content-Usage train-ai=n", b"Content-Usages: x", b"#c"],
)
def test_not_content_usage_lines(line: bytes) -> None:
    assert all(kind != "content_usage" for kind, _, _ in events(line)), events(line)


def test_content_signal_and_license_keys_are_exact() -> None:
    body = (
        b"Content-Signal: search=yes\nLICENSE : https://a/l.xml\nLicenses: x\nContent-Signals: y\n"
    )
    assert events(body, with_unknown=False) == [
        ("content_signal", 1, b"search=yes"),
        ("license", 2, b"https://a/l.xml"),
    ]


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        (b"user-agent", "user_agent"),
        (b"useragent", "user_agent"),
        (b"user agent", "user_agent"),
        (b"user-agents", "user_agent"),
        (b"dissallow", "disallow"),
        (b"dissalow", "disallow"),
        (b"disalow", "disallow"),
        (b"diasllow", "disallow"),
        (b"disallaw", "disallow"),
        (b"disallowed", "disallow"),
        (b"allow", "allow"),
        (b"site-map", "sitemap"),
        (b"crawldelay", "crawl_delay"),
        (b"noindex", None),
        (b"agent", None),
    ],
)
def test_keys_and_googles_misspellings(key: bytes, kind: str | None) -> None:
    assert key_kind(key) == kind
    expected = [] if kind is None else [(kind, 1, b"v")]
    assert events(key.upper() + b": v", with_unknown=False) == expected


def test_unknown_records_reach_a_handler_that_wants_them() -> None:
    assert events(b"Noindex: /x # c\nHost : example.com") == [
        ("unknown:Noindex", 1, b"/x"),
        ("unknown:Host", 2, b"example.com"),
    ]


def test_split_record() -> None:
    assert split_record(b" key : value # c") == (b"key", b"value")
    assert split_record(b"key value") == (b"key", b"value")
    assert split_record(b"# key: value") is None
    assert split_record(b": value") is None
    assert split_record(b"one two three") is None


def test_over_long_lines_are_cut_like_googles() -> None:
    value = b"/" + b"a" * (MAX_LINE_OCTETS * 2)
    line = b"disallow: " + value
    assert events(b"user-agent: *\n" + line + b"\nallow: /b") == [
        ("user_agent", 1, b"*"),
        ("disallow", 2, line[:MAX_LINE_OCTETS][len(b"disallow: ") :]),
        ("allow", 3, b"/b"),
    ]


def test_the_size_limit_drops_a_line_cut_in_the_middle() -> None:
    head = b"user-agent: *\n"
    body = head + b"x" * (MIN_MAX_SIZE - len(head) - 3) + b"\ndisallow: /\n"
    limited = limit_size(body, MIN_MAX_SIZE)
    assert limited.endswith(b"x\n") and b"disallow" not in limited
    exact = head + b"x" * (MIN_MAX_SIZE - len(head) - 1) + b"\ndisallow: /"
    assert limit_size(exact, MIN_MAX_SIZE) == exact[:MIN_MAX_SIZE]
    assert limit_size(b"short", MIN_MAX_SIZE) == b"short"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
@for_each_implementation
def test_any_bytes_tokenize_without_error(body: bytes) -> None:
    tokenize(body, Recorder())
    RobotsTxt.parse(body).explain("/x", "bot")


# --- normalisation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        (b"/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar/ツ".encode(), "/foo/bar/%E3%83%84"),
        (b"/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"),
        (b"/foo/bar/%62%61%7A", "/foo/bar/baz"),
        (b"/a%2a%24%2F", "/a%2A%24%2F"),
        (b"/a*$", "/a%2A%24"),
        (b"/100%", "/100%25"),
        (b"/%zz", "/%25zz"),
        (b"/a b\x00", "/a%20b%00"),
        (b"/\xff\xfe", "/%FF%FE"),
        (b"/~user/-._", "/~user/-._"),
        (b"/%7euser", "/~user"),
    ],
)
def test_percent_encoding_normalisation(raw: bytes, normalised: str) -> None:
    assert normalise_octets(raw) == normalised
    assert normalise_text(raw.decode("utf-8", "surrogateescape")) == normalised


def test_every_escape_and_octet_is_normalised_one_by_one() -> None:
    """The search that lets already-canonical input through unchanged agrees with the
    escape-by-escape rewrite on every octet and every escape, in both cases."""
    for octet in range(256):
        expected_octet = f"%{octet:02X}"
        if chr(octet) in KEPT_AS_IS_CHARACTERS:
            expected_octet = chr(octet)
        escaped = chr(octet) if chr(octet) in UNRESERVED_CHARACTERS else f"%{octet:02X}"
        assert normalise_octets(bytes((octet,))) == expected_octet
        assert normalise_octets(b"/a%%%02X" % octet) == "/a" + escaped
        assert normalise_octets(b"/a%%%02x" % octet) == "/a" + escaped
        assert normalise_octets(b"%%%02X/%%" % octet) == escaped + "/%25"


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("https://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("example.com?a", "/?a"),
        ("example.com/a;b#c", "/a;b"),
        ("//a/b/c", "/b/c"),
        ("/just/a/path?q", "/just/a/path?q"),
        ("https://host#/not-a-path", "/"),
        ("HTTPS://host/p", "/p"),
        # The first "#" starts the fragment even before a scheme (this once raised).
        ("#http://host/p", "/"),
        ("a#b://host/p", "/"),
    ],
)
def test_path_and_query(url: str, path: str) -> None:
    assert path_and_query(url) == path


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["http://", "https://", "", "//", "HTTP://"]),
    st.text(alphabet="ab.:@?#;", max_size=6),
    st.text(alphabet="/ab%2A*$?=#&;~ツ é", max_size=12),
)
def test_the_fast_path_agrees_with_the_general_one(scheme: str, host: str, rest: str) -> None:
    url = scheme + host + rest
    assert normalised_path(url) == normalise_text(path_and_query(url))


# --- product tokens --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("*", "*"),
        ("* and more", "*"),
        ("*bot", ""),
        ("Googlebot/1.2", "googlebot"),
        ("googlebot*", "googlebot"),
        ("Foo Bar", "foo"),
        ("foo_bar-baz9", "foo_bar-baz"),
        ("ツbot", ""),
        ("", ""),
    ],
)
def test_group_token(value: str, token: str) -> None:
    assert group_token(value) == token


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("MyBot", "mybot"),
        ("MyBot/1.0 (+https://x)", "mybot"),
        ("MyBot (+https://x)", "mybot"),
        ("Mozilla/5.0 (compatible; MyBot/1.0; +https://x)", "mybot"),
        ("Mozilla/5.0 (X11; Linux) (KHTML, like Gecko; compatible; Googlebot/2.1)", "googlebot"),
        ("Mozilla/5.0 (X11; Linux x86_64)", "mozilla"),
        # RFC 9110: "User-Agent = product *( RWS ( product / comment ) )", the first
        # product's name is the token...
        ("FigTree Robot libwww-perl/5.04", "figtree"),
        ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "slackbot-linkexpanding"),
        ("MyBot(+https://x)", "mybot"),
        ("\tMyBot", "mybot"),
        # An HTTP token may hold what a product token may not: kept whole, matching no group.
        ("MJ12bot/v1.4.8", "mj12bot"),
        ("Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", "mj12bot"),
        ("Bot2000", "bot2000"),
        # ... of a header: bare words are no header (Google: "Foo Bar" names no group).
        ("Foo Bar", "foo bar"),
        ("FigTree Robot", "figtree robot"),
        # No product at all: the whole string is kept, matching no group either.
        ("MyBot;1.0", "mybot;1.0"),
        ("/1.0", "/1.0"),
        ("", ""),
    ],
)
def test_crawler_token(user_agent: str, token: str) -> None:
    assert crawler_token(user_agent) == token


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("MyBot/1.0 (+https://x)", "MyBot"),
        ("Mozilla/5.0 (compatible; MyBot/1.0)", "MyBot"),
        ("FigTree Robot libwww-perl/5.04", "FigTree"),
        ("MJ12bot/v1.4.8", "MJ12bot"),
        ("MyBot;1.0", None),
        ("Foo Bar", None),
        ("", None),
    ],
)
def test_product_token_keeps_the_case_as_written(user_agent: str, token: str | None) -> None:
    assert product_token(user_agent) == token


@pytest.mark.parametrize(
    "user_agent",
    [
        "MyBot",
        "my_bot-x/2.0",
        "Mozilla/5.0 (compatible; MyBot/1.0; +https://x)",
        "FigTree Robot x/1",
    ],
)
def test_token_problem_is_none_for_valid_tokens(user_agent: str) -> None:
    assert token_problem(user_agent) is None


@pytest.mark.parametrize(
    ("user_agent", "fragments"),
    [
        (
            "MJ12bot/v1.4.8",
            ["'MJ12bot'", "contains '1', '2':", "only letters, '_' and '-'", "User-agent: *"],
        ),
        ("Bot2000", ["'Bot2000'", "contains '2', '0':", "User-agent: *"]),
        ("Mozilla/5.0 (compatible; My.Bot/1.0)", ["'My.Bot'", "contains '.':"]),
        ("", ["has no product token", "User-agent: *"]),
        ("MyBot;1.0", ["'MyBot;1.0' has no product token"]),
        ("Foo Bar", ["'Foo Bar' has no product token"]),
    ],
)
def test_token_problem_says_what_will_happen(user_agent: str, fragments: list[str]) -> None:
    problem = token_problem(user_agent)
    assert problem is not None
    for fragment in fragments:
        assert fragment in problem, problem


# --- matcher ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        (b"/fish", "/fish.html", True),
        (b"/fish$", "/fish", True),
        (b"/fish$", "/fish/", False),
        (b"/*.php$", "/a/b.php", True),
        (b"/*.php$", "/a/b.php?x", False),
        (b"/*.php", "/a.php5", True),
        (b"*", "/", True),
        (b"/a*b*c", "/aXbYc", True),
        (b"/a*b*c", "/aXcYb", False),
        (b"/a*b$", "/abab", True),
        (b"/a*ab$", "/ab", False),
        (b"/a$b", "/a%24b", True),
        (b"/a%2A", "/a%2A", True),
    ],
)
def test_wildcard_rule(pattern: bytes, path: str, matches: bool) -> None:
    assert WildcardRule(False, 1, pattern).matches(path) is matches


def test_pattern_length_counts_wildcards_like_google() -> None:
    assert WildcardRule(True, 3, b"/a*b$").key == (5, True, -3)
    assert WildcardRule(False, 3, b"/%7e").key == (2, False, -3)  # "/~" after normalisation


def test_index_html_directory() -> None:
    assert index_html_directory(b"/dir/index.html") == b"/dir/$"
    assert index_html_directory(b"/dir/index.htm?x") == b"/dir/$"
    assert index_html_directory(b"/index.html/other") is None


def _reference_best(rules: list[tuple[bool, bytes]], path: str) -> tuple[int, bool] | None:
    best = None
    for allow, value in rules:
        if value and WildcardRule(allow, 1, value).matches(path):
            key = (WildcardRule(allow, 1, value).key[0], allow)
            best = key if best is None or key > best else best
    return best


@pytest.mark.parametrize("count", [3, SMALL_RULE_SET, SMALL_RULE_SET + 1, 400])
def test_small_and_bucketed_rule_sets_decide_alike(count: int) -> None:
    generator = random.Random(count)
    alphabet = ["/", "a", "b", "ab", "/a", "%61", "*", "?", "=", "ツ"]
    rules = []
    for _ in range(count):
        value = "/" + "".join(generator.choices(alphabet, k=generator.randint(0, 5)))
        if generator.random() < 0.2:
            value += "$"
        rules.append((generator.random() < 0.5, value.encode()))
    allows = {line: value for line, (allow, value) in enumerate(rules, 1) if allow}
    disallows = {line: value for line, (allow, value) in enumerate(rules, 1) if not allow}
    rule_set = RuleSet(allows, disallows)
    for _ in range(300):
        path = normalise_text(
            "/" + "".join(generator.choices(alphabet[:-1], k=generator.randint(0, 6)))
        )
        decided = rule_set.decide(path)
        assert (None if decided is None else decided[:2]) == _reference_best(rules, path), path
        if not path.startswith(rule_set.screen):
            assert decided is None, path


# --- RobotsTxt laziness and records ----------------------------------------------------


@for_each_implementation
def test_selections_are_cached_per_user_agent_string_and_token() -> None:
    rules = RobotsTxt.parse(b"user-agent: mybot\ndisallow: /x\n")
    assert not rules.allowed("/x", "MyBot/1.0")
    assert not rules.allowed("/x", "mybot")
    selection = rules._selections["MyBot/1.0"]
    assert rules._selections["mybot"] is selection


@for_each_implementation
def test_crawl_delay_of_merged_groups_is_the_first_valid_one() -> None:
    body = (
        b"crawl-delay: 9\n"  # before any group: ignored
        b"user-agent: a\ncrawl-delay: soon\ndisallow: /\n"
        b"user-agent: b\ncrawl-delay: 2\nallow: /\n"
        b"user-agent: a\ncrawl-delay: 1.5\ndisallow:\n"
        b"user-agent: *\ncrawl-delay: -1\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("a") == 1.5
    assert rules.crawl_delay("b") == 2.0
    assert rules.crawl_delay("c") is None


@for_each_implementation
def test_sitemaps_anywhere_in_file_order() -> None:
    body = b"sitemap: https://a/1.xml\nuser-agent: *\nsitemap:\nSite-map: https://a/2.xml\n"
    assert RobotsTxt.parse(body).sitemaps == ["https://a/1.xml", "https://a/2.xml"]


# --- lazy group discovery against an eager reference -------------------------------------


class EagerGroups:
    """Reference handler: groups built from every tokenizer event, as RFC 9309 2.1 says."""

    unknown = None

    def __init__(self) -> None:
        self.groups: list[tuple[list[bytes], list[tuple[int, bool, bytes]]]] = []
        self.open = False

    def user_agent(self, line_no: int, value: bytes) -> None:
        if self.groups and self.open:
            self.groups[-1][0].append(value)
        else:
            self.groups.append(([value], []))
            self.open = True

    def _rule(self, line_no: int, value: bytes, allow: bool) -> None:
        if self.groups:
            self.groups[-1][1].append((line_no, allow, value))
            self.open = False

    def allow(self, line_no: int, value: bytes) -> None:
        self._rule(line_no, value, True)

    def disallow(self, line_no: int, value: bytes) -> None:
        self._rule(line_no, value, False)

    def content_usage(self, line_no: int, value: bytes) -> None:
        # A rule of the group (draft-ietf-aipref-attach), with no say in crawling.
        if self.groups:
            self.open = False

    def sitemap(self, line_no: int, value: bytes) -> None:
        pass

    def crawl_delay(self, line_no: int, value: bytes) -> None:
        pass

    def content_signal(self, line_no: int, value: bytes) -> None:
        pass

    def license(self, line_no: int, value: bytes) -> None:
        pass


def _eager_decision(body: bytes, token: str, path: str) -> tuple[bool, int | None]:
    reference = EagerGroups()
    tokenize(body, reference)
    named = [rules for agents, rules in reference.groups if token in map(_agent_token, agents)]
    if not named:
        named = [rules for agents, rules in reference.groups if "*" in map(_agent_token, agents)]
    best: tuple[int, bool, int] | None = None
    for line, allow, value in (rule for rules in named for rule in rules):
        if value and WildcardRule(allow, line, value).matches(path):
            key = WildcardRule(allow, line, value).key
            best = key if best is None or key > best else best
    return (True, None) if best is None else (best[1], -best[2])


def _agent_token(agent: bytes) -> str:
    return group_token(agent.decode("latin-1"))


_LINES = st.sampled_from(
    [
        b"User-agent: mybot",
        b"user-agent: *",
        b"USERAGENT: MyBot/2",
        b"user agent: other",
        b"user-agent mybot",
        b"# user-agent: mybot",
        b"the agent is here",
        b"Disallow: /a",
        b"disallow /b",
        b"Allow: /a/b",
        b"dissalow: /c",
        b"disallaw: /",
        b"Disallow:",
        b"allow: /a$",
        b"Disallow: /*b",
        b"Sitemap: /site",
        b"crawl-delay: 1",
        b"Content-Usage: train-ai=n",
        b"content-usage : /a train-ai=y",
        b"Content-Signal: ai-train=no",
        b"",
        b"  ",
        b"<html> agent allow",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_LINES, st.sampled_from([b"\n", b"\r\n", b"\r"])), max_size=14),
    st.sampled_from(["mybot", "other", "nobody"]),
    st.sampled_from(["/", "/a", "/a/b", "/b", "/c", "/ab", "/site"]),
)
@for_each_implementation
def test_lazy_groups_decide_like_an_eager_reference(
    lines: list[tuple[bytes, bytes]], token: str, path: str
) -> None:
    body = b"".join(line + end for line, end in lines)
    decision = RobotsTxt.parse(body).explain(path, token)
    assert (decision.allowed, decision.line) == _eager_decision(body, token, path)


@for_each_implementation
def test_long_gaps_between_user_agent_lines() -> None:
    filler = b"# filler\n" * 200
    body = b"user-agent: a\n" + filler + b"disallow: /x\nuser-agent: b\ndisallow: /y\n"
    rules = RobotsTxt.parse(body)
    assert (rules.allowed("/x", "a"), rules.allowed("/y", "a")) == (False, True)
    assert (rules.allowed("/x", "b"), rules.allowed("/y", "b")) == (True, False)
    # A colon-less line cut where the first look at a gap ends must not be taken for
    # "disallowfoo bar" (a two-word record): whole, it has three words and no meaning.
    comment = b"#" * (1024 - 2 - len(b"disallowfoo bar"))
    body = b"user-agent: a\n" + comment + b"\ndisallowfoo bar baz\nuser-agent: b\ndisallow: /y\n"
    rules = RobotsTxt.parse(body)
    assert rules.explain("/y", "a").user_agents == ("a", "b")
    assert rules.allowed("/y", "a") is False
