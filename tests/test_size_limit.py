"""The parsing limit: RFC 9309 section 2.5 and Google's 500 KiB.

RFC 9309 2.5: "Crawlers SHOULD impose a parsing limit to protect their systems; see
Section 3. The parsing limit MUST be at least 500 kibibytes [KiB]." Google: "Google
enforces a robots.txt file size limit of 500 kibibytes (KiB). Content which is after the
maximum file size is ignored." The default limit is therefore 512000 bytes, and a smaller
one is refused.
"""

from __future__ import annotations

import re

import pytest

from scrapy_rep9309 import RobotsTxt

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

DEFAULT_LIMIT = 500 * 1024
URL = "https://example.com"
NAMES_THE_MINIMUM = re.compile(r"512[,_ ]?000|500 ?KiB", re.IGNORECASE)


def padded(rule: bytes, rule_start: int) -> bytes:
    """A body whose ``rule`` line starts at byte ``rule_start``, after comment filler."""
    head = b"User-agent: *\nDisallow: /early\n"
    filler_length = rule_start - len(head)
    assert filler_length >= 3, "rule_start too small for the filler"
    filler = b"#" + b"x" * (filler_length - 2) + b"\n"
    body = head + filler + rule
    assert body.index(rule) == rule_start
    return body


def test_default_limit_is_500_kib() -> None:
    assert DEFAULT_LIMIT == 512000


def test_a_rule_ending_inside_the_limit_counts() -> None:
    rule = b"Disallow: /late\n"
    rules = RobotsTxt.parse(padded(rule, DEFAULT_LIMIT - len(rule)))
    assert rules.allowed(f"{URL}/late", "anybot") is False
    assert rules.allowed(f"{URL}/early", "anybot") is False


@pytest.mark.parametrize("offset", [0, 1, 1000])
def test_a_rule_just_past_the_limit_has_no_effect(offset: int) -> None:
    body = padded(b"Disallow: /late\n", DEFAULT_LIMIT + offset)
    rules = RobotsTxt.parse(body)
    assert rules.allowed(f"{URL}/late", "anybot") is True
    assert rules.allowed(f"{URL}/early", "anybot") is False


def test_content_after_the_limit_is_ignored_whatever_it_is() -> None:
    tail = b"User-agent: *\nDisallow: /\nSitemap: https://example.com/late.xml\nCrawl-delay: 9\n"
    body = padded(tail, DEFAULT_LIMIT + 10)
    rules = RobotsTxt.parse(body)
    assert rules.allowed(f"{URL}/anything", "anybot") is True
    assert rules.sitemaps == []
    assert rules.crawl_delay("anybot") is None


def test_a_line_cut_by_the_limit_leaves_the_rest_intact() -> None:
    # Where the limit falls inside "Disallow: /private-area" the line is either dropped or
    # read as far as the limit (the package documents which); either way the rules before
    # it stand and nothing beyond "/pri" is read.
    rule = b"Disallow: /private-area\nDisallow: /after\n"
    body = padded(rule, DEFAULT_LIMIT - len(b"Disallow: /pri"))
    rules = RobotsTxt.parse(body)
    assert rules.allowed(f"{URL}/early", "anybot") is False
    assert rules.allowed(f"{URL}/public", "anybot") is True
    assert rules.allowed(f"{URL}/after", "anybot") is True


def test_explicit_default_is_the_same_as_no_argument() -> None:
    body = padded(b"Disallow: /late\n", DEFAULT_LIMIT + 5)
    assert RobotsTxt.parse(body, max_size=DEFAULT_LIMIT).allowed(f"{URL}/late", "x") is True


@pytest.mark.parametrize("max_size", [0, 1, 1024, 65536, DEFAULT_LIMIT - 1])
def test_a_limit_below_500_kib_is_refused(max_size: int) -> None:
    with pytest.raises(ValueError, match=NAMES_THE_MINIMUM):
        RobotsTxt.parse(b"User-agent: *\nDisallow: /\n", max_size=max_size)


def test_a_larger_limit_reads_further() -> None:
    rule = b"Disallow: /late\n"
    body = padded(rule, 600_000)
    assert RobotsTxt.parse(body).allowed(f"{URL}/late", "anybot") is True
    larger = RobotsTxt.parse(body, max_size=1_000_000)
    assert larger.allowed(f"{URL}/late", "anybot") is False
    assert larger.explain(f"{URL}/late", "anybot").line == 4
    # ...and still stops at its own limit.
    limited = RobotsTxt.parse(padded(rule, 700_000), max_size=650_000)
    assert limited.allowed(f"{URL}/late", "anybot") is True


def test_str_body_is_limited_in_utf8_octets() -> None:
    # 2-octet characters: 300000 of them are 600000 octets, past the default limit.
    text = "User-agent: *\n#" + "\u00e9" * 300_000 + "\nDisallow: /late\n"
    assert RobotsTxt.parse(text).allowed(f"{URL}/late", "anybot") is True
    assert RobotsTxt.parse(text, max_size=700_000).allowed(f"{URL}/late", "anybot") is False
