"""Property tests: the package's matcher against a deliberately simple reference.

The reference (``_reference_matcher``) normalises percent-encoding octet by octet and
matches globs with a full dynamic-programming table, so it is slow and easy to check by
eye. Generated rules and URLs use a small alphabet chosen to hit the tricky parts of RFC
9309 2.2.2/2.2.3: ``*``, ``$``, ``/``, ``?``, ``=``, letters, unreserved and reserved
percent escapes, ``%2A``/``%24`` and a non-ASCII character in raw and encoded forms.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _implementations import for_each_implementation
from _reference_matcher import Rule, decide, glob_matches, normalise, split_lines
from _timing import GROWTH_LIMIT, NEGLIGIBLE, grows_linearly, quickest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rep9309 import Decision, RobotsTxt
from scrapy_rep9309.rules.usage import statement_preferences

PROPERTY_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Pieces of patterns and of URLs. "$" appears in patterns only as the final anchor (what
# a "$" elsewhere in a pattern means is not settled by RFC 9309); in URLs it is an
# ordinary character, like "*".
COMMON_PIECES = [
    "/",
    "a",
    "b",
    "?",
    "=",
    "~",
    "%61",
    "%7E",
    "%2F",
    "%2f",
    "%2A",
    "%24",
    "é",
    "%C3%A9",
    "%c3%a9",
]
PATTERN_PIECES = [*COMMON_PIECES, "*", "*", "*"]
URL_PIECES = [*COMMON_PIECES, "*", "$", "a", "b", "/"]

patterns = st.builds(
    lambda head, pieces, anchored: head + "".join(pieces) + ("$" if anchored else ""),
    st.sampled_from(["/", "*", "/a", "/*"]),
    st.lists(st.sampled_from(PATTERN_PIECES), max_size=6),
    st.booleans(),
)
url_paths = st.builds(
    lambda pieces: "/" + "".join(pieces), st.lists(st.sampled_from(URL_PIECES), max_size=10)
)
rule_lists = st.lists(st.tuples(st.booleans(), patterns), min_size=1, max_size=6)


def robots_body(rules: list[tuple[bool, str]]) -> tuple[bytes, list[Rule]]:
    """A one-group robots.txt for ``rules``; the rule of line n is ``reference[n - 2]``."""
    reference = [Rule(allow, pattern, line) for line, (allow, pattern) in enumerate(rules, start=2)]
    text = "User-agent: *\n" + "".join(f"{rule.text}\n" for rule in reference)
    return text.encode("utf-8"), reference


@PROPERTY_SETTINGS
@given(rule_lists, url_paths)
@for_each_implementation
def test_allowed_agrees_with_the_reference_matcher(
    rules: list[tuple[bool, str]], path: str
) -> None:
    body, reference = robots_body(rules)
    url = f"https://example.com{path}"
    expected = decide(reference, url)
    parsed = RobotsTxt.parse(body)
    assert parsed.allowed(url, "anybot") is expected.allowed
    if not path.startswith("//"):  # "//x" alone would be a network-path reference
        assert parsed.allowed(path, "anybot") is expected.allowed


@PROPERTY_SETTINGS
@given(rule_lists, url_paths)
@for_each_implementation
def test_explain_names_a_winning_rule(rules: list[tuple[bool, str]], path: str) -> None:
    body, reference = robots_body(rules)
    url = f"https://example.com{path}"
    expected = decide(reference, url)
    decision = RobotsTxt.parse(body).explain(url, "anybot")
    assert decision.allowed is expected.allowed
    assert decision.user_agents == ("*",)
    if not expected.winners:
        assert (decision.rule, decision.line) == (None, None)
        return
    # Several rules can tie; the one reported must be one of them, from its own line.
    assert decision.line in {rule.line for rule in expected.winners}
    winner = reference[decision.line - 2]
    assert decision.rule is not None
    assert decision.rule.split(":", 1)[0] == ("Allow" if winner.allow else "Disallow")


@PROPERTY_SETTINGS
@given(rule_lists, url_paths, st.sampled_from(["\n", "\r", "\r\n"]))
@for_each_implementation
def test_line_endings_and_key_case_do_not_change_decisions(
    rules: list[tuple[bool, str]], path: str, newline: str
) -> None:
    body, _ = robots_body(rules)
    url = f"https://example.com{path}"
    baseline = RobotsTxt.parse(body).explain(url, "anybot")
    text = body.decode("utf-8")
    variant = text.replace("\n", newline).replace("User-agent", "USER-AGENT")
    variant = variant.replace("Disallow:", "disallow :").replace("Allow:", "ALLOW\t:")
    assert RobotsTxt.parse(variant.encode("utf-8")).explain(url, "anybot") == baseline


@PROPERTY_SETTINGS
@given(
    rule_lists,
    url_paths,
    st.sampled_from(["Sitemap: https://x/s.xml", "Crawl-delay: 3", "Foo: bar", "# note", ""]),
)
@for_each_implementation
def test_other_records_between_rules_change_nothing_but_line_numbers(
    rules: list[tuple[bool, str]], path: str, other: str
) -> None:
    body, reference = robots_body(rules)
    lines = body.decode("utf-8").splitlines()
    interleaved = [lines[0]] + [piece for line in lines[1:] for piece in (other, line)]
    url = f"https://example.com{path}"
    decision = RobotsTxt.parse("\n".join(interleaved)).explain(url, "anybot")
    assert decision.allowed is decide(reference, url).allowed


@PROPERTY_SETTINGS
@given(patterns, url_paths)
@for_each_implementation
def test_a_single_disallow_matches_exactly_when_the_reference_glob_does(
    pattern: str, path: str
) -> None:
    matched = glob_matches(normalise(pattern, is_pattern=True), normalise(path, is_pattern=False))
    rules = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n".encode())
    assert rules.allowed(f"https://example.com{path}", "anybot") is (not matched)


# --- robustness ----------------------------------------------------------------------------

agents = st.sampled_from(["anybot", "Googlebot", "Mozilla/5.0 (compatible; X/1)", "", "*", "ツ"])
# Lone surrogates are left out of generated text: a str holding one cannot be encoded at
# all, which test_parsing.py covers with an explicit example.
text_pieces = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
urls = st.one_of(
    st.just(""),
    text_pieces,
    st.builds(lambda tail: "https://example.com/" + tail, text_pieces),
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), urls, agents)
@for_each_implementation
def test_random_bytes_never_raise(body: bytes, url: str, agent: str) -> None:
    rules = RobotsTxt.parse(body)
    decision = rules.explain(url, agent)
    assert isinstance(decision, Decision)
    assert rules.allowed(url, agent) is decision.allowed
    assert (decision.rule is None) == (decision.line is None)
    assert isinstance(rules.sitemaps, list)
    delay = rules.crawl_delay(agent)
    assert delay is None or isinstance(delay, float)
    assert set(rules.content_usage(url, agent)) <= {"train-ai", "search"}
    assert set(rules.content_signals(agent).values()) <= {"yes", "no"}
    assert isinstance(rules.licenses, list)


KEYS = [
    "User-agent",
    "useragent",
    "Disallow",
    "disalow",
    "Allow",
    "Sitemap",
    "Crawl-delay",
    "Content-Usage",
    "Content-Signal",
    "License",
    "Junk",
    "",
]
robots_like_lines = st.builds(
    lambda key, sep, value, comment: f"{key}{sep}{value}{comment}",
    st.sampled_from(KEYS),
    st.sampled_from([":", ": ", " ", "\t:", ""]),
    st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=30),
    st.sampled_from(["", " # c", "#"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(robots_like_lines, max_size=30), st.sampled_from(["\n", "\r", "\r\n"]), urls, agents
)
@for_each_implementation
def test_robots_like_text_never_raises_and_lines_exist(
    lines: list[str], newline: str, url: str, agent: str
) -> None:
    body = newline.join(lines)
    rules = RobotsTxt.parse(body)
    decision = rules.explain(url, agent)
    if decision.line is not None:
        assert 1 <= decision.line <= len(split_lines(body))
        assert decision.rule is not None
        assert decision.rule.split(":", 1)[0] in ("Allow", "Disallow")


# --- adversarial patterns: correctness where backtracking would explode -------------------


@pytest.mark.timeout(60)
@for_each_implementation
def test_many_star_patterns_against_a_long_url() -> None:
    pattern = "/" + "*a" * 10 + "*b$"
    rules = "".join(f"Disallow: {pattern.replace('b$', f'b{i}$')}\n" for i in range(999))
    body = f"User-agent: *\n{rules}Disallow: {pattern}\n".encode()
    parsed = RobotsTxt.parse(body)
    long_a = "/" + "a" * 2048
    assert parsed.allowed(long_a, "anybot") is True
    assert parsed.allowed(long_a + "b", "anybot") is False
    assert parsed.explain(long_a + "b", "anybot").line == 1001
    assert parsed.allowed(long_a + "b7", "anybot") is False
    assert parsed.allowed(long_a + "ba", "anybot") is True


@pytest.mark.timeout(60)
@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=30),
    st.integers(min_value=0, max_value=1500),
    st.sampled_from(["", "b", "ab", "ba"]),
    st.booleans(),
)
@for_each_implementation
def test_star_heavy_patterns_agree_with_the_reference(
    stars: int, length: int, suffix: str, anchored: bool
) -> None:
    pattern = "/" + "*a" * stars + "*b" + ("$" if anchored else "")
    path = "/" + "a" * length + suffix
    expected = glob_matches(pattern, path)
    rules = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n".encode())
    assert rules.allowed(path, "anybot") is (not expected)


@pytest.mark.timeout(60)
@for_each_implementation
def test_huge_number_of_lines_parses() -> None:
    body = b"User-agent: *\n" + b"Disallow: /x*y*z\n" * 20000 + b"Allow: /x*y*z/ok\n"
    parsed = RobotsTxt.parse(body)
    assert parsed.allowed("/x" + "y" * 3000 + "z", "anybot") is False
    assert parsed.allowed("/x" + "y" * 3000, "anybot") is True
    assert parsed.explain("/xyz/ok", "anybot").line == 20002


def _first_answers_of_merged_groups(groups: int, line_end: bytes) -> Callable[[], None]:
    body = (b"User-agent:*" + line_end + b"Allow:/" + line_end) * groups

    def first_answers() -> None:
        rules = RobotsTxt.parse(body)
        rules.allowed("http://h/x", "bot")
        rules.crawl_delay("bot")
        rules.content_usage("http://h/x", "bot")

    return first_answers


@pytest.mark.parametrize("line_end", [b"\n", b"\r"], ids=["LF", "CR"])
@for_each_implementation
def test_first_answers_grow_linearly_with_the_groups_that_apply(line_end: bytes) -> None:
    """Each group's first line number was counted from the start of the body, in the
    pure-Python GroupIndex: 12,000 groups for one crawler (a 500 KiB file) took 8 s for
    each of these first answers (found by a second reviewer)."""
    small = quickest(_first_answers_of_merged_groups(1_500, line_end), repeats=2)
    large = quickest(_first_answers_of_merged_groups(12_000, line_end), repeats=2)
    assert large < NEGLIGIBLE or large < GROWTH_LIMIT * small, (small, large)


STATEMENT_PIECES = [
    b"train-ai", b"search", b"=", b"y", b"n", b",", b" ", b"\t", b";", b"(", b")", b'"', b"\\",
    b":", b"?1", b"@1", b"%", b"*", b"1.5", b"Y", b"\xff", b"#",
]  # fmt: skip
statements = st.lists(st.sampled_from(STATEMENT_PIECES), max_size=200).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(statements | st.binary(max_size=400), st.integers(min_value=1, max_value=40))
@for_each_implementation
def test_any_content_usage_statement_parses_in_bounded_time(statement: bytes, repeat: int) -> None:
    # Hostile values are up to a line long (16,663 octets): RFC 9651 parsing is linear, a few
    # milliseconds here; work per pair of octets would take seconds.
    statement = (statement * repeat)[:16_000]
    assert quickest(lambda: statement_preferences(statement), repeats=3) < 1.0
    stated = statement_preferences(statement)
    assert {label for label, _ in stated} <= {"train-ai", "search"}
    assert {value for _, value in stated} <= {"y", "n"}
    line = statement.replace(b"\n", b"").replace(b"\r", b"")
    body = b"User-agent: *\nContent-Usage: /x " + line + b"\n"
    assert quickest(lambda: RobotsTxt.parse(body).content_usage("/x", "bot"), repeats=3) < 1.0
    preferences = RobotsTxt.parse(body).content_usage("/x", "bot")
    assert set(preferences) <= {"train-ai", "search"}


@pytest.mark.parametrize("others", [0, 100], ids=["small-set", "large-set"])
@for_each_implementation
def test_of_identical_rules_the_earliest_line_is_named(others: int) -> None:
    """``/~a`` and ``/%7Ea`` are one rule once normalised. In a large rule set the
    pure-Python matcher gathered the rules of unusual starts out of line order and named
    the later one, where the compiled one names the earliest (found by a second
    reviewer); ``check`` printed another line depending on the parser."""
    body = b"User-agent: *\nAllow: /%7Eb\nAllow: /~a\nAllow: /%7Ea\n"
    body += b"".join(b"Disallow: /f%d\n" % number for number in range(others))
    decision = RobotsTxt.parse(body).explain("/~a", "bot")
    assert (decision.rule, decision.line) == ("Allow: /~a", 3)


@pytest.mark.parametrize(
    ("line", "read"),
    [
        (b"Sitemap: https://example.com/s.xml\r", lambda parsed: parsed.sitemaps),
        (b"User-agent: a\r", lambda parsed: parsed.allowed("/x", "a")),
        (b"agent\r", lambda parsed: parsed.allowed("/x", "a")),
    ],
    ids=["sitemaps", "groups", "user-agent-words"],
)
@for_each_implementation
def test_a_file_of_cr_line_ends_reads_in_time_linear_in_its_lines(
    line: bytes, read: Callable[[RobotsTxt], object]
) -> None:
    """Each line found was bounded by searching for an LF each way, which ran to an end
    of a body without any: 500 KiB of CR-only lines took about 1 s (found by a second
    reviewer)."""

    def run_with(lines: int) -> Callable[[], object]:
        return lambda: read(RobotsTxt.parse(line * lines))

    assert grows_linearly(run_with, 500_000 // len(line))


RECORD_PIECES = [
    b"User-agent", b"user-AGENT", b"useragent", b"Allow", b"disallow", b"Disallowed",
    b"Crawl-delay", b"crawldelay", b"Sitemap", b"Content-Usage", b"Content-Signal", b"x-key",
    b":", b": ", b"#", b" # c", b"/a", b"*", b"$", b" ", b"\t", b"\x0b", b"5", b"\xff",
]  # fmt: skip
record_lines = st.lists(
    st.lists(st.sampled_from(RECORD_PIECES), max_size=6).map(b"".join), max_size=12
)


@settings(max_examples=500, deadline=None)
@given(record_lines)
def test_the_groups_rule_collector_files_what_the_tokenizer_reads(lines: list[bytes]) -> None:
    """``groups._collect`` inlines the tokenizer's fast path (one loop, no call per line):
    it must file exactly the rules and crawl-delays ``tokenize_lines`` reads."""
    from scrapy_rep9309.rules.groups import _collect, _RuleCollector
    from scrapy_rep9309.rules.parser import tokenize_lines

    inlined: tuple[dict[int, bytes], ...] = ({}, {}, {})
    _collect(lines, 7, *inlined)
    tokenized: tuple[dict[int, bytes], ...] = ({}, {}, {})
    tokenize_lines(lines, _RuleCollector(*tokenized), 7)
    assert inlined == tokenized
