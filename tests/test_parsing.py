"""How robots.txt bytes become groups and rules (RFC 9309 section 2.2, Google's leniency).

Each test names the clause it checks. The grammar is RFC 9309 section 2.2's ABNF:
``group = startgroupline *(startgroupline / emptyline) *(rule / emptyline)``, with
``NL = %x0D / %x0A / %x0D.0A``, ``WS = %x20 / %x09`` and ``#`` comments; Google's parser
(robots.cc in github.com/google/robotstxt) adds the leniency the issue asks for.
"""

from __future__ import annotations

import pytest

from scrapy_rep9309 import Decision, RobotsTxt

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

URL = "https://example.com"


def verdict(
    body: bytes | str, path: str, agent: str = "anybot"
) -> tuple[bool, str | None, int | None]:
    """(allowed, rule, line) for one path: the three things most tests compare."""
    decision = RobotsTxt.parse(body).explain(f"{URL}{path}", agent)
    return decision.allowed, decision.rule, decision.line


# --- keys, whitespace, comments -------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"USER-AGENT: *\nDISALLOW: /x\nALLOW: /x/y\n",
        b"user-agent: *\ndisallow: /x\nallow: /x/y\n",
        b"uSeR-aGeNt: *\nDiSaLlOw: /x\nAlLoW: /x/y\n",
    ],
)
def test_keys_are_case_insensitive(body: bytes) -> None:
    assert verdict(body, "/x/z") == (False, "Disallow: /x", 2)
    assert verdict(body, "/x/y") == (True, "Allow: /x/y", 3)


@pytest.mark.parametrize(
    "line",
    [
        b"Disallow:/x",
        b"Disallow: /x",
        b"Disallow :/x",
        b"  Disallow  :  /x  ",
        b"\tDisallow\t:\t/x\t",
        b" \t Disallow: \t /x",
    ],
)
def test_optional_whitespace_around_key_colon_and_value(line: bytes) -> None:
    # RFC 9309 2.2: rule = *WS ("allow" / "disallow") *WS ":" *WS (path-pattern / ...) EOL
    body = b"User-agent: *\n" + line + b"\n"
    assert verdict(body, "/x") == (False, "Disallow: /x", 2)
    assert verdict(body, "/y") == (True, None, None)


def test_comments_are_ignored_wherever_they_start() -> None:
    body = (
        b"# a comment line\n"
        b"User-agent: * # everyone\n"
        b"   # an indented comment\n"
        b"Disallow: /x$ # the $ is still the last pattern character\n"
        b"Disallow: /y#fragment-like\n"
        b"#Disallow: /\n"
    )
    assert verdict(body, "/x") == (False, "Disallow: /x$", 4)
    assert verdict(body, "/xy") == (True, None, None)
    assert verdict(body, "/y") == (False, "Disallow: /y", 5)
    assert verdict(body, "/z") == (True, None, None)


LINE_BODY = [
    b"User-agent: a",
    b"Disallow: /one",
    b"",
    b"# comment",
    b"User-agent: b",
    b"Disallow: /two",
]


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
@pytest.mark.parametrize("final_newline", [True, False])
def test_lf_cr_and_crlf_each_end_a_line(newline: bytes, final_newline: bool) -> None:
    body = newline.join(LINE_BODY) + (newline if final_newline else b"")
    assert verdict(body, "/one", "a") == (False, "Disallow: /one", 2)
    assert verdict(body, "/two", "b") == (False, "Disallow: /two", 6)
    assert verdict(body, "/two", "a") == (True, None, None)


def test_mixed_line_ends_are_counted_one_line_each() -> None:
    # CRLF is one line end; LF CR is two (an empty line between them).
    body = b"User-agent: a\r\nDisallow: /one\n\rDisallow: /two\rDisallow: /three\r\n"
    assert verdict(body, "/one", "a")[2] == 2
    assert verdict(body, "/two", "a")[2] == 4
    assert verdict(body, "/three", "a")[2] == 5


