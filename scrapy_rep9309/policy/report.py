"""Per-origin counters for the end-of-crawl summary and ``origin_reports()``, and the
WARNING lines for origins (or a whole crawl) whose every request robots.txt refused."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_rep9309.policy.record import PENDING
from scrapy_rep9309.rules.usage import ALLOW, DISALLOW, VOCABULARY

# The stats shown in the spider-close summary line, in this order.
SUMMARY_STATS = (
    "request_count",
    "forbidden",
    "usage_refused",
    "unavailable",
    "unreachable",
    "deferred",
    "deferred/released",
    "deferred/expired",
    "deferred/closed",
    "deferred/saved",
    "redirects",
    "truncated",
    "refreshed",
    "evicted",
)
OUTCOME_ORDER = ("available", "unavailable", "unreachable", PENDING)
#: Origins the all-forbidden WARNING names at most; it counts the others.
ALL_FORBIDDEN_NAMED = 10
#: Every ``label=value`` an origin's report can list, in the order it lists them.
USAGE_ORDER = tuple(f"{label}={value}" for label in VOCABULARY for value in (DISALLOW, ALLOW))


@dataclass
class OriginReport:
    """What happened to one origin during the crawl (see docs/reference.md, "Stats").

    Once the crawl is over, ``deferred == released + expired + closed + saved``.
    """

    origin: str
    outcome: str = PENDING
    status: int | None = None
    forbidden: int = 0
    deferred: int = 0
    released: int = 0
    expired: int = 0
    closed: int = 0  # still waiting when the spider closed: errback with IgnoreRequest
    saved: int = 0  # still waiting when the spider closed: saved under JOBDIR for the resume
    usage_refused: int = 0  # allowed, but a REP9309_REQUIRE_USAGE label is refused: not sent
    #: The usage preferences its requests had, as ``label=value`` (``USAGE_ORDER``): of
    #: downloaded responses (robots.txt and ``Content-Usage`` header combined) and of
    #: requests refused for them. Empty: the origin stated no preference.
    usage: tuple[str, ...] = ()
    #: Requests its robots.txt let through (downloaded, or answered from the copy).
    allowed: int = 0
    #: What refused its first forbidden or usage-refused request: the rule as written, its
    #: line and the group that applied, e.g. ``"Disallow: / (line 2, User-agent: *)"``.
    first_refusal: str | None = None

    @property
    def all_forbidden(self) -> str | None:
        """``first_refusal`` when robots.txt refused every request it decided (at least
        one, none allowed): the origin looks like an empty site otherwise. Else None."""
        if self.allowed or not (self.forbidden or self.usage_refused):
            return None
        return self.first_refusal or "unknown rule"

    def add_usage(self, preferences: Mapping[str, str]) -> None:
        """Note the ``{label: value}`` preferences of one request or response."""
        seen = {f"{label}={value}" for label, value in preferences.items()}
        if not seen.issubset(self.usage):
            self.usage = tuple(item for item in USAGE_ORDER if item in seen or item in self.usage)


def summary_line(reports: Iterable[OriginReport], stats: Mapping[str, Any]) -> str:
    """One line: origins by outcome and how many state usage preferences, then the
    robotstxt/* counts."""
    reports = list(reports)
    outcomes = Counter(report.outcome for report in reports)
    by_outcome = ", ".join(f"{outcomes[name]} {name}" for name in OUTCOME_ORDER)
    stating = sum(1 for report in reports if report.usage)
    counts = ", ".join(f"{name} {stats.get(f'robotstxt/{name}', 0)}" for name in SUMMARY_STATS)
    return (
        f"robots.txt: {len(reports)} origins ({by_outcome}), {stating} stating usage "
        f"preferences; {counts}"
    )


def all_forbidden_warnings(
    reports: Iterable[OriginReport], named: int = ALL_FORBIDDEN_NAMED
) -> list[str]:
    """The WARNING lines for the spider's close: one when robots.txt refused every request
    of the crawl, one naming the origins whose every request it refused (``named`` at
    most, the most refused first, then how many more). Empty when nothing is to say."""
    reports = list(reports)
    blocked = sorted(
        (report for report in reports if report.all_forbidden is not None),
        key=lambda report: (-(report.forbidden + report.usage_refused), report.origin),
    )
    if not blocked:
        return []
    lines = []
    if not any(report.allowed for report in reports):
        refused = sum(report.forbidden + report.usage_refused for report in reports)
        lines.append(
            f"robots.txt let no request of this crawl through: {refused} requests forbidden "
            f"or usage-refused, none allowed; check ROBOTSTXT_USER_AGENT / USER_AGENT and the "
            f"origins below"
        )
    shown = "; ".join(
        f"{report.origin} ({report.forbidden + report.usage_refused} requests, "
        f"first by {report.all_forbidden})"
        for report in blocked[:named]
    )
    more = f"; and {len(blocked) - named} more origins" if len(blocked) > named else ""
    lines.append(
        f"robots.txt forbade every request of {len(blocked)} origin"
        f"{'' if len(blocked) == 1 else 's'}: {shown}{more}"
    )
    return lines
