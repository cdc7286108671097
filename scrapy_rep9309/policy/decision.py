"""The one decision: may this URL be fetched, given what is known of its origin's robots.txt?

The middleware, ``python -m scrapy_rep9309 check`` and ``scrapy robots`` all decide
with these two functions, so they cannot disagree. An "available" robots.txt decides
by its rules (``RobotsTxt``, where the one rule about ``/robots.txt`` itself lives:
the URL whose path is exactly ``/robots.txt``, without a query, is always allowed,
RFC 9309 2.2.2); "unavailable" allows everything (2.3.1.3); "unreachable" allows
nothing (2.3.1.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_rep9309.policy.record import AVAILABLE, UNAVAILABLE, OriginRecord
from scrapy_rep9309.rules.robotstxt import Decision, RobotsTxt


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision with its reason: the fetch outcome and, when rules decided, the rule."""

    allowed: bool
    outcome: str
    #: The rule-level explanation; None when the outcome alone decided.
    decision: Decision | None = None


def is_allowed(outcome: str, rules: RobotsTxt | None, url: str, user_agent: str) -> bool:
    """Whether ``url`` may be fetched (the fast path: no explanation is built)."""
    if outcome == AVAILABLE and rules is not None:
        return rules.allowed(url, user_agent)
    return outcome == UNAVAILABLE


def explain(outcome: str, rules: RobotsTxt | None, url: str, user_agent: str) -> Verdict:
    """The same decision as ``is_allowed``, with the rule and group that made it."""
    if outcome == AVAILABLE and rules is not None:
        decision = rules.explain(url, user_agent)
        return Verdict(decision.allowed, outcome, decision)
    return Verdict(outcome == UNAVAILABLE, outcome)


def newest(first: OriginRecord | None, second: OriginRecord | None) -> OriginRecord | None:
    """The later of two copies of one origin's robots.txt (the newest always decides)."""
    if first is None:
        return second
    if second is None or first is second:
        return first
    return first if first.fetched_at >= second.fetched_at else second
