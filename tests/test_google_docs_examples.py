"""The examples of Google's "How Google interprets the robots.txt specification".

Source: https://developers.google.com/search/docs/crawling-indexing/robots/robots_txt
(sections "URL matching based on path values", "Order of precedence for rules",
"Order of precedence for user agents" and "Grouping of lines and rules"). Each table row
is a test; where Google's behaviour goes beyond RFC 9309 the comment says so.
"""

from __future__ import annotations

import pytest

from scrapy_rep9309 import RobotsTxt

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

# The page lists the same URLs for "/fish" and "/fish*".
FISH_MATCHES = [
    "/fish",
    "/fish.html",
    "/fish/salmon.html",
    "/fishheads",
    "/fishheads/yummy.html",
    "/fish.php?id=anything",
]
FISH_NON_MATCHES = ["/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"]

# "URL matching based on path values": each path value with the URLs it matches and the
# URLs it does not. Tested as the only rule of a "*" group, so matched = disallowed.
PATH_TABLE: list[tuple[str, list[str], list[str]]] = [
    # "/  Matches the root and any lower level URL."
    ("/", ["/", "/fish", "/a/b/c?d=e"], []),
    # "/*  Equivalent to /. The trailing wildcard is ignored."
    ("/*", ["/", "/fish", "/a/b/c?d=e"], []),
    # "/$  Matches only the root. Any lower level URL is allowed for crawling."
    ("/$", ["/"], ["/fish", "/?q=1", "/index.html"]),
    # "/fish  Matches any path that starts with /fish. Note that the matching is
    # case-sensitive."
    ("/fish", FISH_MATCHES, FISH_NON_MATCHES),
    # "/fish*  Equivalent to /fish. The trailing wildcard is ignored." (Same table.)
    ("/fish*", FISH_MATCHES, FISH_NON_MATCHES),
    # "/fish/  Matches anything in the /fish/ folder." (An older revision of the page
    # listed /animals/fish/ as a match, which contradicts matching from the first octet,
    # RFC 9309 2.2.2; Google's own library does not match it either.)
    (
        "/fish/",
        ["/fish/", "/fish/?id=anything", "/fish/salmon.htm"],
        ["/fish", "/fish.html", "/animals/fish/", "/Fish/Salmon.asp"],
    ),
    # "/*.php  Matches any path that contains .php."
    (
        "/*.php",
        [
            "/index.php",
            "/filename.php",
            "/folder/filename.php",
            "/folder/filename.php?parameters",
            "/folder/any.php.file.html",
            "/filename.php/",
        ],
        # "/ (even if it maps to /index.php)"
        ["/", "/windows.PHP"],
    ),
    # "/*.php$  Matches any path that ends with .php."
    (
        "/*.php$",
        ["/filename.php", "/folder/filename.php"],
        ["/filename.php?parameters", "/filename.php/", "/filename.php5", "/windows.PHP"],
    ),
    # "/fish*.php  Matches any path that contains /fish and .php, in that order."
    ("/fish*.php", ["/fish.php", "/fishheads/catfish.php?parameters"], ["/Fish.PHP"]),
]


def _path_cases() -> list[object]:
    cases: list[object] = []
    for pattern, matches, non_matches in PATH_TABLE:
        cases += [
            pytest.param(pattern, path, True, id=f"{pattern} matches {path}") for path in matches
        ]
        cases += [
            pytest.param(pattern, path, False, id=f"{pattern} does not match {path}")
            for path in non_matches
        ]
    return cases


@pytest.mark.parametrize(("pattern", "path", "matched"), _path_cases())
def test_url_matching_based_on_path_values(pattern: str, path: str, matched: bool) -> None:
    rules = RobotsTxt.parse(f"user-agent: *\ndisallow: {pattern}\n".encode())
    decision = rules.explain(f"https://example.com{path}", "anybot")
    assert decision.allowed is not matched
    assert decision.rule == (f"Disallow: {pattern}" if matched else None)


