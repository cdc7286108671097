"""The one decision: may this URL be fetched, given what is known of its origin's robots.txt?

The middleware, ``python -m scrapy_rep9309 check`` and ``scrapy robots`` all decide
with these functions, so they cannot disagree. An "available" robots.txt decides
by its rules (``RobotsTxt``, where the one rule about ``/robots.txt`` itself lives:
the URL whose path is exactly ``/robots.txt``, without a query, is always allowed,
RFC 9309 2.2.2); "unavailable" allows everything (2.3.1.3); "unreachable" allows
nothing (2.3.1.4).

A crawl may obey the groups of several user agents: its own product token and
``REP9309_EXTRA_USER_AGENTS`` (purpose tokens such as ``Google-Extended``). A URL is
allowed only when every one of them may fetch it, and its usage preferences are those
of all their groups, combined. A URL the rules allow is still refused when one of the
``required`` labels (``REP9309_REQUIRE_USAGE``) has the preference ``n``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scrapy_rep9309.policy.record import AVAILABLE, UNAVAILABLE
from scrapy_rep9309.rules.matcher import is_robots_txt
from scrapy_rep9309.rules.robotstxt import Decision, RobotsTxt
from scrapy_rep9309.rules.usage import DISALLOW, Preference, combine_preferences

#: An available robots.txt, even an empty one, decides by its parsed rules: a caller that
#: passes none has skipped the parsing, and the URL cannot be decided.
NO_RULES = "an available robots.txt needs its parsed rules to decide (rules=None)"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision with its reason: the fetch outcome and, when rules decided, the rule."""

    allowed: bool
    outcome: str
    #: The rule-level explanation; None when the outcome alone decided. With extra
    #: user agents, ``decision.forbidden_for`` names the one whose group forbids the URL.
    decision: Decision | None = None
    #: The usage preferences of an allowed URL (see :func:`usage_preferences`).
    usage: tuple[Preference, ...] = ()
    #: Those of ``usage`` that refuse a required label (see :func:`refused`).
    refused: tuple[Preference, ...] = ()

    @property
    def fetched(self) -> bool:
        """Whether the crawl downloads the URL: allowed, and no required usage refused."""
        return self.allowed and not self.refused


def is_allowed(
    outcome: str,
    rules: RobotsTxt | None,
    url: str,
    user_agent: str,
    extra_user_agents: Sequence[str] = (),
) -> bool:
    """Whether ``url`` may be fetched (the fast path: no explanation is built)."""
    if outcome == AVAILABLE:
        if rules is None:
            raise ValueError(NO_RULES)
        if not rules.allowed(url, user_agent):
            return False
        return not extra_user_agents or rules.allowed_for_all(url, extra_user_agents)[0]
    return outcome == UNAVAILABLE


def usage_preferences(
    outcome: str,
    rules: RobotsTxt | None,
    url: str,
    user_agent: str,
    extra_user_agents: Sequence[str] = (),
) -> tuple[Preference, ...]:
    """The usage preferences robots.txt states for ``url``, which it allows, by label.

    For each user agent obeyed, the URL's ``Content-Usage`` preferences and the
    ``Content-Signal`` values of its group mapped onto the vocabulary; all of them
    combined label by label, the most restrictive way (draft-ietf-aipref-vocab 5.1:
    any ``n`` wins, then ``y``). Each preference names the rule that stated it.
    Costs a cached look-up per user agent when their groups state none.
    """
    if outcome != AVAILABLE:
        return ()
    if rules is None:
        raise ValueError(NO_RULES)
    stating = [user_agent] if rules.states_usage(user_agent) else []
    if extra_user_agents:
        stating += [agent for agent in extra_user_agents if rules.states_usage(agent)]
    if not stating or is_robots_txt(url):  # /robots.txt: always allowed, as it is
        return ()
    statements = []
    for agent in stating:
        statements.append(rules.explain(url, agent).usage)
        statements.append(rules.signal_preferences(agent))
    return combine_preferences(*statements)


def refused(preferences: tuple[Preference, ...], required: Sequence[str]) -> tuple[Preference, ...]:
    """The preferences that refuse one of the ``required`` labels (value ``n``)."""
    return tuple(p for p in preferences if p.value == DISALLOW and p.label in required)


def explain(
    outcome: str,
    rules: RobotsTxt | None,
    url: str,
    user_agent: str,
    extra_user_agents: Sequence[str] = (),
    required: Sequence[str] = (),
) -> Verdict:
    """The same decision as ``is_allowed``, with the rule and group that made it; for an
    allowed URL, its usage preferences and those that refuse a ``required`` label."""
    if outcome == AVAILABLE:
        if rules is None:
            raise ValueError(NO_RULES)
        if extra_user_agents:
            decision = rules.explain_for_all(url, (user_agent, *extra_user_agents))
        else:
            decision = rules.explain(url, user_agent)
        if not decision.allowed:
            return Verdict(False, outcome, decision)
        preferences = usage_preferences(outcome, rules, url, user_agent, extra_user_agents)
        return Verdict(True, outcome, decision, preferences, refused(preferences, required))
    return Verdict(outcome == UNAVAILABLE, outcome)
