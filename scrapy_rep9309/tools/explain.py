"""Plain-text explanations of robots.txt decisions, for the command-line tools.

``python -m scrapy_rep9309 check`` and ``scrapy robots`` print the same report
in the same words, so what one says can be compared with the other. Kept free
of Scrapy imports: ``check`` must start fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from w3lib.url import safe_url_string

from scrapy_rep9309.policy.decision import explain
from scrapy_rep9309.policy.fetchresult import FetchResult
from scrapy_rep9309.policy.record import AVAILABLE, UNAVAILABLE, UNREACHABLE
from scrapy_rep9309.rules.matcher import is_robots_txt
from scrapy_rep9309.rules.robotstxt import RobotsTxt
from scrapy_rep9309.rules.usage import Preference
from scrapy_rep9309.rules.useragent import crawler_token, token_problem

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
    #: The URL's usage preferences, one entry per rule (``Content-Usage`` or
    #: ``Content-Signal``) that gave any: ``train-ai=n (Content-Usage: train-ai=n, line 4)``.
    usage: tuple[str, ...] = ()
    #: With several user agents obeyed: the one whose group forbids the URL.
    forbidden_for: str | None = None
    #: The required labels its preferences refuse (``train-ai=n``): the crawl skips it.
    refused: str | None = None
    #: Where the required labels came from, named after ``refused``.
    required_by: str = "REP9309_REQUIRE_USAGE"

    @property
    def fetched(self) -> bool:
        """Whether a crawl downloads the URL (the exit status counts this)."""
        return self.allowed and self.refused is None

    def lines(self) -> list[str]:
        word = "refused" if self.refused else "allowed" if self.allowed else "disallowed"
        lines = [f"{word:<11} {self.url}", f"  rule      {self.rule}", f"  group     {self.group}"]
        if self.forbidden_for is not None:
            lines.append(f"  token     {self.forbidden_for} (its group forbids the URL)")
        lines += [f"  usage     {entry}" for entry in self.usage]
        if self.refused is not None:
            lines.append(f"  refused   {self.refused} ({self.required_by})")
        return lines


#: The host a path is read under, as a crawl would send it (``as_sent``).
_PATH_HOST = "http://path.invalid"


def as_sent(url: str) -> str:
    """``url`` (or a path: ``/a/b?q=1``) as ``scrapy.Request`` reads it, which is what a
    crawl decides and sends (``safe_url_string``: ``/a?`` is ``/a``, a backslash ``/``,
    non-ASCII percent-encoded); the tools decide that URL, so that they and a crawl never
    disagree. What it cannot read is returned as it is (the caller reports it)."""
    is_path = url.startswith("/") and not url.startswith("//")
    try:
        sent = safe_url_string(_PATH_HOST + url if is_path else url)
    except ValueError:
        return url
    return sent[len(_PATH_HOST) :] if is_path else sent


def judge(
    url: str,
    user_agent: str,
    outcome: str,
    rules: RobotsTxt | None,
    extra_user_agents: Sequence[str] = (),
    required: Sequence[str] = (),
    required_by: str = "REP9309_REQUIRE_USAGE",
) -> Verdict:
    """Decide ``url`` (read by the caller with ``as_sent``, which also gave its origin)
    with the middleware's own decision, and say why in words."""
    verdict = explain(outcome, rules, url, user_agent, extra_user_agents, required)
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
    forbidden_for = decision.forbidden_for if extra_user_agents and not verdict.allowed else None
    refused = ", ".join(f"{p.label}={p.value}" for p in verdict.refused) or None
    usage = describe_usage(verdict.usage)
    return Verdict(url, decision.allowed, rule, group, usage, forbidden_for, refused, required_by)


def describe_usage(preferences: tuple[Preference, ...]) -> tuple[str, ...]:
    """Usage preferences grouped by the rule that stated them, with its line."""
    by_rule: dict[tuple[str, int], list[str]] = {}
    for preference in preferences:
        stated = by_rule.setdefault((preference.rule, preference.line), [])
        stated.append(f"{preference.label}={preference.value}")
    return tuple(
        f"{', '.join(stated)} ({rule}, line {line})" for (rule, line), stated in by_rule.items()
    )


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


def describe_licenses(rules: RobotsTxt | None) -> list[str]:
    """One line per ``License:`` of the file (RSL 1.0), for the robots.txt block."""
    return [] if rules is None else [f"  license   {license}" for license in rules.licenses]


def describe_user_agent(
    user_agent: str, rules: RobotsTxt | None = None, extra_user_agents: Sequence[str] = ()
) -> str:
    """The user agent and its product token; a warning when no group can ever name it;
    with ``rules``, the ``Content-Signal`` values of the group that applies to it. The
    same for each extra user agent obeyed (``also obeys``)."""
    lines: list[str] = []
    for heading, agent in [("user agent", user_agent)] + [
        ("also obeys", extra) for extra in extra_user_agents
    ]:
        lines.append(f"{heading}  {agent} (product token: {crawler_token(agent)})")
        problem = token_problem(agent)
        if problem is not None:
            lines.append(f"  warning   {problem}")
        signals = {} if rules is None else rules.content_signals(agent)
        if signals:
            stated = ", ".join(f"{key}={value}" for key, value in signals.items())
            lines.append(f"  signals   {stated} (Content-Signal of its group)")
    return "\n".join(lines)


def exit_status(verdicts: list[Verdict]) -> int:
    """0 when every URL would be fetched, 1 when any is disallowed (or refused)."""
    return 0 if all(verdict.fetched for verdict in verdicts) else 1


def _without_repeats(urls: list[str]) -> list[str]:
    chain: list[str] = []
    for url in urls:
        if not chain or chain[-1] != url:
            chain.append(url)
    return chain
