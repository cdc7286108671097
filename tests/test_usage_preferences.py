"""Usage preferences in robots.txt: Content-Usage, Content-Signal, License, purpose tokens.

``Content-Usage`` follows draft-ietf-aipref-attach-05 (section 3, which updates RFC 9309)
with the statement of preference of draft-ietf-aipref-vocab (section 6: an RFC 9651
Dictionary of ``train-ai``/``search`` to Token ``y``/``n``). ``Content-Signal`` is
Cloudflare's Content Signals Policy, ``License`` is RSL 1.0's robots.txt line.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules.parser import MAX_LINE_OCTETS
from scrapy_rep9309.rules.usage import (
    MAX_FIELD_OCTETS,
    Preference,
    _cached_statement,
    combine_content_signals,
    combine_preferences,
    combine_statements,
    header_preferences,
    most_restrictive,
    signal_preferences,
    split_rule_value,
    statement_preferences,
)
from tests._commands import REPO_ROOT, run
from tests._timing import grows_linearly

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

URL = "https://example.com"

#: draft-ietf-aipref-attach-05 section 3.4, figure 2.
DRAFT_EXAMPLE = b"""\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""


def usage(body: bytes, path: str, agent: str = "anybot") -> dict[str, str]:
    return RobotsTxt.parse(body).content_usage(f"{URL}{path}", agent)


def with_rules(*lines: str) -> bytes:
    return ("User-agent: *\nAllow: /\n" + "".join(line + "\n" for line in lines)).encode()


# --- the draft's example ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "crawl", "preferences"),
    [
        # Table 1 of draft-ietf-aipref-attach-05.
        ("/test", True, {"train-ai": "n"}),
        ("/never/test", False, {}),
        ("/ai-ok/test", True, {"train-ai": "y"}),
    ],
)
def test_the_drafts_example_table(path: str, crawl: bool, preferences: dict[str, str]) -> None:
    rules = RobotsTxt.parse(DRAFT_EXAMPLE)
    assert rules.allowed(f"{URL}{path}", "anybot") is crawl
    assert rules.content_usage(f"{URL}{path}", "anybot") == preferences


def test_the_drafts_example_bot_uses_its_own_group() -> None:
    for path in ("/test", "/never/test", "/ai-ok/test"):
        assert usage(DRAFT_EXAMPLE, path, "ExampleBot") == {"train-ai": "y"}


def test_explain_names_the_rule_and_line_of_each_preference() -> None:
    rules = RobotsTxt.parse(DRAFT_EXAMPLE)
    decision = rules.explain(f"{URL}/ai-ok/test", "anybot")
    assert decision.allowed
    assert decision.usage == (Preference("train-ai", "y", "Content-Usage: /ai-ok/ train-ai=y", 5),)
    assert decision.preferences == {"train-ai": "y"}
    assert rules.explain(f"{URL}/never/test", "anybot").usage == ()


# --- semantics ---------------------------------------------------------------------------


def test_preferences_exist_only_where_the_same_group_allows_crawling() -> None:
    # draft 3.1: "paths that cannot be crawled have no associated usage preferences".
    body = b"User-agent: *\nDisallow: /private\nContent-Usage: train-ai=y, search=y\n"
    assert usage(body, "/private/x") == {}
    assert usage(body, "/public") == {"train-ai": "y", "search": "y"}
    assert usage(body, "/robots.txt") == {}


def test_no_group_or_no_rule_means_no_preference() -> None:
    assert usage(b"", "/") == {}
    assert usage(b"User-agent: other\nContent-Usage: train-ai=n\n", "/") == {}
    assert usage(b"User-agent: *\nDisallow: /x\n", "/") == {}


def test_a_rule_without_a_path_applies_to_every_url_and_is_the_least_specific() -> None:
    # draft 3.2: a value not starting with "/" has no path; draft 3.1: paths are compared
    # by their length in octets, so an absent path (0 octets) loses even to "/".
    body = with_rules("Content-Usage: train-ai=n, search=n", "Content-Usage: / search=y")
    assert usage(body, "/") == {"search": "y"}
    assert usage(body, "/deep/page?q=1") == {"search": "y"}
    assert usage(with_rules("Content-Usage: train-ai=n"), "/deep/page?q=1") == {"train-ai": "n"}