# "Order of precedence for rules": "When matching robots.txt rules to URLs, crawlers use
# the most specific rule based on the length of its path. In case of conflicting rules,
# including those with wildcards, Google uses the least restrictive rule."
PRECEDENCE_SITUATIONS = [
    # "allow: /p / disallow: / -> Applicable rule: allow: /p, because it's more specific."
    ("https://example.com/page", ["allow: /p", "disallow: /"], "Allow: /p"),
    # "allow: /folder / disallow: /folder -> allow: /folder, because in case of
    # conflicting rules, Google uses the least restrictive rule."
    ("https://example.com/folder/page", ["allow: /folder", "disallow: /folder"], "Allow: /folder"),
    # "allow: /page / disallow: /*.htm -> disallow: /*.htm, because the rule path is
    # longer and it matches more characters in the URL, so it's more specific."
    ("https://example.com/page.htm", ["allow: /page", "disallow: /*.htm"], "Disallow: /*.htm"),
    # "allow: /page / disallow: /*.ph -> allow: /page, because in case of conflicting
    # rules, Google uses the least restrictive rule." (Both are five octets long.)
    ("https://example.com/page.php5", ["allow: /page", "disallow: /*.ph"], "Allow: /page"),
    # "allow: /$ / disallow: / -> allow: /$, because it's more specific."
    ("https://example.com/", ["allow: /$", "disallow: /"], "Allow: /$"),
    # "allow: /$ / disallow: / -> disallow: /, because the allow rule only applies on the
    # root URL."
    ("https://example.com/page.htm", ["allow: /$", "disallow: /"], "Disallow: /"),
]


@pytest.mark.parametrize("order", ["as written", "reversed"])
@pytest.mark.parametrize(("url", "lines", "applicable"), PRECEDENCE_SITUATIONS)
def test_order_of_precedence_for_rules(
    url: str, lines: list[str], applicable: str, order: str
) -> None:
    ordered = lines if order == "as written" else list(reversed(lines))
    body = "user-agent: *\n" + "\n".join(ordered) + "\n"
    decision = RobotsTxt.parse(body.encode()).explain(url, "googlebot")
    assert decision.rule == applicable
    assert decision.allowed is applicable.startswith("Allow")
    # The reported line is the applicable rule's own line, whichever order it came in.
    assert ordered[decision.line - 2].lower() == applicable.lower()


# "Order of precedence for user agents": "Only one group is valid for a particular
# crawler. Google's crawlers determine the correct group of rules by finding in the
# robots.txt file the group with the most specific user agent that matches the crawler's
# user agent. Other groups are ignored. All non-matching text is ignored (for example,
# both googlebot/1.2 and googlebot* are equivalent to googlebot). The order of the groups
# within the robots.txt file is irrelevant."
GROUP_SELECTION_EXAMPLE = b"""user-agent: googlebot-news
disallow: /group-1

user-agent: *
disallow: /group-2

user-agent: googlebot
disallow: /group-3
"""


@pytest.mark.parametrize(
    ("crawler", "group"),
    [
        # "googlebot-news follows group 1, because group 1 is the most specific group."
        ("googlebot-news", ("googlebot-news",)),
        ("Googlebot-News", ("googlebot-news",)),
        # "googlebot follows group 3."
        ("googlebot", ("googlebot",)),
        (
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            ("googlebot",),
        ),
        # "Storebot-Google follows group 2, because there is no specific Storebot-Google
        # group."
        ("Storebot-Google", ("*",)),
        # "Other Google crawlers follow group 2." / "Other Google crawlers that crawl
        # news content, but don't identify as googlebot-news, follow group 2. Even if
        # there is an entry for a related crawler, it's only valid if it's specifically
        # matching."
        ("otherbot", ("*",)),
        ("googlebot-newsroom", ("*",)),
        # Googlebot-Image: an older revision of the page sent it to the googlebot group
        # because Google's image crawler also answers to "googlebot" (a second product
        # token it checks when it has no group of its own). Product-token equality (RFC
        # 9309 2.2.1) gives the "*" group to a crawler whose only token is Googlebot-Image.
        ("Googlebot-Image", ("*",)),
    ],
)
def test_order_of_precedence_for_user_agents(crawler: str, group: tuple[str, ...]) -> None:
    rules = RobotsTxt.parse(GROUP_SELECTION_EXAMPLE)
    assert rules.explain("https://example.com/", crawler).user_agents == group
    own_rule = {"googlebot-news": "/group-1", "*": "/group-2", "googlebot": "/group-3"}[group[0]]
    for blocked in ("/group-1", "/group-2", "/group-3"):
        decision = rules.explain(f"https://example.com{blocked}/page", crawler)
        assert decision.allowed is (blocked != own_rule)


