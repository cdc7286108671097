"""Per-origin counters for the end-of-crawl summary and ``origin_reports()``, and the
WARNING lines for origins (or a whole crawl) whose every request robots.txt refused."""

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
#: Origins the all-forbidden WARNING names at most; it counts the others.
ALL_FORBIDDEN_NAMED = 10
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
    #: Requests its robots.txt let through (downloaded, or answered from the copy), and
    #: those it allowed as the spider closed, which could not be downloaded any more.
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
    #: Requests let through, and refused (forbidden or usage-refused), in all.
    allowed: int = 0
    refused: int = 0
    #: Origins whose every decided request was refused (``OriginReport.all_forbidden``),
    #: and the ALL_FORBIDDEN_NAMED most refused of them, for the close WARNING.
    blocked: int = 0
    most_refused: list[OriginReport] = field(default_factory=list)

    def add(self, report: OriginReport, *, counts_only: bool = False) -> None:
        """Add ``report``: as an origin of its own, or (``counts_only``) its request counts
        only, for a report made after its origin was forgotten, which was counted then."""
        self.allowed += report.allowed
        self.refused += report.forbidden + report.usage_refused
        if counts_only:
            return
        self.origins += 1
        self.outcomes[report.outcome] += 1
        self.stating += bool(report.usage)
        if report.all_forbidden is not None:
            self.blocked += 1
            named = sorted([*self.most_refused, report], key=_most_refused_first)
            self.most_refused = named[:ALL_FORBIDDEN_NAMED]

    @property
    def nothing_allowed(self) -> bool:
        """Whether robots.txt refused requests and let none through."""
        return not self.allowed and bool(self.refused)


def crawl_totals(
    reports: Iterable[OriginReport],
    folded: ReportTotals | None,
    counts_only: Iterable[OriginReport] = (),
) -> ReportTotals:
    """The totals of the whole crawl: the ``folded`` ones of the origins forgotten (left
    as they are) plus the reports still kept, and the request counts of ``counts_only``
    (reports made after their origin was forgotten: ``ReportTotals.add``)."""
    totals = ReportTotals() if folded is None else replace(folded, outcomes=+folded.outcomes)
    for report in reports:
        totals.add(report)
    for report in counts_only:
        totals.add(report, counts_only=True)
    return totals


def requests_count(count: int) -> str:
    """``1 request``, ``3 requests``: a count of requests as log lines say it."""
    return f"{count} request" if count == 1 else f"{count} requests"


def _most_refused_first(report: OriginReport) -> tuple[int, str]:
    return -(report.forbidden + report.usage_refused), report.origin


def summary_line(
    reports: Iterable[OriginReport],
    stats: Mapping[str, Any],
    folded: ReportTotals | None = None,
    counts_only: Iterable[OriginReport] = (),
) -> str:
    """One line: origins by outcome and how many state usage preferences (the reports
    kept and the ``folded`` totals of those forgotten), then the robotstxt/* counts."""
    totals = crawl_totals(reports, folded, counts_only)
    by_outcome = ", ".join(f"{totals.outcomes[name]} {name}" for name in OUTCOME_ORDER)
    counts = ", ".join(f"{name} {stats.get(f'robotstxt/{name}', 0)}" for name in SUMMARY_STATS)
    return (
        f"robots.txt: {totals.origins} origins ({by_outcome}), {totals.stating} stating usage "
        f"preferences; {counts}"
    )


def all_forbidden_warnings(
    reports: Iterable[OriginReport],
    named: int = ALL_FORBIDDEN_NAMED,
    folded: ReportTotals | None = None,
    counts_only: Iterable[OriginReport] = (),
) -> list[str]:
    """The WARNING lines for the spider's close: one when robots.txt refused every request
    of the crawl, one naming the origins whose every request it refused (``named`` at
    most, the most refused first, then how many more). Empty when nothing is to say.
    ``folded``: the totals of the origins whose reports are no longer kept."""
    reports = list(reports)
    totals = crawl_totals(reports, folded, counts_only)
    count = totals.blocked
    if not count:
        return []
    lines = []
    if totals.nothing_allowed:
        lines.append(
            "robots.txt let no request of this crawl through: "
            f"{requests_count(totals.refused)} forbidden or usage-refused, none allowed; "
            "check ROBOTSTXT_USER_AGENT / USER_AGENT and the origins below"
        )
    blocked = [report for report in reports if report.all_forbidden is not None]
    earlier = [] if folded is None else folded.most_refused
    shown = sorted([*blocked, *earlier], key=_most_refused_first)[:named]
    listed = "; ".join(
        f"{report.origin} ({requests_count(report.forbidden + report.usage_refused)}, "
        f"first by {report.all_forbidden})"
        for report in shown
    )
    more = f"; and {count - len(shown)} more origins" if count > len(shown) else ""
    lines.append(
        f"robots.txt forbade every request of {count} origin"
        f"{'' if count == 1 else 's'}: {listed}{more}"
    )
    return lines