def test_the_longest_matching_path_decides() -> None:
    body = with_rules(
        "Content-Usage: /a/ train-ai=y, search=y",
        "Content-Usage: /a/b/ train-ai=n",
        "Content-Usage: /a/b/c",
    )
    assert usage(body, "/a/x") == {"train-ai": "y", "search": "y"}
    # The longest rule states nothing of search: unknown, not inherited from "/a/".
    assert usage(body, "/a/b/x") == {"train-ai": "n"}
    # A statement-less rule is still the longest match: everything unknown.
    assert usage(body, "/a/b/c") == {}


def test_rules_with_identical_paths_combine_the_most_restrictive_way() -> None:
    # draft 3.1 and draft-ietf-aipref-vocab 7.1: any n wins, then any y, else unknown.
    body = with_rules(
        "Content-Usage: /x/ train-ai=y, search=y",
        "Content-Usage: /x/ train-ai=n",
        "Content-Usage: /x/ search=maybe",
    )
    decision = RobotsTxt.parse(body).explain(f"{URL}/x/1", "anybot")
    assert decision.usage == (
        Preference("train-ai", "n", "Content-Usage: /x/ train-ai=n", 4),
        Preference("search", "y", "Content-Usage: /x/ train-ai=y, search=y", 3),
    )


def test_equally_long_matches_combine_too() -> None:
    body = with_rules("Content-Usage: /a* search=y", "Content-Usage: /ab search=n")
    assert usage(body, "/abc") == {"search": "n"}
    assert usage(body, "/axc") == {"search": "y"}


def test_paths_are_normalised_and_matched_like_allow_and_disallow() -> None:
    body = with_rules(
        "Content-Usage: /caf%C3%A9/ train-ai=n",
        "Content-Usage: /*.pdf$ search=n",
        "Content-Usage: /%7Euser/ search=y",
    )
    assert usage(body, "/café/menu") == {"train-ai": "n"}
    assert usage(body, "/caf%c3%a9/menu") == {"train-ai": "n"}
    assert usage(body, "/docs/a.pdf") == {"search": "n"}
    assert usage(body, "/docs/a.pdf?x") == {}
    assert usage(body, "/~user/x") == {"search": "y"}


def test_rules_of_merged_groups_all_count() -> None:
    body = (
        b"User-agent: mybot\nAllow: /\nContent-Usage: /a train-ai=n\n"
        b"User-agent: other\nDisallow: /\n"
        b"User-agent: MyBot\nContent-Usage: /b search=n\n"
    )
    assert usage(body, "/a", "MyBot/1.0") == {"train-ai": "n"}
    assert usage(body, "/b", "MyBot/1.0") == {"search": "n"}


def test_content_usage_may_be_interleaved_with_allow_and_disallow() -> None:
    body = b"User-agent: *\nContent-Usage: train-ai=n\nDisallow: /x\nContent-Usage: /y search=n\n"
    assert usage(body, "/z") == {"train-ai": "n"}
    assert usage(body, "/y") == {"search": "n"}
    assert usage(body, "/x") == {}


# --- reading the lines (draft 3.2, "Processing Content-Usage Rules") ---------------------


@pytest.mark.parametrize(
    ("line", "path", "preferences"),
    [
        ("Content-Usage: /ai-ok/\ttrain-ai=y", "/ai-ok/1", {"train-ai": "y"}),
        (
            "content-usage\t :\t/ai-ok/ \t train-ai=y \t# trailing comment",
            "/ai-ok/1",
            {"train-ai": "y"},
        ),
        ("CONTENT-USAGE:train-ai=n#search=n", "/", {"train-ai": "n"}),
        # The path ends at the first SP or HTAB: here "/a", with "b/ train-ai=n" as the
        # statement, which is no Dictionary: nothing is known under "/a".
        ("Content-Usage: /a b/ train-ai=n", "/a b/x", {}),
        # Only SP and HTAB are ignored around the label: this line is no rule at all.
        ("Content-Usage\x0b: train-ai=n", "/", {}),
        # A colon is required.
        ("Content-Usage train-ai=n", "/", {}),
        # Keys are exact: no Google-style prefix matching for this record.
        ("Content-Usages: train-ai=n", "/", {}),
    ],
)
def test_lines_are_read_as_the_draft_says(
    line: str, path: str, preferences: dict[str, str]
) -> None:
    assert usage(with_rules(line), path) == preferences


