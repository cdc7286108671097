"""Every assertion of Google's robots_test.cc, replayed against the public API.

The records come from ``../shared/conformance/google_robots_test_cases.jsonl`` (one per
line, captured when Google's own tests ran). ``allowed`` records must all pass, except
three where RFC 9309 and Google's library disagree and the RFC decides. The other record
kinds check internals of Google's library; each is translated into what the public API
exposes, or skipped with the reason it cannot be.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from _shared_data import (
    CONFORMANCE_FILE,
    absent_reason,
    field_bytes,
    field_text,
    load_conformance_records,
)

from scrapy_rep9309 import RobotsTxt

# The parser is tested as built from Python and from compiled parts alike.
pytestmark = pytest.mark.usefixtures("each_implementation")

RECORDS = load_conformance_records()

# RFC 9309 section 2.2.2: "Octets in the URI and robots.txt paths outside the range of
# the ASCII coded character set, and those in the reserved range defined by [RFC3986],
# MUST be percent-encoded as defined by [RFC3986] prior to comparison." and "If a
# percent-encoded ASCII octet is encountered in the URI, it MUST be unencoded prior to
# comparison, unless it is a reserved character in the URI as defined by [RFC3986] or
# the character is outside the unreserved character range." Figure 4 applies this to
# both the URI and the rule path. Google's library expects callers to percent-encode
# URLs themselves and never decodes, so it answers differently in these three records:
RFC_DECIDES = {
    # Allow: /foo/bar/ツ (raw UTF-8) vs URL /foo/bar/ツ: both sides become
    # /foo/bar/%E3%83%84, so the longer Allow matches (Google: the raw URL matches nothing).
    "ID_Encoding#3": True,
    # Allow: /foo/bar/%E3%83%84 vs URL /foo/bar/ツ: the URL's non-ASCII octets are
    # percent-encoded before comparison, exactly the figure's third row.
    "ID_Encoding#5": True,
    # Allow: /foo/bar/%62%61%7A vs URL /foo/bar/baz: %62 %61 %7A are unreserved
    # characters, decoded before comparison (figure 4, last row: "/foo/bar/baz").
    "ID_Encoding#6": True,
}

# Google's RobotsMatcher::IsValidUserAgentToObey: non-empty, only [a-zA-Z_-]. RFC 9309
# 2.2.1 says the same of product tokens. The API shows it through group lines: a group
# line whose value is a valid token applies to exactly that token; otherwise the value is
# cut to its leading run of [a-zA-Z_-] (``Foobot/2.1`` -> ``Foobot``), or names nobody.
LEADING_TOKEN = re.compile(r"[A-Za-z_-]*")

# What the BOM bodies mean in terms of the API: (group that applies to "foo", line of the
# rule that decides /AnyValue or None). Google counts the parser callbacks instead.
BOM_EXPECTATIONS: dict[int, tuple[tuple[str, ...], int | None]] = {
    # b"\xef\xbb\xbfUser-Agent: foo\nAllow: /AnyValue\n": full BOM skipped, both lines count.
    1: (("foo",), 2),
    # b"\xef\xbbUser-Agent: ...": a partial BOM prefix is skipped too.
    3: (("foo",), 2),
    # b"\xefUser-Agent: ...": so is a one-byte prefix of it.
    5: (("foo",), 2),
    # b"\xef\x11\xbfUser-Agent: foo": not a BOM; the first key is unknown, so the Allow
    # line precedes any user-agent line and is ignored: no group applies to foo.
    7: ((), None),
    # b"User-Agent: foo\n\xef\xbb\xbfAllow: ...": a BOM is only skipped at the very start;
    # the second key is unknown, so foo's group exists but has no rules.
    9: (("foo",), None),
}


def _record_id(record: dict[str, Any] | None) -> str:
    return "no-data" if record is None else record["id"]


def _params() -> list[Any]:
    if not RECORDS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=absent_reason(CONFORMANCE_FILE)))]
    return RECORDS


def _record_number(record: dict[str, Any]) -> int:
    return int(record["id"].rsplit("#", 1)[1])


def check_allowed(record: dict[str, Any]) -> None:
    rules = RobotsTxt.parse(field_bytes(record, "robots_txt"))
    user_agent = field_text(record, "user_agent")
    url = field_text(record, "url")
    expected = RFC_DECIDES.get(record["id"], record["expected_allowed"])
    assert rules.allowed(url, user_agent) is expected, record["note"]
    assert rules.explain(url, user_agent).allowed is expected


def check_valid_user_agent(record: dict[str, Any]) -> None:
    value = field_text(record, "user_agent")
    body = f"User-agent: *\nAllow: /\n\nUser-agent: {value}\nDisallow: /\n"
    rules = RobotsTxt.parse(body.encode("utf-8"))
    if record["expected"]:
        for spelling in (value, value.lower(), value.upper()):
            decision = rules.explain("/page", spelling)
            assert decision.allowed is False, f"group {value!r} must apply to {spelling!r}"
            assert decision.rule == "Disallow: /"
        return
    token = LEADING_TOKEN.match(value.strip())
    assert token is not None
    if token.group():
        # Not a product token itself: the group line means its leading token.
        assert rules.allowed("/page", token.group()) is False
        assert rules.explain("/page", token.group()).line == 5
    else:
        # Nothing usable ("", "ツ"): the group names nobody and "*" applies to everyone.
        for caller in ("Foobot", value):
            assert rules.explain("/page", caller).user_agents in (("*",), ())
            assert rules.allowed("/page", caller) is True


def check_line_counting(record: dict[str, Any]) -> None:
    # Body: "User-Agent: foo / Allow: /some/path / User-Agent: bar / (blank) / (blank) /
    # Disallow: /" with LF, CRLF, CR or mixed endings. Google counts 4 valid directives
    # and last line 6; through the API that is: foo's Allow decides from line 2 and bar's
    # Disallow from line 6, whatever the line endings.
    rules = RobotsTxt.parse(field_bytes(record, "robots_txt"))
    foo = rules.explain("http://foo.bar/some/path", "foo")
    bar = rules.explain("http://foo.bar/other", "bar")
    if record["check"] == "parse_stats.valid_directives":
        assert (foo.allowed, foo.rule, foo.line) == (True, "Allow: /some/path", 2)
        assert (bar.allowed, bar.rule) == (False, "Disallow: /")
        assert foo.user_agents == ("foo",)
        assert bar.user_agents == ("bar",)
    expected_last_line = record["expected"] if "last_line" in record["check"] else 6
    assert bar.line == expected_last_line


def check_bom(record: dict[str, Any]) -> None:
    body_number = _record_number(record) - (_record_number(record) + 1) % 2
    group, line = BOM_EXPECTATIONS[body_number]
    rules = RobotsTxt.parse(field_bytes(record, "robots_txt"))
    decision = rules.explain("http://foo.bar/AnyValue", "foo")
    assert decision.user_agents == group
    assert decision.line == line
    assert decision.allowed is True
    if line is not None:
        assert decision.rule == "Allow: /AnyValue"


def check_sitemap(record: dict[str, Any]) -> None:
    rules = RobotsTxt.parse(field_bytes(record, "robots_txt"))
    assert rules.sitemaps == [record["expected"]]


def check_path_params_query(record: dict[str, Any]) -> None:
    url = field_text(record, "url")
    if url and not url.startswith("/") and "://" not in url:
        pytest.skip(
            f"{url!r} is neither an absolute URL nor a path: RobotsTxt.allowed() takes "
            "one of those, so Google's guess that it starts with a host has no equivalent"
        )
    expected = record["expected"]
    # The extracted path+query is what rules are matched against: a rule anchored with
    # "$" on exactly that string must match it, and only it.
    rules = RobotsTxt.parse(f"User-agent: *\nDisallow: {expected}$\n".encode())
    decision = rules.explain(url, "anybot")
    assert decision.allowed is False, f"{url!r} should be matched as {expected!r}"
    assert decision.rule == f"Disallow: {expected}$"
    longer = RobotsTxt.parse(f"User-agent: *\nDisallow: {expected}x$\n".encode())
    assert longer.allowed(url, "anybot") is True


def check_escape_pattern(record: dict[str, Any]) -> None:
    # MaybeEscapePattern(pattern) == expected, in API terms: a rule written with the raw
    # pattern matches a URL written with the escaped form (RFC 9309 2.2.2 normalises both).
    pattern = field_text(record, "pattern")
    escaped = field_text(record, "expected")
    rules = RobotsTxt.parse(f"User-agent: *\nDisallow: /x/{pattern}$\n".encode())
    assert rules.allowed(f"http://foo.bar/x/{escaped}", "anybot") is False
    assert rules.allowed(f"http://foo.bar/x/{escaped}/more", "anybot") is True


def handler_for(record: dict[str, Any]) -> Callable[[dict[str, Any]], None] | None:
    """The API translation of a record's check, or None for a kind this test never saw."""
    check = record["check"]
    if check.startswith("parse_stats.") and "ByteOrderMark" in record["test_name"]:
        return check_bom
    return {
        "allowed": check_allowed,
        "is_valid_user_agent": check_valid_user_agent,
        "parse_stats.valid_directives": check_line_counting,
        "parse_stats.last_line_seen": check_line_counting,
        "parse_stats.sitemap": check_sitemap,
        "get_path_params_query": check_path_params_query,
        "maybe_escape_pattern": check_escape_pattern,
    }.get(check)


@pytest.mark.parametrize("record", _params(), ids=_record_id)
def test_google_robots_test_record(record: dict[str, Any]) -> None:
    handler = handler_for(record)
    if handler is None:
        pytest.fail(f"unknown check kind {record['check']!r}: teach this test what it means")
    handler(record)


def test_every_allowed_record_is_present() -> None:
    """Guards the data itself: 145 allowed records, and the three the RFC decides."""
    if not RECORDS:
        pytest.skip(absent_reason(CONFORMANCE_FILE))
    allowed_ids = {r["id"] for r in RECORDS if r["check"] == "allowed"}
    assert len(allowed_ids) == 145
    assert set(RFC_DECIDES) <= allowed_ids
    for record_id in RFC_DECIDES:
        record = next(r for r in RECORDS if r["id"] == record_id)
        assert record["expected_allowed"] is False, "Google's answer is the one overruled"
