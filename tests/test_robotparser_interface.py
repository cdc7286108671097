"""``scrapy_rep9309.RobotParser`` against Scrapy's robots.txt parser interface, case by case.

Scrapy checks each of its parser backends with the same list of situations (allowed,
disallowed, precedence, crawl delay, sitemaps, empty and garbage bodies, non-ASCII
URLs and user agents); these are those situations for this backend, with RFC 9309's
answers where the backends disagree (longest match wins; on a tie, Allow).
"""

from __future__ import annotations

import inspect

import pytest
from scrapy.robotstxt import RobotParser as ScrapyRobotParser

from scrapy_rep9309 import RobotParser

pytestmark = pytest.mark.usefixtures("each_implementation")

SITE = "https://shop.example"


def _parser(body: bytes) -> RobotParser:
    # Scrapy builds backends with from_crawler(crawler, body); a crawler is not needed.
    return RobotParser.from_crawler(None, body)  # type: ignore[arg-type]


def test_implements_every_method_of_the_installed_interface() -> None:
    for name, member in inspect.getmembers(ScrapyRobotParser, inspect.isfunction):
        if not name.startswith("_"):
            ours = getattr(RobotParser, name)
            assert ours is not member, f"{name} falls back to Scrapy's default"
            assert list(inspect.signature(ours).parameters) == list(
                inspect.signature(member).parameters
            ), name
    assert not getattr(RobotParser, "__abstractmethods__", None)


def test_allowed_and_disallowed() -> None:
    parser = _parser(b"User-agent: *\nDisallow: /cart\nAllow: /cart/help\nCrawl-delay: 3\n")
    assert parser.allowed(f"{SITE}/", "*")
    assert parser.allowed(f"{SITE}/products", "anybot")
    assert not parser.allowed(f"{SITE}/cart", "*")
    assert not parser.allowed(f"{SITE}/cart/checkout?step=2", "anybot")
    assert parser.allowed(f"{SITE}/cart/help", "anybot")


def test_wildcards_and_end_anchor() -> None:
    parser = _parser(
        b"User-agent: alpha\n"
        b"Disallow: /tmp/*/draft$\n"
        b"\n"
        b"User-agent: beta\n"
        b"Disallow: /\n"
        b"Allow: /*public\n"
    )
    assert parser.allowed(f"{SITE}/tmp", "alpha")
    assert not parser.allowed(f"{SITE}/tmp/a/draft", "alpha")
    assert not parser.allowed(f"{SITE}/tmp/a/b/draft", "alpha")
    assert parser.allowed(f"{SITE}/tmp/a/drafts", "alpha")
    assert parser.allowed(f"{SITE}/public", "beta")
    assert parser.allowed(f"{SITE}/x/public/y", "beta")
    assert not parser.allowed(f"{SITE}/private", "beta")


@pytest.mark.parametrize(
    "body",
    [b"User-agent: *\nDisallow: /\nAllow: /docs\n", b"User-agent: *\nAllow: /docs\nDisallow: /\n"],
    ids=["allow-last", "allow-first"],
)
def test_longest_match_wins_whatever_the_order(body: bytes) -> None:
    parser = _parser(body)
    assert parser.allowed(f"{SITE}/docs/intro", "*")
    assert not parser.allowed(f"{SITE}/blog", "*")


def test_equally_long_allow_and_disallow_allow() -> None:
    parser = _parser(b"User-agent: *\nDisallow: /page\nAllow: /page\n")
    assert parser.allowed(f"{SITE}/page", "*")


def test_crawl_delay() -> None:
    parser = _parser(
        b"User-agent: slowbot\nCrawl-delay: 7.5\nDisallow: /x\n\nUser-agent: *\nDisallow: /x\n"
    )
    assert parser.crawl_delay("slowbot") == 7.5
    assert parser.crawl_delay(b"SlowBot/2.0") == 7.5
    assert parser.crawl_delay("*") is None


def test_crawl_delay_belongs_to_the_user_agent_lines_directly_above_it() -> None:
    """RFC 9309 merges these lines into one group for Allow/Disallow, but a Crawl-delay
    belongs to the User-agent lines right above it (as Protego and crawler-commons read it)."""
    parser = _parser(b"User-agent: slowbot\nCrawl-delay: 7.5\n\nUser-agent: *\nDisallow: /x\n")
    assert parser.crawl_delay("slowbot") == 7.5
    assert parser.crawl_delay("otherbot") is None
    assert not parser.allowed("https://a.example/x", "slowbot"), "still one group for rules"


