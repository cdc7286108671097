"""Which group applies to a crawler: product tokens, compared by equality (RFC 9309 2.2.1).

"Crawlers set their own name, which is called a product token, to find relevant groups.
The product token MUST contain only uppercase and lowercase letters ("a-z" and "A-Z"),
underscores ("_"), and hyphens ("-")." ... "Crawlers MUST use case-insensitive matching
to find the group that matches the product token." A group's value is cut to its product
token (Google: "googlebot/1.2 and googlebot* are equivalent to googlebot"); a caller may
pass its bare token or its full User-Agent header, from which the token is extracted.
"""

from __future__ import annotations

import pytest

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules.useragent import crawler_token, token_problem

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

URL = "https://example.com/page"


def group_for(body: bytes, agent: str) -> tuple[str, ...]:
    return RobotsTxt.parse(body).explain(URL, agent).user_agents


def blocked(value: str, agent: str) -> bool:
    """Whether a group named ``value`` (and nothing else) applies to ``agent``."""
    body = f"User-agent: *\nAllow: /\n\nUser-agent: {value}\nDisallow: /\n".encode()
    return RobotsTxt.parse(body).allowed(URL, agent) is False


@pytest.mark.parametrize(
    "value",
    ["googlebot", "Googlebot", "GOOGLEBOT", "googlebot/1.2", "googlebot*", "googlebot/2.1 (+x)"],
)
def test_group_value_is_cut_to_its_product_token(value: str) -> None:
    assert blocked(value, "googlebot")
    assert blocked(value, "Googlebot")
    assert not blocked(value, "googlebot-news")
    assert not blocked(value, "googlebo")


def test_group_value_with_a_space_means_its_first_word() -> None:
    # Google: "User-Agent: Foo Bar" applies to agent Foo.
    assert blocked("Foo Bar", "Foo")
    assert blocked("Foo Bar", "foo")
    assert not blocked("Foo Bar", "Bar")


@pytest.mark.parametrize(
    ("value", "agent"),
    [
        # Protego (Scrapy's default parser) lets these match; RFC 9309 does not.
        ("org", "Scrapy/2.19 (+https://scrapy.org)"),
        ("scrapy-org", "Scrapy/2.19 (+https://scrapy.org)"),
        ("https", "Scrapy/2.19 (+https://scrapy.org)"),
        ("bot", "MyBot/1.0"),
        ("bot", "bot-extra"),
        ("my", "MyBot"),
        ("mybot", "MyBotX"),
        ("mybotx", "MyBot"),
        ("googlebot", "googlebot-news"),
        ("googlebot-news", "googlebot"),
        ("compatible", "Mozilla/5.0 (compatible; MyBot/1.0; +https://x)"),
        ("Mozilla", "Mozilla/5.0 (compatible; MyBot/1.0; +https://x)"),
    ],
)
def test_tokens_match_by_equality_never_by_substring(value: str, agent: str) -> None:
    assert not blocked(value, agent)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("MyBot/1.0 (+https://x)", "MyBot"),
        ("MyBot", "MyBot"),
        ("MyBot/1.0", "MyBot"),
        ("mybot/2.3.4 (+https://mybot.example/about; ops@mybot.example)", "MyBot"),
        ("Mozilla/5.0 (compatible; MyBot/1.0; +https://x)", "MyBot"),
        ("Mozilla/5.0 (compatible; MyBot/1.0)", "MyBot"),
        ("Scrapy/2.19 (+https://scrapy.org)", "Scrapy"),
        ("Scrapy/2.13.0 (+https://scrapy.org)", "scrapy"),
        # Googlebot's published User-Agent strings; in the desktop one "compatible;" is
        # not the first item of its comment.
        ("Googlebot/2.1 (+http://www.google.com/bot.html)", "Googlebot"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
            "+http://www.google.com/bot.html) Chrome/120.0.6099.71 Safari/537.36",
            "Googlebot",
        ),
        (
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
            "(KHTML, like Gecko) Chrome/120.0.6099.71 Mobile Safari/537.36 (compatible; "
            "Googlebot/2.1; +http://www.google.com/bot.html)",
            "Googlebot",
        ),
    ],
)
def test_full_user_agent_header_means_its_product_token(header: str, token: str) -> None:
    body = f"User-agent: *\nAllow: /\n\nUser-agent: {token}\nDisallow: /\n".encode()
    decision = RobotsTxt.parse(body).explain(URL, header)
    assert (decision.allowed, decision.user_agents) == (False, (token,))


