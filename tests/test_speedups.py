"""The compiled GroupIndex and RuleSet against their pure-Python twins, which are the reference.

The suites that test the public API already run on both implementations (see
``_implementations.py``); here the two are compared part by part, on every file and
link of the shared corpora and on generated input, so that any difference shows up
with the exact group, line or path where it starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _implementations import active
from _shared_data import CORPUS_ROBOTS_DIR, RPBENCH_LINKS_DIR, RPBENCH_ROBOTS_DIR, require
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules import core
from scrapy_rep9309.rules.parser import MAX_LINE_OCTETS, prepare
from scrapy_rep9309.rules.urlnorm import normalised_path
from scrapy_rep9309.rules.useragent import group_token

#: Set by .ci/run: there the extension must have been built, not silently skipped.
REQUIRE_VARIABLE = "REP9309_REQUIRE_SPEEDUPS"


def test_the_extension_is_built_when_required() -> None:
    if os.environ.get(REQUIRE_VARIABLE) != "1":
        pytest.skip(f"{REQUIRE_VARIABLE} is not set: a build without a compiler is allowed")
    assert core.COMPILED is not None, "scrapy_rep9309.rules._speedups was not built"
    assert core.ACTIVE is core.COMPILED


@pytest.fixture(scope="module")
def compiled() -> core.Implementation:
    if core.COMPILED is None:
        pytest.skip("scrapy_rep9309.rules._speedups is not built (no C compiler at install time)")
    return core.COMPILED


PYTHON = core.PYTHON


def _interface(cls: type) -> set[str]:
    """The public methods of ``cls`` and the special ones it defines itself."""
    return {
        name
        for name in dir(cls)
        if callable(getattr(cls, name))
        and (not name.startswith("_") or (name.startswith("__") and name in vars(cls)))
    } - {"__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class__"}


@pytest.mark.parametrize("part", ["GroupIndex", "RuleSet"])
def test_the_twins_offer_the_same_methods(compiled: core.Implementation, part: str) -> None:
    """Found by a reviewer: the compiled RuleSet had a ``len()`` the Python one lacked."""
    python_methods = _interface(getattr(PYTHON, part))
    compiled_methods = _interface(getattr(compiled, part))
    assert compiled_methods == python_methods


TOKENS = (b"*", b"googlebot", b"scrapy", b"bingbot", b"mybot")


def group_view(implementation: core.Implementation, body: bytes) -> list[Any]:
    """Everything a GroupIndex tells about ``body``, as plain data."""
    index = implementation.GroupIndex(body)
    groups = []
    for number in range(len(index)):
        tables: tuple[dict[int, bytes], ...] = ({}, {}, {})
        index.collect(number, *tables)
        groups.append((index.agents(number), tables, index.span(number)))
    own_tokens = {
        group_token(agent.decode("utf-8", "replace")).encode("ascii", "replace")
        for agents, _, _ in groups
        for agent in agents
    }
    naming = {token: index.naming(token) for token in sorted(own_tokens | set(TOKENS)) if token}
    return [groups, naming]


def corpus_files(directory: Path) -> Iterator[Path]:
    return (path for path in sorted(require(directory).iterdir()) if path.is_file())


# --- the corpora -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "directory", [CORPUS_ROBOTS_DIR, RPBENCH_ROBOTS_DIR], ids=["robots", "rpbench"]
)
def test_groups_agree_on_every_corpus_file(compiled: core.Implementation, directory: Path) -> None:
    for path in corpus_files(directory):
        body = prepare(path.read_bytes())
        assert group_view(compiled, body) == group_view(PYTHON, body), path.name


def selected_groups(index: core.GroupIndexProtocol, token: bytes) -> list[int]:
    """The groups RobotsTxt merges for ``token``: those naming it, else the ``*`` ones."""
    return index.naming(token) or index.naming(b"*")


def selected_rules(body: bytes, token: bytes) -> tuple[dict[int, bytes], dict[int, bytes]]:
    index = PYTHON.GroupIndex(body)
    allows: dict[int, bytes] = {}
    disallows: dict[int, bytes] = {}
    for number in selected_groups(index, token):
        index.collect(number, allows, disallows, {})
    return allows, disallows


def rule_sets(
    compiled: core.Implementation, body: bytes, token: bytes
) -> tuple[core.RuleSetProtocol, core.RuleSetProtocol, core.RuleSetProtocol]:
    """The compiled rule set built as RobotsTxt builds it (straight from the groups), the
    compiled one built from tables, and the Python reference."""
    index = compiled.GroupIndex(body)
    from_groups = compiled.RuleSet.from_groups(index, selected_groups(index, token))
    allows, disallows = selected_rules(body, token)
    return from_groups, compiled.RuleSet(allows, disallows), PYTHON.RuleSet(allows, disallows)


def assert_same_decision(
    ours: core.RuleSetProtocol, reference: core.RuleSetProtocol, path: str, where: object
) -> None:
    """Same match key for ``path``, and the same rule as written behind it."""
    key = ours.decide(path)
    assert key == reference.decide(path), (where, path)
    if key is not None:
        assert ours.written(key) == reference.written(key), (where, path, key)


def test_decisions_agree_on_every_rpbench_link(compiled: core.Implementation) -> None:
    decisions = 0
    for path in corpus_files(RPBENCH_ROBOTS_DIR):
        links = RPBENCH_LINKS_DIR / path.name
        urls = links.read_text("utf-8", "replace").split() if links.is_file() else []
        body = prepare(path.read_bytes())
        for token in (b"scrapy", b"googlebot"):
            from_groups, from_tables, reference = rule_sets(compiled, body, token)
            for url in urls:
                expected = reference.allowed(url)
                assert from_groups.allowed(url) == expected, (path.name, token, url)
                assert from_tables.allowed(url) == expected, (path.name, token, url)
                normalised = normalised_path(url)
                assert_same_decision(from_groups, reference, normalised, (path.name, token))
                assert_same_decision(from_tables, reference, normalised, (path.name, token))
                decisions += 1
    assert decisions > 100_000


def paths_from_rules(allows: dict[int, bytes], disallows: dict[int, bytes]) -> set[str]:
    """Paths each rule matches or nearly matches: its value with ``*`` filled in, with and
    without what follows a ``$``, a character more and a character less."""
    paths = {"/", "/robots.txt"}
    for value in (*allows.values(), *disallows.values()):
        text = value.decode("utf-8", "surrogateescape").replace("*", "x")
        for path in (text, text.rstrip("$"), text.replace("$", "") + "y", text[:-1]):
            paths.add(normalised_path(path if path.startswith("/") else "/" + path))
    return paths


@pytest.mark.parametrize(
    "directory", [CORPUS_ROBOTS_DIR, RPBENCH_ROBOTS_DIR], ids=["robots", "rpbench"]
)
def test_rule_sets_from_groups_agree_on_every_corpus_file(
    compiled: core.Implementation, directory: Path
) -> None:
    for path in corpus_files(directory):
        body = prepare(path.read_bytes())
        for token in (b"scrapy", b"googlebot", b"bingbot"):
            from_groups, _, reference = rule_sets(compiled, body, token)
            for rule_path in sorted(paths_from_rules(*selected_rules(body, token))):
                assert_same_decision(from_groups, reference, rule_path, (path.name, token))


# --- generated input -------------------------------------------------------------------

LINE_PIECES = [
    "User-agent:", "user-agent", "USERAGENT :", "user agent:", "user-agents:", "Allow:",
    "disallow:", "DISSALLOW:", "disalow", "Sitemap:", "crawl-delay:", "crawl delay",
    "foo:", ":", "#", " ", "\t", "\v", "\f", "*", "$", "/", "a", "B", "bot", "Googlebot/2.1",
    "googlebot*", "%2A", "%41", "é", "\xa0", "<p>", "\r", "\n", "\r\n",
    "Content-Usage:", "content-usage", " CONTENT-USAGE\t:", "Content-Usage\v:", "train-ai=n",
    "Content-Signal:", "License:", "search=y", ", ", "ai-train=no", "/a ", "a b",
]  # fmt: skip
robots_like = st.lists(st.sampled_from(LINE_PIECES), max_size=60).map(
    lambda pieces: "".join(pieces).encode("utf-8")
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(robots_like, st.binary(max_size=400)))
def test_groups_agree_on_generated_bodies(body: bytes) -> None:
    if core.COMPILED is None:
        pytest.skip("scrapy_rep9309.rules._speedups is not built")
    body = prepare(body)
    assert group_view(core.COMPILED, body) == group_view(PYTHON, body)


@settings(max_examples=300, deadline=None)
@given(robots_like, st.sampled_from(["bot", "a", "B", "googlebot", "Googlebot/2.1 (+x)"]))
def test_public_answers_agree_on_generated_bodies(body: bytes, agent: str) -> None:
    """Everything ``RobotsTxt`` answers, usage preferences and crawl-delays included."""
    if core.COMPILED is None:
        pytest.skip("scrapy_rep9309.rules._speedups is not built")
    answers = []
    for implementation in (PYTHON, core.COMPILED):
        with active(implementation):
            rules = RobotsTxt.parse(body)
            answers.append(
                (
                    [rules.explain(path, agent) for path in ("/", "/a", "/a/b", "/ab")],
                    rules.crawl_delay(agent),
                    rules.content_signals(agent),
                    rules.licenses,
                    rules.sitemaps,
                )
            )
    assert answers[0] == answers[1]


#: "aab", "aba", "aaab" and "abaab" make the matcher fall back after partial matches.
PATTERN_PIECES = ["/", "a", "b", "ab", "aab", "aba", "*", "**", "$", "%", "%2", "%61", "%2a",
                  "%2F", "%24", "?", "=", "é", " ", "~", "index.htm", "index.html", "\x00",
                  "\xff"]  # fmt: skip
PATH_PIECES = ["/", "a", "b", "ab", "aaab", "abaab", "%2A", "%24", "%2F", "%25", "?", "=", "~",
               "index.html", "%C3%A9", "%FF"]  # fmt: skip
URL_PIECES = ["/", "a", "b", "*", "$", "%", "%61", "%7e", "%2f", "%e9", "é", "\udc80", " ",
              "#", "?", ";", ":", "\\", "http://h", "https://h", "HTTP://h", "//",
              "index.html"]  # fmt: skip

patterns = st.lists(st.sampled_from(PATTERN_PIECES), max_size=8).map(
    lambda pieces: "".join(pieces).encode("utf-8", "surrogatepass")
)
rule_tables = st.lists(st.tuples(st.booleans(), patterns), max_size=80)
paths = st.lists(st.sampled_from(PATH_PIECES), max_size=10).map(lambda p: "/" + "".join(p))
urls = st.lists(st.sampled_from(URL_PIECES), max_size=10).map("".join)


def split_tables(rules: list[tuple[bool, bytes]]) -> tuple[dict[int, bytes], dict[int, bytes]]:
    allows = {line: value for line, (allow, value) in enumerate(rules, 1) if allow}
    disallows = {line: value for line, (allow, value) in enumerate(rules, 1) if not allow}
    return allows, disallows


@settings(max_examples=500, deadline=None)
@given(rule_tables, st.lists(paths, min_size=1, max_size=8), st.lists(urls, max_size=8))
def test_decisions_agree_on_generated_rules(
    rules: list[tuple[bool, bytes]], path_list: list[str], url_list: list[str]
) -> None:
    if core.COMPILED is None:
        pytest.skip("scrapy_rep9309.rules._speedups is not built")
    allows, disallows = split_tables(rules)
    ours = core.COMPILED.RuleSet(allows, disallows)
    reference = PYTHON.RuleSet(allows, disallows)
    for path in path_list:
        assert ours.decide(path) == reference.decide(path), path
    for url in url_list:
        assert ours.allowed(url) == reference.allowed(url), url


@settings(max_examples=400, deadline=None)
@given(robots_like, st.lists(paths, min_size=1, max_size=8))
def test_rule_sets_from_groups_agree_on_generated_bodies(body: bytes, path_list: list[str]) -> None:
    if core.COMPILED is None:
        pytest.skip("scrapy_rep9309.rules._speedups is not built")
    body = prepare(body)
    for token in (b"bot", b"googlebot"):
        from_groups, _, reference = rule_sets(core.COMPILED, body, token)
        for path in sorted(paths_from_rules(*selected_rules(body, token)) | set(path_list)):
            assert_same_decision(from_groups, reference, path, token)


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_rules_as_written_are_read_again_from_their_lines(
    compiled: core.Implementation, newline: bytes
) -> None:
    """The compiled set keeps where each rule's line starts and reads the value again: the
    same value whatever ends the lines, after a comment, and cut like an overlong line."""
    long_value = b"/" + b"x" * MAX_LINE_OCTETS
    lines = [b"User-agent: *", b"Disallow: /a*b$ # why", b"Allow:\t/a/index.html  "]
    body = newline.join([*lines, b"Disallow: " + long_value, b"Disallow /c"]) + newline
    from_groups, _, reference = rule_sets(compiled, body, b"bot")
    for path in ("/axb", "/a/", "/a/index.html", long_value.decode()[: MAX_LINE_OCTETS - 9], "/c"):
        assert_same_decision(from_groups, reference, path, newline)
        assert from_groups.decide(path) is not None, path


@pytest.mark.parametrize("values", [[b"$"], [b"$", b"*"], [b"", b"$"]])
def test_patterns_that_normalise_to_nothing(
    compiled: core.Implementation, values: list[bytes]
) -> None:
    """Sets whose every pattern is empty once "$" is cut: a corner the compiled pattern
    block once mishandled (nothing to hold, yet matched against)."""
    body = b"User-agent: *\n" + b"".join(b"Disallow: " + value + b"\n" for value in values)
    rule_set_triple = rule_sets(compiled, body, b"bot")
    for path in ("/", "/a", ""):
        decisions = {rule_set.decide(path) for rule_set in rule_set_triple}
        answers = {rule_set.allowed(path) for rule_set in rule_set_triple}
        assert len(decisions) == len(answers) == 1, path


def test_every_octet_is_normalised_alike_in_rules_and_urls(compiled: core.Implementation) -> None:
    """Each of the 256 octets in a pattern (plain and with ``*``) and each ASCII
    character in a path and in a URL, against the reference."""
    allows: dict[int, bytes] = {}
    disallows: dict[int, bytes] = {}
    for octet in range(256):
        allows[2 * octet + 1] = b"/a" + bytes((octet,)) + b"x"
        disallows[2 * octet + 2] = b"/b*" + bytes((octet,)) + b"$"
    ours, reference = compiled.RuleSet(allows, disallows), PYTHON.RuleSet(allows, disallows)
    for character in map(chr, range(128)):
        for path in (f"/a{character}x", f"/b{character}", f"/bz{character}"):
            assert ours.decide(normalised_path(path)) == reference.decide(normalised_path(path))
            for url in (path, "https://h" + path, "http://h" + path + "#f"):
                assert ours.allowed(url) == reference.allowed(url), url


# --- wrong arguments get clear errors, never a crash --------------------------------------


def test_wrong_arguments_raise(compiled: core.Implementation) -> None:
    index = compiled.GroupIndex(b"user-agent: a\ndisallow: /x\n")
    assert len(index) == 1
    for bad_index in (-1, 1, 2**70):
        with pytest.raises((IndexError, OverflowError)):
            index.collect(bad_index, {}, {}, {})
        with pytest.raises((IndexError, OverflowError)):
            index.agents(bad_index)
        with pytest.raises((IndexError, OverflowError)):
            index.span(bad_index)
    with pytest.raises(TypeError):
        index.naming("a")
    with pytest.raises(TypeError):
        compiled.GroupIndex("user-agent: a")
    with pytest.raises(TypeError):
        compiled.RuleSet({1: "/x"}, {})
    with pytest.raises(TypeError):
        compiled.RuleSet({"1": b"/x"}, {})
    rules = compiled.RuleSet({1: b"/x"}, {2: b"/"})
    with pytest.raises(TypeError):
        rules.decide(b"/x")
    with pytest.raises(TypeError):
        rules.allowed(None)
    for bad_key in ((3, True), "x", (3, True, "x")):
        with pytest.raises(TypeError):
            rules.written(bad_key)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        rules.written((2, True, -3))
    with pytest.raises(TypeError):
        compiled.RuleSet.from_groups(PYTHON.GroupIndex(b"user-agent: a\n"), [0])
    with pytest.raises(TypeError):
        compiled.RuleSet.from_groups(index, None)  # type: ignore[arg-type]
    for bad_indexes in ([1], [-1], [0, 2**70]):
        with pytest.raises((IndexError, OverflowError)):
            compiled.RuleSet.from_groups(index, bad_indexes)
    from_groups = compiled.RuleSet.from_groups(index, [0])
    assert from_groups.written((2, False, -2)) == b"/x"
    with pytest.raises(KeyError):
        from_groups.written((2, True, -2))


def test_lone_surrogates_in_urls_are_normalised_not_rejected(compiled: core.Implementation) -> None:
    rules = compiled.RuleSet({}, {1: b"/a%ED%A0%80"})
    assert rules.allowed("/a\udc80") == PYTHON.RuleSet({}, {1: b"/a%ED%A0%80"}).allowed("/a\udc80")
