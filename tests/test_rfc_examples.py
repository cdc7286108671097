"""The examples of RFC 9309 (Robots Exclusion Protocol), each one a test.

Quotations are from https://www.rfc-editor.org/rfc/rfc9309 (September 2022); section
numbers are given with each. Section 5 holds the two worked examples; sections 2.2.1 to
2.2.3 hold the figures on product tokens, merging, percent-encoding and special characters.
"""

from __future__ import annotations

import pytest

from scrapy_rep9309 import RobotsTxt

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

# RFC 9309 section 5.1, "Simple Example", verbatim (figure 7), including the "EOF" marker
# line that ends the figure: a single word with no colon is an unparseable line, which
# section 2.2 says crawlers skip.
SIMPLE_EXAMPLE = b"""User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""

# RFC 9309 section 5.2, "Longest Match", verbatim (figure 8).
LONGEST_MATCH_EXAMPLE = b"""User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
"""


@pytest.fixture(scope="module")
def simple() -> RobotsTxt:
    return RobotsTxt.parse(SIMPLE_EXAMPLE)


# "*: A group that's relevant to all user agents that don't have an explicitly defined
# matching group. It allows access to the URLs with the /publications/ path prefix, and it
# restricts access to the URLs with the /example/ path prefix and to all URLs with a .gif
# suffix. The "*" character designates any character, including the otherwise-required
# forward slash; see Section 2.2."
@pytest.mark.parametrize(
    ("path", "allowed", "rule", "line"),
    [
        ("/publications/", True, "Allow: /publications/", 4),
        ("/publications/2022/report.html", True, "Allow: /publications/", 4),
        ("/example/", False, "Disallow: /example/", 3),
        ("/example/page.html", False, "Disallow: /example/", 3),
        ("/image.gif", False, "Disallow: *.gif$", 2),
        # "*" also crosses "/": a .gif anywhere in the tree.
        ("/a/b/c/image.gif", False, "Disallow: *.gif$", 2),
        # "$" anchors the suffix: a query after .gif is no longer a .gif suffix.
        ("/image.gif?size=large", True, None, None),
        ("/image.gifs", True, None, None),
        # /publications/ (14 octets) is longer than *.gif$ (6 octets), so it wins.
        ("/publications/cover.gif", True, "Allow: /publications/", 4),
        ("/", True, None, None),
        ("/other/page.html", True, None, None),
    ],
)
def test_simple_example_star_group(
    simple: RobotsTxt, path: str, allowed: bool, rule: str | None, line: int | None
) -> None:
    decision = simple.explain(f"https://www.example.com{path}", "otherbot")
    assert (decision.allowed, decision.rule, decision.line) == (allowed, rule, line)
    assert decision.user_agents == ("*",)


# "foobot: A regular case. A single user agent followed by rules. The crawler only has
# access to two URL path prefixes on the site -- /example/page.html and
# /example/allowed.gif. The rules of the group are matched by the crawler as described in
# Section 2.2.2..." (its own group replaces the "*" group entirely).
@pytest.mark.parametrize(
    ("path", "allowed", "rule", "line"),
    [
        ("/example/page.html", True, "Allow: /example/page.html", 8),
        ("/example/allowed.gif", True, "Allow: /example/allowed.gif", 9),
        # They are path prefixes.
        ("/example/page.html?lang=en", True, "Allow: /example/page.html", 8),
        ("/", False, "Disallow: /", 7),
        ("/example/", False, "Disallow: /", 7),
        ("/example/other.html", False, "Disallow: /", 7),
        # The "*" group's Allow: /publications/ does not apply to foobot.
        ("/publications/", False, "Disallow: /", 7),
        ("/image.gif", False, "Disallow: /", 7),
    ],
)
def test_simple_example_foobot(
    simple: RobotsTxt, path: str, allowed: bool, rule: str, line: int
) -> None:
    decision = simple.explain(f"https://www.example.com{path}", "foobot")
    assert (decision.allowed, decision.rule, decision.line) == (allowed, rule, line)
    assert decision.user_agents == ("foobot",)


# "barbot and bazbot: A group that's relevant for more than one user agent with one rule."
@pytest.mark.parametrize("agent", ["barbot", "bazbot", "BarBot", "BAZBOT"])
@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/example/page.html", False),
        # Only their own rule applies: the "*" group's /example/ and *.gif$ do not.
        ("/example/other.html", True),
        ("/image.gif", True),
        ("/publications/", True),
    ],
)
def test_simple_example_barbot_and_bazbot(
    simple: RobotsTxt, agent: str, path: str, allowed: bool
) -> None:
    decision = simple.explain(f"https://www.example.com{path}", agent)
    assert decision.allowed is allowed
    assert decision.user_agents == ("barbot", "bazbot")
    if not allowed:
        assert (decision.rule, decision.line) == ("Disallow: /example/page.html", 13)


# "quxbot: An empty group at the end of the file." Section 2.2.2: "If no match is found
# amongst the rules in a group for a matching user-agent or there are no rules in the
# group, the URI is allowed." The "*" group is not a fallback for a group with no rules.
@pytest.mark.parametrize("path", ["/", "/example/page.html", "/image.gif", "/example/"])
def test_simple_example_quxbot_empty_group(simple: RobotsTxt, path: str) -> None:
    decision = simple.explain(f"https://www.example.com{path}", "quxbot")
    assert (decision.allowed, decision.rule, decision.line) == (True, None, None)
    assert decision.user_agents == ("quxbot",)


# Section 5.2: "The following example shows that in the case of two rules, the longest
# one is used for matching. In the following case, /example/page/disallowed.gif MUST be
# used for the URI example.com/example/page/disallow.gif."
def test_longest_match_example() -> None:
    rules = RobotsTxt.parse(LONGEST_MATCH_EXAMPLE)
    decision = rules.explain("https://example.com/example/page/disallowed.gif", "foobot")
    assert (decision.allowed, decision.rule, decision.line) == (
        False,
        "Disallow: /example/page/disallowed.gif",
        3,
    )
    other = rules.explain("https://example.com/example/page/other.gif", "foobot")
    assert (other.allowed, other.rule, other.line) == (True, "Allow: /example/page/", 2)


def test_longest_match_example_as_printed() -> None:
    # The printed URI ".../disallow.gif" is a typo (RFC errata 7124 corrects it to
    # ".../disallowed.gif"): taken literally, the Disallow pattern does not match it, so
    # the only matching rule is the Allow.
    rules = RobotsTxt.parse(LONGEST_MATCH_EXAMPLE)
    decision = rules.explain("https://example.com/example/page/disallow.gif", "foobot")
    assert (decision.allowed, decision.rule) == (True, "Allow: /example/page/")


# Section 2.2.1, figure 2: the product token is a substring of the User-Agent header.
# "User-Agent: Mozilla/5.0 (compatible; ExampleBot/0.1; https://www.example.com/bot.html)"
# goes with "user-agent: ExampleBot".
def test_product_token_in_user_agent_header() -> None:
    rules = RobotsTxt.parse(b"user-agent: ExampleBot\ndisallow: /private\n")
    header = "Mozilla/5.0 (compatible; ExampleBot/0.1; https://www.example.com/bot.html)"
    assert rules.allowed("https://www.example.com/private/x", header) is False
    assert rules.allowed("https://www.example.com/private/x", "ExampleBot") is False
    assert rules.allowed("https://www.example.com/public", header) is True


# Section 2.2.1: "Crawlers MUST use case-insensitive matching to find the group that
# matches the product token and then obey the rules of the group. If there is more than
# one group matching the user-agent, the matching groups' rules MUST be combined into one
# group and parsed according to Section 2.2.2." Figure 3:
MERGE_EXAMPLE = b"""user-agent: ExampleBot
disallow: /foo
disallow: /bar

