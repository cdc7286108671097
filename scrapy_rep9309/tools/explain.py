"""Plain-text explanations of robots.txt decisions, for the command-line tools.

``python -m scrapy_rep9309 check`` and ``scrapy robots`` print the same report
in the same words, so what one says can be compared with the other. Kept free
of Scrapy imports: ``check`` must start fast.
"""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_rep9309.policy.decision import explain
from scrapy_rep9309.policy.fetchresult import FetchResult
from scrapy_rep9309.policy.record import AVAILABLE, UNAVAILABLE, UNREACHABLE
from scrapy_rep9309.rules.matcher import is_robots_txt
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.rules.useragent import crawler_token

#: What each fetch outcome means for crawling (RFC 9309 section 2.3.1).
OUTCOME_MEANING = {
    AVAILABLE: "rules parsed",
    UNAVAILABLE: "no rules, everything allowed; RFC 9309 2.3.1.3",
    UNREACHABLE: "everything disallowed until it answers; RFC 9309 2.3.1.4",
}


@dataclass(frozen=True)
class Verdict:
    """One URL's decision, in words."""

    url: str
    allowed: bool
    rule: str
    group: str

    def lines(self) -> list[str]:
        return [
            f"{'allowed' if self.allowed else 'disallowed':<11} {self.url}",
            f"  rule      {self.rule}",
            f"  group     {self.group}",
        ]


def judge(url: str, user_agent: str, outcome: str, rules: RobotsTxt | None) -> Verdict:
    """Decide ``url`` with the middleware's own decision, and say why in words."""
    verdict = explain(outcome, rules, url, user_agent)
    decision = verdict.decision
    if decision is None:
        if verdict.allowed:
            return Verdict(url, True, "none: robots.txt unavailable, everything allowed", "none")
        return Verdict(url, False, "none: robots.txt unreachable, everything disallowed", "none")
    if decision.rule is not None:
        rule = f"{decision.rule} (line {decision.line})"
    elif is_robots_txt(url):
        return Verdict(url, True, "none: /robots.txt itself is always allowed", "none")
    else:
        rule = "none matched (allowed by default)"
    if decision.user_agents:
        group = "User-agent: " + ", ".join(decision.user_agents)
    else:
        group = "none (no group names this user agent, and there is no '*' group)"
    return Verdict(url, decision.allowed, rule, group)


def describe_fetch(robots_url: str, result: FetchResult) -> list[str]:
    """Lines saying how a robots.txt fetch went: status, redirects, size, outcome."""
    status = "none" if result.status is None else str(result.status)
    lines = [
        f"robots.txt  {robots_url}",
        f"  status    {status} ({result.outcome}: {OUTCOME_MEANING[result.outcome]})",
    ]
    if result.redirects:
        chain = _without_repeats([robots_url, *result.redirects, result.final_url])
        lines.append(f"  redirects {' -> '.join(chain)}")
    if result.error:
        lines.append(f"  error     {result.error}")
    if result.outcome == AVAILABLE:
        lines.append(describe_size(len(result.body), result.truncated))
    return lines


def describe_file(path: str, size: int, truncated: bool) -> list[str]:
    """Lines for a robots.txt read from a local file (no fetch, so always "available")."""
    return [f"robots.txt  {path} (local file)", describe_size(size, truncated)]


def describe_size(size: int, truncated: bool) -> str:
    note = ", truncated: only the bytes up to the size limit are parsed" if truncated else ""
    return f"  size      {size} bytes{note}"


def describe_user_agent(user_agent: str) -> str:
    return f"user agent  {user_agent} (product token: {crawler_token(user_agent)})"


def exit_status(verdicts: list[Verdict]) -> int:
    """0 when every URL is allowed, 1 when any is disallowed."""
    return 0 if all(verdict.allowed for verdict in verdicts) else 1


def _without_repeats(urls: list[str]) -> list[str]:
    chain: list[str] = []
    for url in urls:
        if not chain or chain[-1] != url:
            chain.append(url)
    return chain