def test_sitemaps_in_file_order_from_anywhere_in_the_file() -> None:
    parser = _parser(
        b"Sitemap: https://shop.example/sitemap-products.xml\n"
        b"User-agent: *\n"
        b"Disallow: /cart\n"
        b"SITEMAP:   https://cdn.example/sitemap-index.xml.gz  # the index\n"
        b"\n"
        b"User-agent: otherbot\n"
        b"Sitemap: /relative-sitemap.xml\n"
        b"Disallow: /\n"
    )
    assert list(parser.sitemaps()) == [
        "https://shop.example/sitemap-products.xml",
        "https://cdn.example/sitemap-index.xml.gz",
        "/relative-sitemap.xml",
    ]
    # Sitemap lines are not rules and do not end or join groups.
    assert not parser.allowed(f"{SITE}/cart", "*")
    assert not parser.allowed(f"{SITE}/", "otherbot")


def test_no_sitemaps() -> None:
    parser = _parser(b"User-agent: *\nDisallow: /cart\nSitemap:\n")
    assert list(parser.sitemaps()) == []


def test_sitemaps_with_crlf_line_ends_and_a_byte_order_mark() -> None:
    parser = _parser(b"\xef\xbb\xbfSitemap: https://shop.example/a.xml\r\nSitemap: /b.xml\r\n")
    assert list(parser.sitemaps()) == ["https://shop.example/a.xml", "/b.xml"]


@pytest.mark.parametrize("body", [b"", b"\n\n# nothing here\n"], ids=["empty", "comments"])
def test_a_file_without_rules_allows_everything(body: bytes) -> None:
    parser = _parser(body)
    for path in ("/", "/index.html", "/cart"):
        assert parser.allowed(f"{SITE}{path}", "*")
        assert parser.allowed(f"{SITE}{path}", "chrome")
    assert parser.crawl_delay("*") is None
    assert list(parser.sitemaps()) == []


@pytest.mark.parametrize(
    "body",
    [
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04",
        bytes(range(256)) * 4,
        b"<html><body><h1>Welcome</h1><p>Disallow everything!</p></body></html>",
    ],
    ids=["gif", "every-byte", "html"],
)
def test_garbage_allows_everything_and_never_raises(body: bytes) -> None:
    parser = _parser(body)
    assert parser.allowed(f"{SITE}/", "*")
    assert parser.allowed(f"{SITE}/cart", "chrome")
    assert parser.crawl_delay("*") is None
    assert list(parser.sitemaps()) == []


def test_non_ascii_urls_and_user_agents() -> None:
    parser = _parser(
        "User-agent: *\n"
        "Disallow: /konto/\n"
        "Disallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:\n"
        "Disallow: /straße/\n"
        "\n"
        "User-agent: ÜberBot\n"
        "Disallow: /nur-für-menschen\n".encode()
    )
    assert parser.allowed(f"{SITE}/", "*")
    assert not parser.allowed(f"{SITE}/konto/", "*")
    # Percent-encoded and raw UTF-8 spellings of one path are the same path (RFC 9309 2.2.2).
    assert not parser.allowed(f"{SITE}/wiki/Käyttäjä:", "*")
    assert not parser.allowed(f"{SITE}/wiki/K%C3%A4ytt%C3%A4j%C3%A4:", "*")
    assert not parser.allowed(f"{SITE}/stra%C3%9Fe/x", "*")
    assert not parser.allowed(f"{SITE}/straße/x".encode(), b"*")
    # "ÜberBot" is not a valid product token: that group names no crawler, and a
    # crawler calling itself that is matched by "*" (never by the invalid line).
    assert parser.allowed(f"{SITE}/nur-für-menschen", "ÜberBot")
    assert not parser.allowed(f"{SITE}/konto/", "ÜberBot")


def test_str_and_bytes_arguments_agree() -> None:
    parser = _parser(b"User-agent: mybot\nDisallow: /private\n")
    for url in (f"{SITE}/private/1", f"{SITE}/public/1"):
        for agent in ("MyBot/1.0", "OtherBot"):
            assert parser.allowed(url, agent) == parser.allowed(url.encode(), agent.encode())
