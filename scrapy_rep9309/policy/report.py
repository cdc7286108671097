"""Per-origin counters for the end-of-crawl summary and ``origin_reports()``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
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
#: Every ``label=value`` an origin's report can list, in the order it lists them.
USAGE_ORDER = tuple(f"{label}={value}" for label in VOCABULARY for value in (DISALLOW, ALLOW))


@dataclass(slots=True)
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

    def add_usage(self, preferences: Mapping[str, str]) -> None:
        """Note the ``{label: value}`` preferences of one request or response."""
        seen = {f"{label}={value}" for label, value in preferences.items()}
        if not seen.issubset(self.usage):
            self.usage = tuple(item for item in USAGE_ORDER if item in seen or item in self.usage)


@dataclass(slots=True)
class ReportTotals:
    """What the summary needs of origins whose reports are no longer kept one by one.

    A crawl of many origins forgets the least recently used ones (REP9309_CACHE_SIZE);
    their reports are added here, so that memory stays bounded and the summary still
    counts them (an origin forgotten and met again is fetched again, and counted again).
    """

    origins: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    stating: int = 0

    def add(self, report: OriginReport) -> None:
        self.origins += 1
        self.outcomes[report.outcome] += 1
        self.stating += bool(report.usage)


def summary_line(
    reports: Iterable[OriginReport],
    stats: Mapping[str, Any],
    folded: ReportTotals | None = None,
) -> str:
    """One line: origins by outcome and how many state usage preferences (the reports
    kept and the ``folded`` totals of those forgotten), then the robotstxt/* counts."""
    totals = ReportTotals() if folded is None else replace(folded, outcomes=+folded.outcomes)
    for report in reports:
        totals.add(report)
    by_outcome = ", ".join(f"{totals.outcomes[name]} {name}" for name in OUTCOME_ORDER)
    counts = ", ".join(f"{name} {stats.get(f'robotstxt/{name}', 0)}" for name in SUMMARY_STATS)
    return (
        f"robots.txt: {totals.origins} origins ({by_outcome}), {totals.stating} stating usage "
        f"preferences; {counts}"
    )