def test_header_and_bare_token_select_the_same_group() -> None:
    body = (
        b"User-agent: *\nDisallow: /star\n\n"
        b"User-agent: Googlebot\nDisallow: /google\nCrawl-delay: 2\n\n"
        b"User-agent: Googlebot-News\nDisallow: /news\n"
    )
    rules = RobotsTxt.parse(body)
    header = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
    for agent in ("Googlebot", "googlebot", header):
        assert rules.explain(URL, agent).user_agents == ("Googlebot",)
        assert rules.allowed("https://example.com/google/x", agent) is False
        assert rules.allowed("https://example.com/news/x", agent) is True
        assert rules.allowed("https://example.com/star/x", agent) is True
        assert rules.crawl_delay(agent) == 2.0
    assert rules.explain(URL, "Googlebot-News").user_agents == ("Googlebot-News",)


@pytest.mark.parametrize("token", ["Foo_Bar", "foo-bar", "A", "x_-_y"])
def test_valid_product_tokens_with_underscores_and_hyphens(token: str) -> None:
    assert blocked(token, token)
    assert blocked(token, token.swapcase())


def test_star_group_is_only_a_fallback() -> None:
    body = b"User-agent: *\nDisallow: /\n\nUser-agent: mybot\nDisallow: /private\n"
    assert group_for(body, "MyBot/1.0 (+https://x)") == ("mybot",)
    assert group_for(body, "OtherBot/1.0 (+https://x)") == ("*",)
    assert group_for(b"User-agent: mybot\nDisallow: /\n", "OtherBot") == ()


@pytest.mark.parametrize("value", ["*", "* ", "*\t# everyone", "*   "])
def test_star_value_with_trailing_whitespace_or_comment_is_the_global_group(value: str) -> None:
    body = f"User-agent: {value}\nDisallow: /\n".encode()
    assert RobotsTxt.parse(body).allowed(URL, "anybot") is False


def test_a_value_with_no_product_token_names_nobody() -> None:
    for value in ("/1.0", "ツ", "(compatible)", "123bot"):
        assert not blocked(value, "anybot"), value
        assert not blocked(value, value), value


@pytest.mark.parametrize(
    ("header", "token"),
    [
        # RFC 9110 10.1.5: "User-Agent = product *( RWS ( product / comment ) )"; the
        # first product names the crawler, even without a version or a comment.
        ("FigTree Robot libwww-perl/5.04", "FigTree"),
        ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "Slackbot-LinkExpanding"),
        ("MyBot MoreInfo/2 (+https://x)", "MyBot"),
    ],
)
def test_a_header_of_several_products_means_the_first(header: str, token: str) -> None:
    body = f"User-agent: *\nAllow: /\n\nUser-agent: {token}\nDisallow: /\n".encode()
    decision = RobotsTxt.parse(body).explain(URL, header)
    assert (decision.allowed, decision.user_agents) == (False, (token,))


def test_bare_words_are_no_header_and_name_no_group() -> None:
    # Google's GoogleOnly_AcceptUserAgentUpToFirstSpace: "User-Agent: Foo Bar" applies to
    # "Foo", but a crawler calling itself "Foo Bar" gets the "*" group. Without a
    # version or a comment, "Foo Bar" is not read as a header of two products.
    body = b"User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
    assert RobotsTxt.parse(body).explain(f"{URL}/x/y", "Foo Bar").user_agents == ("*",)
    assert RobotsTxt.parse(body).explain(f"{URL}/x/y", "Foo/1 Bar").user_agents == ("Foo Bar",)


@pytest.mark.parametrize(
    "header",
    ["MJ12bot", "MJ12bot/v1.4.8", "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"],
)
def test_an_invalid_product_token_only_ever_gets_the_star_group(header: str) -> None:
    # RFC 9309 2.2.1: a product token holds letters, "_" and "-" only. "User-agent: MJ12bot"
    # is cut to "MJ" (as Google cuts it); the crawler's token is "MJ12bot", which no
    # group can name, so not even the cut one applies: only "*".
    body = b"User-agent: *\nDisallow: /star\n\nUser-agent: MJ12bot\nDisallow: /\n"
    rules = RobotsTxt.parse(body)
    assert rules.explain(URL, header).user_agents == ("*",)
    assert rules.allowed(URL, header) is True
    assert rules.allowed("https://example.com/star", header) is False


@pytest.mark.parametrize(
    "header",
    ["Mozilla/5.0 (compatible; Bötbot/1.0)", "Mozilla/5.0 (compatible; B.ot/1.0; +https://x)"],
)
def test_a_compatible_item_is_named_whole_not_cut_at_a_character_it_may_not_hold(
    header: str,
) -> None:
    """The name after ``compatible;`` was cut at its first character outside HTTP's token
    characters, so ``Bötbot`` was taken for ``B`` (found by a second reviewer): it is no
    product token, so only ``*`` groups apply, as to the same name first in a header, and
    ``check`` warns about it."""
    body = b"User-agent: b\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
    rules = RobotsTxt.parse(body)
    name = header.split("; ")[1].split("/")[0]
    assert rules.allowed(URL, f"{name}/1.0") is True
    assert rules.allowed(URL, header) is True
    assert crawler_token(header) == name.lower()
    assert token_problem(header) is not None
