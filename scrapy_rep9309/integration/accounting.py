"""Counting held and decided requests in the crawl stats and per origin, together.

One ``count()`` bumps the crawl stat and the same counter of the origin's report, so
the two always agree (``deferred == released + expired + closed + saved`` in both).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from scrapy_rep9309.policy.report import OriginReport

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from scrapy_rep9309.policy.origin import Origin

#: OriginReport counter -> the crawl stat counting the same requests.
STATS = {
    "forbidden": "robotstxt/forbidden",
    "deferred": "robotstxt/deferred",
    "released": "robotstxt/deferred/released",
    "expired": "robotstxt/deferred/expired",
    "closed": "robotstxt/deferred/closed",
    "saved": "robotstxt/deferred/saved",
}


class Accounting:
    """The crawl's ``robotstxt/*`` request counters and the per-origin reports."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self._reports: dict[Origin, OriginReport] = {}

    def count(self, origin: Origin, counter: str, amount: int = 1) -> None:
        self.stats.inc_value(STATS[counter], amount)
        report = self.report(origin)
        setattr(report, counter, getattr(report, counter) + amount)

    def report(self, origin: Origin) -> OriginReport:
        report = self._reports.get(origin)
        if report is None:
            report = self._reports[origin] = OriginReport(str(origin))
        return report

    def reports(self) -> list[OriginReport]:
        """Copies of every origin's report, sorted by origin."""
        return sorted(
            (dataclasses.replace(report) for report in self._reports.values()),
            key=lambda report: report.origin,
        )