@pytest.mark.parametrize(
    "body",
    [b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n", "\ufeffUser-agent: *\nDisallow: /x\n"],
    ids=["bytes", "str"],
)
def test_a_utf8_byte_order_mark_is_skipped(body: bytes | str) -> None:
    assert verdict(body, "/x") == (False, "Disallow: /x", 2)


def test_str_and_bytes_bodies_mean_the_same() -> None:
    text = "User-agent: *\nDisallow: /caf\u00e9\nAllow: /caf\u00e9/menu\n"
    for body in (text, text.encode("utf-8")):
        assert verdict(body, "/caf%C3%A9")[::2] == (False, 2)
        assert verdict(body, "/caf\u00e9/menu")[::2] == (True, 3)


# --- lines that are not records -------------------------------------------------------


def test_unparseable_lines_are_skipped_without_ending_the_group() -> None:
    body = (
        b"User-agent: *\n"
        b"this line has no colon and many words\n"
        b"lonelyword\n"
        b":/no-key\n"
        b"Disallow: /x\n"
    )
    assert verdict(body, "/x") == (False, "Disallow: /x", 5)
    assert verdict(body, "/no-key") == (True, None, None)


def test_missing_colon_is_accepted_when_the_line_has_two_tokens() -> None:
    # Google (robots.cc): "some people forget the colon, so we need to accept whitespace
    # in its stead" - only when there are exactly two whitespace-separated tokens.
    body = b"User-agent *\nDisallow /x\nDisallow /y /z\n"
    assert verdict(body, "/x") == (False, "Disallow: /x", 2)
    assert verdict(body, "/y") == (True, None, None)


@pytest.mark.parametrize("separator", [b"\x0b", b"\x0c"])
def test_only_sp_and_htab_stand_in_for_a_missing_colon(separator: bytes) -> None:
    # Google (robots.cc GetKeyAndValueFrom) looks for " \t" where the colon is missing:
    # a vertical tab or form feed joins "Disallow" and "/" into one token, no record...
    body = b"User-agent: *\nDisallow" + separator + b"/\n"
    assert verdict(body, "/x") == (True, None, None)
    # ... and inside a value it separates nothing, so this is still two tokens.
    body = b"User-agent Googlebot" + separator + b"x\nDisallow /\n"
    decision = RobotsTxt.parse(body).explain(f"{URL}/x", "Googlebot")
    assert (decision.allowed, decision.line) == (False, 2)
    assert decision.user_agents == ("Googlebot" + separator.decode() + "x",)
    assert RobotsTxt.parse(body).allowed(f"{URL}/x", "otherbot") is True
    # Around the tokens it is whitespace like any other and stripped.
    body = b"User-agent: *\nDisallow \t" + separator + b"/x" + separator + b"\n"
    assert verdict(body, "/x") == (False, "Disallow: /x", 2)


def test_rules_before_the_first_user_agent_line_are_ignored() -> None:
    body = b"Disallow: /early\nAllow: /\n\nUser-agent: *\nDisallow: /late\n"
    assert verdict(body, "/early") == (True, None, None)
    assert verdict(body, "/late") == (False, "Disallow: /late", 5)


@pytest.mark.parametrize(
    "record",
    [
        b"Sitemap: https://example.com/sitemap.xml",
        b"Crawl-delay: 5",
        b"Host: example.com",
        b"Clean-param: ref /articles/",
        b"Unknown-Key: whatever",
        b"Noindex: /x",
        b"Content-Signal: search=yes, ai-train=no",
        b"License: https://example.com/license.xml",
        b"Content-Usage\x0b: train-ai=n",  # not a Content-Usage rule: \v is no SP or HTAB
    ],
)
def test_other_records_never_end_a_group(record: bytes) -> None:
    # RFC 9309 2.2.4: "Parsing of other records MUST NOT interfere with the parsing of
    # explicitly defined records in Section 2. For example, a "Sitemaps" record MUST NOT
    # terminate a group."
    between_agents = b"User-agent: a\n" + record + b"\nUser-agent: b\nDisallow: /x\n"
    for agent in ("a", "b"):
        decision = RobotsTxt.parse(between_agents).explain(f"{URL}/x", agent)
        assert (decision.allowed, decision.line, decision.user_agents) == (False, 4, ("a", "b"))
    between_rules = b"User-agent: a\nDisallow: /x\n" + record + b"\nDisallow: /y\n"
    assert verdict(between_rules, "/y", "a") == (False, "Disallow: /y", 4)
    assert verdict(between_rules, "/y", "other") == (True, None, None)


@pytest.mark.parametrize(
    "rule",
    [b"Content-Usage: train-ai=n", b" content-usage\t:\t/x train-ai=n", b"CONTENT-USAGE:"],
)
def test_a_content_usage_rule_ends_the_user_agent_lines_of_a_group(rule: bytes) -> None:
    # draft-ietf-aipref-attach section 3 extends RFC 9309's ABNF: "rule =/ content-usage";
    # a user-agent line after a rule starts a new group.
    body = b"User-agent: a\n" + rule + b"\nUser-agent: b\nDisallow: /x\n"
    decision = RobotsTxt.parse(body).explain(f"{URL}/x", "a")
    assert (decision.allowed, decision.user_agents) == (True, ("a",))
    decision = RobotsTxt.parse(body).explain(f"{URL}/x", "b")
    assert (decision.allowed, decision.user_agents) == (False, ("b",))


def test_consecutive_user_agent_lines_share_one_group() -> None:
    # Blank lines and comments between them do not split the group either:
    # group = startgroupline *(startgroupline / emptyline) *(rule / emptyline)
    body = b"User-agent: a\nUser-agent: b\n\n# note\nUser-agent: c\nDisallow: /x\n"
    for agent in ("a", "b", "c"):
        decision = RobotsTxt.parse(body).explain(f"{URL}/x", agent)
        assert (decision.allowed, decision.line) == (False, 6)
        assert decision.user_agents == ("a", "b", "c")


def test_a_user_agent_line_after_rules_starts_a_new_group() -> None:
    body = b"User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n"
    assert verdict(body, "/x", "a") == (False, "Disallow: /x", 2)
    assert verdict(body, "/y", "a") == (True, None, None)
    assert verdict(body, "/y", "b") == (False, "Disallow: /y", 4)
    assert verdict(body, "/x", "b") == (True, None, None)


def test_blank_lines_inside_a_group_do_not_end_it() -> None:
    body = b"User-agent: a\nDisallow: /x\n\n\nDisallow: /y\n"
    assert verdict(body, "/y", "a") == (False, "Disallow: /y", 5)


def test_groups_naming_the_same_agent_are_merged_case_insensitively() -> None:
    body = (
        b"User-agent: FooBot\nDisallow: /one\n\n"
        b"User-agent: other\nDisallow: /two\n\n"
        b"User-agent: foobot\nUser-agent: barbot\nDisallow: /three\n"
    )
    assert verdict(body, "/one", "foobot")[2] == 2
    assert verdict(body, "/three", "FOOBOT")[2] == 9
    assert verdict(body, "/two", "foobot") == (True, None, None)
    assert verdict(body, "/one", "barbot") == (True, None, None)


def test_star_groups_are_merged_too() -> None:
    body = (
        b"User-agent: *\nDisallow: /one\n\n"
        b"User-agent: a\nDisallow: /a\n\n"
        b"User-agent: *\nDisallow: /two\n"
    )
    assert verdict(body, "/one")[2] == 2
    assert verdict(body, "/two")[2] == 8


def test_star_group_applies_only_when_no_group_matches() -> None:
    body = b"User-agent: *\nDisallow: /\n\nUser-agent: foo\nDisallow: /private\n"
    assert verdict(body, "/public", "foo") == (True, None, None)
    assert verdict(body, "/private", "foo") == (False, "Disallow: /private", 5)
    assert verdict(body, "/public", "bar") == (False, "Disallow: /", 2)


def test_empty_allow_and_disallow_values_are_ignored() -> None:
    # RFC 9309 2.2: empty-pattern; an empty value matches nothing (Google and RFC 5.1
    # "Disallow:" with no path means nothing is disallowed).
    assert verdict(b"User-agent: *\nDisallow:\n", "/x") == (True, None, None)
    assert verdict(b"User-agent: *\nDisallow: /\nAllow:\n", "/x") == (False, "Disallow: /", 2)


# --- leniency ---------------------------------------------------------------------------


# Google's robots.cc (ParsedRobotsKey::KeyIsUserAgent / KeyIsDisallow / KeyIsSitemap)
# accepts these spellings with kAllowFrequentTypos.
@pytest.mark.parametrize("key", [b"useragent", b"user agent", b"User-Agent", b"USERAGENT"])
def test_user_agent_misspellings_are_accepted(key: bytes) -> None:
    body = key + b": foo\nDisallow: /x\n"
    decision = RobotsTxt.parse(body).explain(f"{URL}/x", "foo")
    assert (decision.allowed, decision.user_agents) == (False, ("foo",))


@pytest.mark.parametrize(
    "key", [b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw", b"DISALOW"]
)
def test_disallow_misspellings_are_accepted(key: bytes) -> None:
    body = b"User-agent: *\n" + key + b": /x\n"
    assert verdict(body, "/x") == (False, "Disallow: /x", 2)


@pytest.mark.parametrize("key", [b"Sitemap", b"site-map", b"SITEMAP"])
def test_sitemap_spellings_are_accepted(key: bytes) -> None:
    rules = RobotsTxt.parse(key + b": https://example.com/s.xml\n")
    assert rules.sitemaps == ["https://example.com/s.xml"]


@pytest.mark.parametrize("key", [b"deny", b"block", b"nallow", b"dis-allow"])
def test_unknown_keys_are_not_rules(key: bytes) -> None:
    body = b"User-agent: *\n" + key + b": /x\n"
    assert verdict(body, "/x") == (True, None, None)


def test_rule_lines_inside_html_served_as_robots_txt() -> None:
    # Some servers wrap robots.txt in an HTML page; Google reads the lines that are rule
    # lines and skips the markup, so the rules still apply.
    body = (
        b"<!DOCTYPE html>\n<html><head><title>robots</title>\n"
        b'<meta http-equiv="Content-Type" content="text/html; charset=utf-8">\n'
        b"</head><body><pre>\n"
        b"User-agent: *\n"
        b"Disallow: /private\n"
        b"</pre></body></html>\n"
    )
    assert verdict(body, "/private/x") == (False, "Disallow: /private", 6)
    assert verdict(body, "/public") == (True, None, None)


def test_an_html_error_page_allows_everything() -> None:
    body = (
        b"<html>\n<head><title>404 Not Found</title></head>\n"
        b'<body><h1>Not Found</h1><p>See <a href="https://example.com/">home</a>: '
        b"nothing here.</p></body>\n</html>\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.explain(f"{URL}/anything", "anybot") == Decision(True, None, None, ())
    assert rules.sitemaps == []


# --- bytes that are not UTF-8, long lines ----------------------------------------------


def test_invalid_utf8_never_raises_and_octets_are_percent_encoded() -> None:
    # RFC 9309 2.2.2: "Octets in the URI and robots.txt paths outside the range of the
    # ASCII coded character set ... MUST be percent-encoded": a Latin-1 "é" (0xE9) in a
    # rule is the octet %E9, not the UTF-8 character.
    body = b"User-agent: *\nDisallow: /caf\xe9\nUser-agent: b\xff\xfeot\nDisallow: /\xc3\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed(f"{URL}/caf%E9", "anybot") is False
    assert rules.allowed(f"{URL}/caf%e9/x", "anybot") is False
    assert rules.allowed(f"{URL}/caf%C3%A9", "anybot") is True
    assert rules.allowed(f"{URL}/cafe", "anybot") is True


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe\x00U\x00s\x00e\x00r",
        b"User-agent: \xc0\xaf\nDisallow: /\x80\x81\n",
        b"\x00\x00\x00\n\x00Disallow: /\n",
        b"User-agent: *\nDisallow: /\xed\xa0\x80\n",
        b"Sitemap: http://example.com/\xe9.xml\n",
    ],
)
def test_garbage_bytes_parse_and_answer(body: bytes) -> None:
    rules = RobotsTxt.parse(body)
    assert isinstance(rules.allowed(f"{URL}/x", "anybot"), bool)
    assert isinstance(rules.sitemaps, list)
    assert rules.crawl_delay("anybot") is None or isinstance(rules.crawl_delay("anybot"), float)


def test_a_str_body_with_a_lone_surrogate_never_raises() -> None:
    # A Python str may hold code points UTF-8 cannot encode (lone surrogates, e.g. from
    # careless decoding); "never raises on content" includes such a str.
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /x\ud800y\nDisallow: /z\n")
    assert rules.allowed(f"{URL}/z", "anybot") is False
    assert rules.allowed(f"{URL}/a", "anybot") is True


def test_an_over_long_line_is_truncated_and_the_next_line_still_counts() -> None:
    # Google truncates each line to 2083 * 8 - 1 = 16663 bytes and ignores the rest of it.
    kept = 2083 * 8 - 1 - len(b"Disallow: ")
    long_value = b"/" + b"a" * 30000
    body = b"User-agent: *\nDisallow: " + long_value + b"\nDisallow: /next\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed(f"{URL}/next", "anybot") is False
    assert rules.explain(f"{URL}/next", "anybot").line == 3
    # The truncated rule is the first `kept` bytes of the value: it matches a URL that
    # has that prefix even though the full value would not.
    assert rules.allowed(f"{URL}/{'a' * (kept - 1)}zzz", "anybot") is False
    assert rules.allowed(f"{URL}/{'a' * (kept - 2)}zzz", "anybot") is True


# --- explain(), crawl_delay, sitemaps -----------------------------------------------------


def test_explain_reports_rule_line_and_group_as_written() -> None:
    body = (
        b"# header\n\n"
        b"User-agent: FooBot\nUser-agent: BarBot\nDisallow: /private\nAllow: /private/ok\n"
    )
    rules = RobotsTxt.parse(body)
    blocked = rules.explain(f"{URL}/private/x", "foobot")
    assert isinstance(blocked, Decision)
    assert blocked == Decision(False, "Disallow: /private", 5, ("FooBot", "BarBot"))
    assert rules.explain(f"{URL}/private/ok", "BarBot") == Decision(
        True, "Allow: /private/ok", 6, ("FooBot", "BarBot")
    )
    assert rules.explain(f"{URL}/public", "foobot") == Decision(
        True, None, None, ("FooBot", "BarBot")
    )
    assert rules.explain(f"{URL}/private", "nobot") == Decision(True, None, None, ())
    assert isinstance(blocked.user_agents, tuple)


def test_explain_agrees_with_allowed() -> None:
    rules = RobotsTxt.parse(b"User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /a/b/c$\n")
    for path in ("/", "/a", "/a/b", "/a/b/c", "/a/b/c/d", "/robots.txt"):
        assert rules.explain(f"{URL}{path}", "x").allowed is rules.allowed(f"{URL}{path}", "x")


def test_url_forms_accepted_by_allowed() -> None:
    rules = RobotsTxt.parse(b"User-agent: *\nDisallow: /a$\nDisallow: /q?x=1\n")
    for url in ("https://example.com/a", "/a", "http://user:pw@example.com:8080/a", "/a#frag"):
        assert rules.allowed(url, "anybot") is False, url
    for url in ("/q?x=1", "https://example.com/q?x=1&y=2"):
        assert rules.allowed(url, "anybot") is False, url
    assert rules.allowed("/q?x=2", "anybot") is True
    assert rules.allowed("/a?", "anybot") is True


@pytest.mark.parametrize(
    ("value", "delay"),
    [
        (b"5", 5.0),
        (b"2.5", 2.5),
        (b" 10 ", 10.0),
        (b"0", 0.0),
        (b".5", 0.5),
        (b"abc", None),
        (b"", None),
        # Not decimal numbers of seconds (Python's float() took the first three).
        (b"1_0", None),
        (b"1e3", None),
        (b"-0", None),
        (b"-1", None),
        (b"nan", None),
        (b"inf", None),
        (b"9" * 400, None),  # float() makes it inf
    ],
)
def test_crawl_delay_value(value: bytes, delay: float | None) -> None:
    rules = RobotsTxt.parse(b"User-agent: *\nCrawl-delay: " + value + b"\nDisallow: /x\n")
    assert rules.crawl_delay("anybot") == delay
    assert rules.allowed(f"{URL}/x", "anybot") is False


def test_crawl_delay_comes_from_the_group_that_applies() -> None:
    body = (
        b"Crawl-delay: 99\n"
        b"User-agent: *\nCrawl-delay: 1\nDisallow: /z\n\n"
        b"User-agent: slowbot\nCRAWL-DELAY: 7\nDisallow: /x\n\n"
        b"User-agent: nodelaybot\nDisallow: /y\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.crawl_delay("slowbot") == 7.0
    assert rules.crawl_delay("SlowBot/1.0 (+https://slow.example)") == 7.0
    assert rules.crawl_delay("anybot") == 1.0
    # A group of its own without a delay: the "*" group's delay does not leak into it.
    assert rules.crawl_delay("nodelaybot") is None
    assert RobotsTxt.parse(b"Crawl-delay: 3\n").crawl_delay("anybot") is None


def test_a_crawl_delay_belongs_to_the_user_agent_lines_directly_above_it() -> None:
    # RFC 9309 merges these lines into one group for Allow/Disallow (a Crawl-delay line
    # ends no group), but each delay is meant for the user agents just above it, as
    # Protego and crawler-commons read it.
    body = (
        b"User-agent: bingbot\nCrawl-delay: 1\n"
        b"User-agent: msnbot\nCrawl-delay: 2\n"
        b"User-agent: *\nDisallow: /login\n"
    )
    rules = RobotsTxt.parse(body)
    assert (rules.crawl_delay("msnbot"), rules.crawl_delay("bingbot")) == (2.0, 1.0)
    assert rules.crawl_delay("anybot") is None
    for agent in ("msnbot", "bingbot", "anybot"):
        decision = rules.explain(f"{URL}/login", agent)
        assert (decision.allowed, decision.line) == (False, 6)
        assert decision.user_agents == ("bingbot", "msnbot", "*")


@pytest.mark.parametrize(
    "first_group",
    [
        b"User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n",
        b"User-agent: *\nDisallow: /q # no crawling here\n",
    ],
    ids=["content-signal", "comment-with-crawl"],
)
def test_a_crawl_delay_belongs_to_no_user_agent_line_of_an_earlier_group(
    first_group: bytes,
) -> None:
    """The user-agent lines of a group read before (here because it has a
    ``Content-Signal`` line, or the word "crawl" in a comment) were taken for the start
    of the next group's run, and bingbot's delay went to every crawler (found by a second
    reviewer)."""
    body = first_group + b"\nUser-agent: bingbot\nCrawl-delay: 5\nUser-agent: *\nDisallow: /a\n"
    rules = RobotsTxt.parse(body)
    assert (rules.crawl_delay("bingbot"), rules.crawl_delay("mybot")) == (5.0, None)


def test_crawl_delays_after_the_rules_belong_to_the_last_user_agent_lines() -> None:
    body = (
        b"User-agent: a\nUser-agent: b\nCrawl-delay: x\nCrawl-delay: 3\n"
        b"User-agent: c\n# comment\nSitemap: https://example.com/s.xml\nUser-agent: d\n"
        b"Disallow: /\nCrawl-delay: 4\n\n"
        b"User-agent: e\nDisallow: /\nCrawl-delay: 5\nUser-agent: a\nCrawl-delay: 6\n"
    )
    rules = RobotsTxt.parse(body)
    # "a" is named twice: the first valid delay in file order of its runs.
    assert [rules.crawl_delay(agent) for agent in "abcde"] == [3.0, 3.0, 4.0, 4.0, 5.0]
    assert rules.crawl_delay("f") is None


def test_sitemaps_from_anywhere_in_order() -> None:
    body = (
        b"Sitemap: https://example.com/a.xml\n"
        b"User-agent: *\nDisallow: /x\nsitemap:https://example.com/b.xml   # comment\n"
        b"User-agent: other\nSITEMAP:   https://other.example/c.xml.gz\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.sitemaps == [
        "https://example.com/a.xml",
        "https://example.com/b.xml",
        "https://other.example/c.xml.gz",
    ]
    assert RobotsTxt.parse(b"User-agent: *\nDisallow: /\n").sitemaps == []


def test_empty_body_allows_everything() -> None:
    for body in (b"", "", b"\n\n", b"   "):
        rules = RobotsTxt.parse(body)
        assert rules.explain(f"{URL}/x", "anybot") == Decision(True, None, None, ())
        assert rules.sitemaps == []
        assert rules.crawl_delay("anybot") is None