@pytest.mark.parametrize("value", ["googlebot/1.2", "googlebot*", "Googlebot/2.1 (+x)"])
def test_non_matching_text_in_user_agent_value_is_ignored(value: str) -> None:
    # "All non-matching text is ignored (for example, both googlebot/1.2 and googlebot*
    # are equivalent to googlebot)."
    rules = RobotsTxt.parse(
        f"user-agent: *\nallow: /\n\nuser-agent: {value}\ndisallow: /\n".encode()
    )
    decision = rules.explain("https://example.com/page", "googlebot")
    assert (decision.allowed, decision.line) == (False, 5)


def test_groups_for_the_same_agent_are_combined() -> None:
    # "Grouping of lines and rules": "If there are multiple groups in a robots.txt file
    # that are relevant to a specific user agent, Google's crawlers internally merge the
    # groups." The "*" group in between is not merged into them.
    rules = RobotsTxt.parse(
        b"user-agent: googlebot-news\ndisallow: /fish\n\n"
        b"user-agent: *\ndisallow: /carrots\n\n"
        b"user-agent: googlebot-news\ndisallow: /shrimp\n"
    )
    news = "googlebot-news"
    assert rules.explain("https://example.com/fish", news).line == 2
    assert rules.explain("https://example.com/shrimp", news).line == 8
    assert rules.allowed("https://example.com/carrots", news) is True
    assert rules.allowed("https://example.com/fish", "otherbot") is True
    assert rules.allowed("https://example.com/carrots", "otherbot") is False


def test_other_records_do_not_end_a_group() -> None:
    # "Rules other than allow, disallow, and user-agent are ignored by the robots.txt
    # parser. This means the following robots.txt snippet is treated as one group, and
    # thus both user-agent a and b are affected by the disallow: / rule:"
    rules = RobotsTxt.parse(
        b"user-agent: a\nsitemap: https://example.com/sitemap.xml\n\nuser-agent: b\ndisallow: /\n"
    )
    for agent in ("a", "b"):
        decision = rules.explain("https://example.com/page", agent)
        assert (decision.allowed, decision.line) == (False, 5)
        assert decision.user_agents == ("a", "b")
    assert rules.sitemaps == ["https://example.com/sitemap.xml"]


def test_grouping_example_with_an_empty_last_group() -> None:
    # "There are four distinct groups in this example: One group for user agent "a". One
    # group for user agent "b". One group for both "e" and "f" user agents. One group for
    # user agent "h"." ... the last group has no rules.
    rules = RobotsTxt.parse(
        b"# four groups\n"
        b"user-agent: a\ndisallow: /c\n\n"
        b"user-agent: b\ndisallow: /d\n\n"
        b"user-agent: e\nuser-agent: f\ndisallow: /g\n\n"
        b"user-agent: h\n"
    )
    expectations = {
        "a": ("/c", 3, ("a",)),
        "b": ("/d", 6, ("b",)),
        "e": ("/g", 10, ("e", "f")),
        "f": ("/g", 10, ("e", "f")),
    }
    for agent, (blocked, line, group) in expectations.items():
        decision = rules.explain(f"https://example.com{blocked}", agent)
        assert (decision.allowed, decision.line, decision.user_agents) == (False, line, group)
        for other in {"/c", "/d", "/g"} - {blocked}:
            assert rules.allowed(f"https://example.com{other}", agent) is True
    for path in ("/c", "/d", "/g"):
        decision = rules.explain(f"https://example.com{path}", "h")
        assert (decision.allowed, decision.user_agents) == (True, ("h",))


def test_user_agent_value_is_case_insensitive_and_paths_are_not() -> None:
    # "user-agent: ... The value is case-insensitive." / "[path] ... The value is
    # case-sensitive."
    rules = RobotsTxt.parse(b"User-agent: GoogleBot\nDisallow: /Fish\n")
    assert rules.allowed("https://example.com/Fish", "googlebot") is False
    assert rules.allowed("https://example.com/Fish", "GOOGLEBOT") is False
    assert rules.allowed("https://example.com/fish", "googlebot") is True
