"""The one decision (``policy/decision.py``) with extra user agents and required usage."""

from __future__ import annotations

import pytest

from scrapy_rep9309.policy.decision import (
    explain,
    is_allowed,
    refused,
    usage_preferences,
)
from scrapy_rep9309.policy.record import AVAILABLE, UNAVAILABLE, UNREACHABLE
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.rules.usage import Preference

pytestmark = pytest.mark.usefixtures("each_implementation")

BOT = "MyBot/1.0 (+https://my.bot)"
EXTENDED = "Google-Extended"

ROBOTS = b"""\
User-agent: *
Disallow: /private/
Content-Signal: search=yes, ai-train=no
Content-Usage: /open/ train-ai=y

User-agent: Google-Extended
Disallow: /no-ai/
Content-Usage: search=n
"""


@pytest.fixture
def rules() -> RobotsTxt:
    return RobotsTxt.parse(ROBOTS)


@pytest.mark.parametrize(
    ("path", "extra", "allowed"),
    [
        ("/no-ai/1", (), True),
        ("/no-ai/1", (EXTENDED,), False),
        ("/private/1", (), False),
        ("/private/1", (EXTENDED,), False),
        ("/public/1", (EXTENDED,), True),
        ("/robots.txt", (EXTENDED,), True),
    ],
)
def test_every_user_agent_must_be_allowed(
    rules: RobotsTxt, path: str, extra: tuple[str, ...], allowed: bool
) -> None:
    assert is_allowed(AVAILABLE, rules, path, BOT, extra) is allowed
    assert explain(AVAILABLE, rules, path, BOT, extra).allowed is allowed


def test_explain_names_the_user_agent_whose_group_forbids(rules: RobotsTxt) -> None:
    verdict = explain(AVAILABLE, rules, "/no-ai/1", BOT, (EXTENDED,))

    assert verdict.decision is not None
    assert verdict.decision.forbidden_for == EXTENDED
    assert (verdict.decision.rule, verdict.decision.line) == ("Disallow: /no-ai/", 7)
    assert verdict.decision.user_agents == ("Google-Extended",)
    assert (verdict.usage, verdict.fetched) == ((), False)

    own = explain(AVAILABLE, rules, "/private/1", BOT, (EXTENDED,))
    assert own.decision is not None and own.decision.forbidden_for == BOT


def test_outcomes_decide_alone_whatever_the_user_agents() -> None:
    for outcome, allowed in ((UNAVAILABLE, True), (UNREACHABLE, False)):
        assert is_allowed(outcome, None, "/x", BOT, (EXTENDED,)) is allowed
        verdict = explain(outcome, None, "/x", BOT, (EXTENDED,), ("train-ai",))
        assert (verdict.allowed, verdict.decision, verdict.usage) == (allowed, None, ())
        assert usage_preferences(outcome, None, "/x", BOT) == ()


def test_usage_combines_content_usage_and_content_signal(rules: RobotsTxt) -> None:
    """The signal's ai-train=no wins over the path's train-ai=y: the most restrictive way."""
    assert usage_preferences(AVAILABLE, rules, "/page", BOT) == (
        Preference("train-ai", "n", "Content-Signal: search=yes, ai-train=no", 3),
        Preference("search", "y", "Content-Signal: search=yes, ai-train=no", 3),
    )
    assert usage_preferences(AVAILABLE, rules, "/open/page", BOT)[0] == Preference(
        "train-ai", "n", "Content-Signal: search=yes, ai-train=no", 3
    )


def test_usage_of_extra_user_agents_groups_is_combined(rules: RobotsTxt) -> None:
    combined = usage_preferences(AVAILABLE, rules, "/page", BOT, (EXTENDED,))

    assert {p.label: p.value for p in combined} == {"train-ai": "n", "search": "n"}
    assert combined[1] == Preference("search", "n", "Content-Usage: search=n", 8)


def test_a_file_without_preferences_states_none() -> None:
    rules = RobotsTxt.parse(b"User-agent: *\nDisallow: /private/\n")

    assert not rules.states_usage(BOT)
    assert usage_preferences(AVAILABLE, rules, "/page", BOT, (EXTENDED,)) == ()


def test_required_labels_refused(rules: RobotsTxt) -> None:
    usage = usage_preferences(AVAILABLE, rules, "/page", BOT, (EXTENDED,))

    assert refused(usage, ()) == ()
    assert [p.label for p in refused(usage, ("train-ai",))] == ["train-ai"]
    assert [p.label for p in refused(usage, ("search", "train-ai"))] == ["train-ai", "search"]
    verdict = explain(AVAILABLE, rules, "/page", BOT, (EXTENDED,), ("search",))
    assert verdict.allowed and not verdict.fetched
    assert verdict.refused == (Preference("search", "n", "Content-Usage: search=n", 8),)
    assert explain(AVAILABLE, rules, "/page", BOT, (), ("search",)).fetched


def test_an_available_robots_txt_cannot_be_decided_without_its_rules() -> None:
    """Unparsed is not "no rules": the decision refuses to guess (an empty file parses
    to rules that allow everything)."""
    url = "http://a.example/x"
    with pytest.raises(ValueError, match="parsed rules"):
        is_allowed(AVAILABLE, None, url, "bot")
    with pytest.raises(ValueError, match="parsed rules"):
        usage_preferences(AVAILABLE, None, url, "bot")
    with pytest.raises(ValueError, match="parsed rules"):
        explain(AVAILABLE, None, url, "bot")
    assert is_allowed(AVAILABLE, RobotsTxt.parse(b""), url, "bot")


def test_robots_txt_itself_states_no_usage_preferences(rules: RobotsTxt) -> None:
    """Always allowed, it is not content its group's ``Content-Signal`` speaks of either:
    a spider's own robots.txt request is never refused for usage."""
    assert usage_preferences(AVAILABLE, rules, "/page", BOT) != ()
    assert usage_preferences(AVAILABLE, rules, "/robots.txt", BOT, (EXTENDED,)) == ()
    assert usage_preferences(AVAILABLE, rules, "http://a.example/robots.txt", BOT) == ()
    assert explain(AVAILABLE, rules, "/robots.txt", BOT, (), ("train-ai",)).fetched