def test_split_rule_value() -> None:
    assert split_rule_value(b"train-ai=n") == (None, b"train-ai=n")
    assert split_rule_value(b"/p train-ai=n") == (b"/p", b"train-ai=n")
    assert split_rule_value(b"/p\t \ttrain-ai=n") == (b"/p", b"train-ai=n")
    assert split_rule_value(b"/p") == (b"/p", b"")
    assert split_rule_value(b"") == (None, b"")
    assert split_rule_value(b"*.pdf search=n") == (None, b"*.pdf search=n")


# --- the vocabulary's Dictionary (draft-ietf-aipref-vocab section 6) ---------------------


@pytest.mark.parametrize(
    ("statement", "stated"),
    [
        (b"train-ai=y, search=n", (("train-ai", "y"), ("search", "n"))),
        (b"search=n,train-ai=y", (("train-ai", "y"), ("search", "n"))),
        # 6.5.1: the last value of a repeated key wins; a Boolean or a String is no Token.
        (b'train-ai=y, train-ai, search=n, search="n"', ()),
        # 6.5.2: only the parameters of the value that is kept apply; they are ignored.
        (b"train-ai;allow=n, train-ai=y", (("train-ai", "y"),)),
        (b'train-ai;has;parameters="?";', ()),
        (b"train-ai=y;foo=bar", (("train-ai", "y"),)),
        # 6.5.1: upper-case keys make the whole Dictionary unparseable: all unknown.
        (b"Train-AI=n", ()),
        (b"train-ai=n, Search=y", ()),
        # Unknown labels are ignored; other Tokens and other types are unknown.
        (b"ai=n, train-genai=n, other=y", ()),
        (b"train-ai=yes, search=N", ()),
        (b"train-ai=?0, search=1", ()),
        (b"train-ai=(y n), search=:bg==:", ()),
        # Anything RFC 9651 rejects: trailing comma, bad separators, non-ASCII, junk.
        (b"train-ai=n,", ()),
        (b"train-ai=n search=n", ()),
        (b"train-ai=n;", ()),
        ("train-ai=n, search=ñ".encode(), ()),
        (b"", ()),
        # RFC 9651 discards leading and trailing SP.
        (b"  train-ai=n  ", (("train-ai", "n"),)),
    ],
)
def test_statement_preferences(statement: bytes, stated: tuple[tuple[str, str], ...]) -> None:
    assert statement_preferences(statement) == stated


def test_the_vocabulary_edge_cases_through_the_api() -> None:
    for statement, expected in (
        ('train-ai=y, train-ai, search=n, search="n"', {}),
        ("train-ai;allow=n, train-ai=y", {"train-ai": "y"}),
        ("TRAIN-AI=n, SEARCH=n", {}),
    ):
        assert usage(with_rules(f"Content-Usage: {statement}"), "/x") == expected, statement


def test_most_restrictive() -> None:
    assert most_restrictive(["y", "n", None]) == "n"
    assert most_restrictive([None, "y"]) == "y"
    assert most_restrictive([None]) is None
    assert most_restrictive([]) is None


#: Hostile statements of about a whole line (16,663 octets): (before, repeated, after, count).
HOSTILE_STATEMENTS = [
    (b"", b"a;", b"", 8000),
    (b"", b"(", b"", 16000),
    (b"train-ai=(", b"b ", b")", 8000),
    (b'train-ai="', b"\\\\", b'"', 8000),
    (b"train-ai=", b"1", b"", 16000),
    (b"train-ai=:", b"A", b":", 16000),
    (b"", b"train-ai=y, ", b"search=n", 1380),
    (b"", b"a=1.1;b=", b"", 2000),
    (b'train-ai=%"', b"%ff", b'"', 5000),
    (b"train-ai=@", b"9", b"", 16000),
    (b"", b"train-ai=?1;", b"", 1380),
]