user-agent: ExampleBot
disallow: /baz
"""


@pytest.mark.parametrize("agent", ["ExampleBot", "examplebot", "EXAMPLEBOT"])
@pytest.mark.parametrize(
    ("path", "line"), [("/foo", 2), ("/bar/x", 3), ("/baz", 6), ("/qux", None)]
)
def test_groups_for_the_same_token_are_merged(agent: str, path: str, line: int | None) -> None:
    decision = RobotsTxt.parse(MERGE_EXAMPLE).explain(f"https://example.com{path}", agent)
    assert decision.allowed is (line is None)
    assert decision.line == line


# Section 2.2.1: "If no group matches the product token and there is a group with a "*"
# user-agent, the crawler MUST obey the rules of the "*" group. If there's no matching
# group and no "*" group, no rules apply." (Both are shown by the figure-7 example above;
# this covers the "no group at all" half.)
def test_no_matching_group_and_no_star_group_means_no_rules() -> None:
    rules = RobotsTxt.parse(b"user-agent: foobot\ndisallow: /\n")
    decision = rules.explain("https://example.com/anything", "otherbot")
    assert (decision.allowed, decision.rule, decision.user_agents) == (True, None, ())


# Section 2.2.2: "The /robots.txt URI is implicitly allowed."
@pytest.mark.parametrize(
    "url", ["https://example.com/robots.txt", "/robots.txt", "http://example.com:8080/robots.txt"]
)
def test_robots_txt_is_implicitly_allowed(url: str) -> None:
    rules = RobotsTxt.parse(b"user-agent: *\ndisallow: /\ndisallow: /robots.txt\n")
    assert rules.allowed(url, "anybot") is True
    assert rules.allowed("https://example.com/robots.txt.bak", "anybot") is False


# Section 2.2.2: "If an "allow" rule and a "disallow" rule are equivalent, then the
# "allow" rule SHOULD be used." and "The matching SHOULD be case sensitive."
def test_equivalent_rules_allow_wins_and_matching_is_case_sensitive() -> None:
    for body in (
        b"user-agent: *\ndisallow: /a\nallow: /a\n",
        b"user-agent: *\nallow: /a\ndisallow: /a\n",
    ):
        decision = RobotsTxt.parse(body).explain("https://example.com/a/b", "anybot")
        assert (decision.allowed, decision.rule) == (True, "Allow: /a")
    rules = RobotsTxt.parse(b"user-agent: *\ndisallow: /Private\n")
    assert rules.allowed("https://example.com/Private", "anybot") is False
    assert rules.allowed("https://example.com/private", "anybot") is True


# Section 2.2.2, figure 4, "Examples of Matching Percent-Encoded URI Components":
#   | Path                         | Encoded Path                       | Path to Match       |
#   | /foo/bar?baz=quz             | /foo/bar?baz=quz                   | /foo/bar?baz=quz    |
#   | /foo/bar?baz=https://foo.bar | /foo/bar?baz=https%3A%2F%2Ffoo.bar | (same as encoded)   |
#   | /foo/bar/U+E38384            | /foo/bar/%E3%83%84                 | /foo/bar/%E3%83%84  |
#   | /foo/bar/%E3%83%84           | /foo/bar/%E3%83%84                 | /foo/bar/%E3%83%84  |
#   | /foo/bar/%62%61%7A           | /foo/bar/%62%61%7A                 | /foo/bar/baz        |
# Each row: a rule written in any of the row's forms matches a URL written in any of them,
# because both sides are brought to the "Path to Match" form before comparison.
# Row 2 is only checked in its encoded form: whether a literal ":" or "/" inside a query
# value equals its percent-encoded form is left open by the RFC (RFC 3986 section 2.2
# says they are not equivalent; the figure shows the crawler encoding them when it
# builds the URL), so only the form the figure says is matched is asserted.
PERCENT_ENCODING_ROWS = [
    ("/foo/bar?baz=quz", ["/foo/bar?baz=quz"]),
    ("/foo/bar?baz=https%3A%2F%2Ffoo.bar", ["/foo/bar?baz=https%3A%2F%2Ffoo.bar"]),
    ("/foo/bar/ツ", ["/foo/bar/ツ", "/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"]),
    ("/foo/bar/%E3%83%84", ["/foo/bar/ツ", "/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"]),
    ("/foo/bar/%62%61%7A", ["/foo/bar/baz", "/foo/bar/%62%61%7A", "/foo/bar/%62a%7a"]),
    ("/foo/bar/baz", ["/foo/bar/baz", "/foo/bar/%62%61%7A"]),
]


@pytest.mark.parametrize(("pattern", "url_paths"), PERCENT_ENCODING_ROWS)
def test_percent_encoding_figure_4(pattern: str, url_paths: list[str]) -> None:
    rules = RobotsTxt.parse(f"user-agent: *\ndisallow: /\nallow: {pattern}$\n".encode())
    for url_path in url_paths:
        decision = rules.explain(f"https://example.com{url_path}", "anybot")
        assert decision.allowed is True, f"{pattern!r} should match {url_path!r}"
        assert decision.line == 3


def test_percent_encoded_reserved_characters_stay_encoded() -> None:
    # "...it MUST be unencoded prior to comparison, unless it is a reserved character in
    # the URI as defined by [RFC3986]": %2F is not a "/" path separator.
    rules = RobotsTxt.parse(b"user-agent: *\ndisallow: /a/b\n")
    assert rules.allowed("https://example.com/a/b", "anybot") is False
    assert rules.allowed("https://example.com/a%2Fb", "anybot") is True
    encoded = RobotsTxt.parse(b"user-agent: *\ndisallow: /a%2fb\n")
    assert encoded.allowed("https://example.com/a%2Fb", "anybot") is False
    assert encoded.allowed("https://example.com/a/b", "anybot") is True


def test_percent_encoded_unreserved_characters_are_decoded() -> None:
    # Unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 2.3).
    rules = RobotsTxt.parse(b"user-agent: *\ndisallow: /~user/a-b_c.d\n")
    for url_path in ("/~user/a-b_c.d", "/%7Euser/a%2Db%5Fc%2Ed", "/%7euser/%61-b_c.d"):
        assert rules.allowed(f"https://example.com{url_path}", "anybot") is False, url_path


# Section 2.2.3, figure 5, "List of Special Characters in robots.txt Files":
#   | # | Designates a line comment. | allow: / # comment in line
#   |   |                            | # comment on its own line
#   | $ | Designates the end of the match pattern. | allow: /this/path/exactly$
#   | * | Designates 0 or more instances of any character. | allow: /this/*/exactly
def test_special_character_comment() -> None:
    rules = RobotsTxt.parse(
        b"user-agent: *\ndisallow: /\nallow: / # comment in line\n\n# comment on its own line\n"
    )
    decision = rules.explain("https://example.com/anything", "anybot")
    assert (decision.allowed, decision.rule, decision.line) == (True, "Allow: /", 3)


@pytest.mark.parametrize(
    ("path", "matched"),
    [
        ("/this/path/exactly", True),
        ("/this/path/exactly/", False),
        ("/this/path/exactly?q", False),
        ("/this/path/exactl", False),
    ],
)
def test_special_character_dollar(path: str, matched: bool) -> None:
    rules = RobotsTxt.parse(b"user-agent: *\ndisallow: /\nallow: /this/path/exactly$\n")
    assert rules.allowed(f"https://example.com{path}", "anybot") is matched


@pytest.mark.parametrize(
    ("path", "matched"),
    [
        ("/this/a/exactly", True),
        ("/this//exactly", True),
        ("/this/a/b/c/exactly", True),
        ("/this/a/exactly/more", True),
        ("/this/exactly", False),
        ("/that/a/exactly", False),
    ],
)
def test_special_character_star(path: str, matched: bool) -> None:
    rules = RobotsTxt.parse(b"user-agent: *\ndisallow: /\nallow: /this/*/exactly\n")
    assert rules.allowed(f"https://example.com{path}", "anybot") is matched


# Section 2.2.3: "If crawlers match special characters verbatim in the URI, crawlers
# SHOULD use "%" encoding. For example:" figure 6, "Example of Percent-Encoding":
#   | Percent-Encoded Pattern     | URI                                               |
#   | /path/file-with-a-%2A.html  | https://www.example.com/path/file-with-a-*.html   |
#   | /path/foo-%24               | https://www.example.com/path/foo-$                |
@pytest.mark.parametrize(
    ("pattern", "uri", "not_matched"),
    [
        (
            "/path/file-with-a-%2A.html",
            "https://www.example.com/path/file-with-a-*.html",
            "https://www.example.com/path/file-with-a-b.html",
        ),
        (
            "/path/foo-%24",
            "https://www.example.com/path/foo-$",
            "https://www.example.com/path/foo-",
        ),
    ],
)
def test_percent_encoded_special_characters_figure_6(
    pattern: str, uri: str, not_matched: str
) -> None:
    rules = RobotsTxt.parse(f"user-agent: *\ndisallow: {pattern}\n".encode())
    assert rules.allowed(uri, "anybot") is False
    # The URI may itself carry the encoded form; it is the same character.
    assert rules.allowed(uri.replace("*", "%2A").replace("$", "%24"), "anybot") is False
    # %2A is a literal "*", not a wildcard; %24 is a literal "$", not an end anchor.
    assert rules.allowed(not_matched, "anybot") is True
    assert rules.allowed(f"{uri}x", "anybot") is False


# Section 2.5: "The parsing limit MUST be at least 500 kibibytes [KiB]." See
# test_size_limit.py for the limit itself; here, only that 500 KiB are read by default.
def test_500_kib_are_parsed_by_default() -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    body = b"user-agent: *\n" + filler * 500 + b"disallow: /late\n"
    assert len(body) < 500 * 1024
    assert RobotsTxt.parse(body).allowed("https://example.com/late", "anybot") is False