@pytest.mark.parametrize("hostile", HOSTILE_STATEMENTS, ids=range(len(HOSTILE_STATEMENTS)))
def test_hostile_statements_of_a_whole_line_parse_in_linear_time(
    hostile: tuple[bytes, bytes, bytes, int],
) -> None:
    before, repeated, after, count = hostile

    def parse_with(size: int) -> Callable[[], object]:
        statement = before + repeated * size + after
        body = with_rules("Content-Usage: /x " + statement.decode("latin-1"))
        return lambda: [usage(body, path) for path in ("/x", "/x/2")]

    assert grows_linearly(parse_with, count)


# --- Content-Signal (Cloudflare's Content Signals Policy) ---------------------------------


def test_content_signals_of_the_group_that_applies() -> None:
    body = (
        b"User-Agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n\n"
        b"User-Agent: mybot\nContent-signal: search=yes,ai-input=yes,ai-train=yes\nAllow: /\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.content_signals("otherbot") == {"search": "yes", "ai-train": "no"}
    assert rules.content_signals("MyBot/1.0") == {
        "search": "yes",
        "ai-input": "yes",
        "ai-train": "yes",
    }
    assert RobotsTxt.parse(b"User-agent: a\nContent-Signal: search=no\n").content_signals("b") == {}


def test_several_content_signal_lines_combine_with_no_winning() -> None:
    body = (
        b"User-agent: *\nContent-Signal: search=yes, ai-train=no\n"
        b"CONTENT-SIGNAL : AI-Train=Yes, search=NO, ai-input=maybe, =yes, bad key=no\n"
        b"Disallow: /x\n"
    )
    assert RobotsTxt.parse(body).content_signals("bot") == {"search": "no", "ai-train": "no"}


def test_a_content_signal_line_does_not_end_a_run_of_user_agent_lines() -> None:
    body = b"User-agent: a\nContent-Signal: ai-train=no\nUser-agent: b\nDisallow: /x\n"
    rules = RobotsTxt.parse(body)
    assert rules.allowed(f"{URL}/x", "a") is False
    assert rules.content_signals("b") == {"ai-train": "no"}


def test_combine_content_signals() -> None:
    assert combine_content_signals([b"search=yes, ai-train=no", b"ai-train=yes"]) == {
        "search": "yes",
        "ai-train": "no",
    }
    assert combine_content_signals([b"x", b"=", b"a=b", b"\xff=yes"]) == {}


def test_signal_preferences_map_keys_onto_the_vocabulary() -> None:
    """ai-train -> train-ai, search -> search, ai-input -> nothing; yes -> y, no -> n."""
    lines = [(3, b"search=yes, ai-input=no, ai-train=yes"), (7, b"AI-Train=No")]
    assert signal_preferences(lines) == (
        Preference("train-ai", "n", "Content-Signal: AI-Train=No", 7),
        Preference("search", "y", "Content-Signal: search=yes, ai-input=no, ai-train=yes", 3),
    )
    assert signal_preferences([(1, b"ai-input=no")]) == ()


def test_signal_preferences_and_states_usage_through_the_api() -> None:
    body = (
        b"User-agent: *\nContent-Signal: ai-input=no\nDisallow: /x\n\n"
        b"User-agent: mybot\nContent-Signal: search=no\n\n"
        b"User-agent: usagebot\nContent-Usage: /a/ train-ai=n\n"
    )
    rules = RobotsTxt.parse(body)
    assert rules.signal_preferences("MyBot/1.0") == (
        Preference("search", "n", "Content-Signal: search=no", 6),
    )
    # ai-input alone states nothing the vocabulary can say.
    assert (rules.states_usage("otherbot"), rules.signal_preferences("otherbot")) == (False, ())
    assert rules.states_usage("MyBot") and rules.states_usage("usagebot")
    assert not RobotsTxt.parse(b"User-agent: a\nDisallow: /\n").states_usage("b")
    assert not RobotsTxt.parse(b"").states_usage("b")


def test_combine_preferences_keeps_the_first_rule_of_the_winning_value() -> None:
    usage = (Preference("train-ai", "y", "Content-Usage: train-ai=y", 4),)
    signal = (
        Preference("search", "y", "Content-Signal: search=yes, ai-train=no", 2),
        Preference("train-ai", "n", "Content-Signal: search=yes, ai-train=no", 2),
    )
    again = (Preference("train-ai", "n", "Content-Usage: train-ai=n", 9),)
    assert combine_preferences(usage, signal, again) == (
        Preference("train-ai", "n", "Content-Signal: search=yes, ai-train=no", 2),
        Preference("search", "y", "Content-Signal: search=yes, ai-train=no", 2),
    )
    assert combine_preferences() == combine_preferences((), ()) == ()


def test_combine_statements() -> None:
    assert combine_statements({"train-ai": "y"}, {"train-ai": "n", "search": "y"}) == {
        "train-ai": "n",
        "search": "y",
    }
    assert combine_statements({"search": "y"}, {}) == {"search": "y"}
    assert combine_statements({}, {}) == {}


@pytest.mark.parametrize(
    ("field_lines", "stated"),
    [
        ([b"train-ai=n, search=y"], {"train-ai": "n", "search": "y"}),
        ([b"train-ai=n", b"search=y"], {"train-ai": "n", "search": "y"}),
        ([b"train-ai=n", b"train-ai=y"], {"train-ai": "y"}),  # one Dictionary: last key wins
        ([b"Train-AI=n"], {}),
        ([b"train-ai=n", b"bad("], {}),  # one invalid line spoils the field
        ([], {}),
    ],
)
def test_header_preferences(field_lines: list[bytes], stated: dict[str, str]) -> None:
    assert header_preferences(field_lines) == stated


def test_a_header_field_past_the_limit_states_nothing_and_long_statements_are_not_kept() -> None:
    """Found by a second reviewer: a server's ~300 header lines of 16 KB each (4.8 MB)
    were parsed in the event loop (about a second) and kept in the statement cache, up
    to 256 of them."""
    long_line = b"search=y, pad=" + b"a" * 16_000
    assert len(long_line) > 16_000
    past = [long_line] * (MAX_FIELD_OCTETS // len(long_line) + 1)
    assert header_preferences([*past, b"train-ai=n"]) == {}
    assert header_preferences([long_line, b"train-ai=n"]) == {"search": "y", "train-ai": "n"}
    cached = _cached_statement.cache_info().currsize
    statement_preferences(long_line + b", train-ai=y")
    assert _cached_statement.cache_info().currsize == cached


def test_a_usage_line_the_parser_cuts_in_its_value_states_nothing() -> None:
    """Found by a second reviewer: cut at 16,663 octets, ``..., train-ai=n`` lost its
    last member and a ``train-ai=y`` before it stood (RFC 9651: the last value of a
    key wins). Such a line states nothing; the lines around it still count."""
    filler = "pad=" + "a" * 16_700
    cut = f"Content-Usage: /x train-ai=y, {filler}, train-ai=n"
    assert len(cut) > MAX_LINE_OCTETS
    body = with_rules(cut, "Content-Usage: /y train-ai=n")
    assert usage(body, "/x/page") == {}
    assert usage(body, "/y/page") == {"train-ai": "n"}
    # Cut in a comment or in trailing blanks, the value is whole (the second round found
    # such lines dropped, and a "y" elsewhere winning).
    assert usage(with_rules(f"Content-Usage: /x train-ai=n # {filler}"), "/x/1") == {
        "train-ai": "n"
    }
    assert usage(with_rules("Content-Usage: /x train-ai=n" + " " * 17_000), "/x/1") == {
        "train-ai": "n"
    }
    # A cut Content-Signal keeps the items before the cut: "no" wins wherever it stands.
    signal = f"Content-Signal: ai-train=no, search=yes, {filler}"
    assert RobotsTxt.parse(with_rules(signal)).content_signals("anybot") == {
        "ai-train": "no",
        "search": "yes",
    }
    cut_item = "Content-Signal: search=no, ai-train=yes" + "x" * 17_000  # "yesxxx...": no yes
    assert RobotsTxt.parse(with_rules(cut_item)).content_signals("anybot") == {"search": "no"}
    # Cut right after an item, before the comma of the next, the item is whole (the
    # third round found it dropped).
    head = "Content-Signal: search=yes, "
    whole = head + "x" * (MAX_LINE_OCTETS - len(head) - len(", ai-train=no")) + ", ai-train=no"
    assert len(whole) == MAX_LINE_OCTETS
    assert RobotsTxt.parse(with_rules(whole + ", search=no")).content_signals("anybot") == {
        "search": "yes",
        "ai-train": "no",
    }
    lost = f"Content-Signal: search=yes, {filler}, ai-train=no"
    assert RobotsTxt.parse(with_rules(lost)).content_signals("anybot") == {"search": "yes"}


# --- License (RSL 1.0) ------------------------------------------------------------------


def test_licenses_from_anywhere_in_file_order() -> None:
    body = (
        b"License: https://example.com/license.xml\n"
        b"User-agent: *\nDisallow: /x\n"
        b"license: https://example.com/other.xml # comment\n"
        b"License:\nLicenses: https://example.com/not-a-license.xml\n"
    )
    assert RobotsTxt.parse(body).licenses == [
        "https://example.com/license.xml",
        "https://example.com/other.xml",
    ]
    assert RobotsTxt.parse(b"").licenses == []


# --- purpose tokens ---------------------------------------------------------------------


PURPOSES = b"""\
User-agent: *
Disallow: /private/

User-agent: Google-Extended
Disallow: /articles/

User-agent: GPTBot
Disallow: /
Allow: /public/
"""


def test_allowed_for_all_names_the_first_token_whose_group_forbids() -> None:
    rules = RobotsTxt.parse(PURPOSES)
    agents = ["MyBot/1.0 (+https://x)", "Google-Extended", "GPTBot"]
    assert rules.allowed_for_all(f"{URL}/public/a", agents) == (True, None)
    assert rules.allowed_for_all(f"{URL}/private/a", agents) == (False, agents[0])
    assert rules.allowed_for_all(f"{URL}/articles/a", agents) == (False, "Google-Extended")
    assert rules.allowed_for_all(f"{URL}/other", agents) == (False, "GPTBot")
    assert rules.allowed_for_all(f"{URL}/other", agents[:2]) == (True, None)
    assert rules.allowed_for_all(f"{URL}/private/a", []) == (True, None)
    # allowed() keeps its meaning: one crawler, one group.
    assert rules.allowed(f"{URL}/articles/a", agents[0]) is True


def test_explain_for_all_says_which_token_forbade_and_by_which_rule() -> None:
    rules = RobotsTxt.parse(PURPOSES)
    agents = ["MyBot", "Google-Extended", "GPTBot"]
    decision = rules.explain_for_all(f"{URL}/articles/a", agents)
    assert (decision.allowed, decision.rule, decision.line) == (False, "Disallow: /articles/", 5)
    assert (decision.user_agents, decision.forbidden_for) == (
        ("Google-Extended",),
        "Google-Extended",
    )
    allowed = rules.explain_for_all(f"{URL}/public/a", agents)
    assert allowed == rules.explain(f"{URL}/public/a", "MyBot")
    assert allowed.forbidden_for is None
    assert rules.explain_for_all(f"{URL}/x", []).allowed is True


def test_the_structured_fields_parser_is_imported_only_when_a_statement_is_parsed() -> None:
    """A crawl whose robots.txt states no preference never loads ``http_sf``."""
    script = (
        "import sys\n"
        "import scrapy_rep9309.integration.middleware\n"
        "from scrapy_rep9309 import RobotsTxt\n"
        "rules = RobotsTxt.parse(b'User-agent: *\\nDisallow: /private\\n')\n"
        "assert rules.allowed('http://a.example/page', 'bot')\n"
        "print('http_sf' in sys.modules)\n"
        "rules = RobotsTxt.parse(b'User-agent: *\\nContent-Usage: train-ai=n\\n')\n"
        "print(rules.content_usage('http://a.example/page', 'bot'))\n"
        "print('http_sf' in sys.modules)\n"
    )
    result = run(["-c", script], cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    before, preferences, after = result.stdout.split("\n")[:3]
    assert before == "False"
    assert "train-ai" in preferences
    assert after == "True"
