"""Counting held and decided requests in the crawl stats and per origin, together.

One ``count()`` bumps the crawl stat and the same counter of the origin's report, so
the two always agree (``deferred == released + expired + closed + saved`` in both).
``content_usage()`` does the same for the usage preferences of downloaded responses.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from scrapy_rep9309.policy.report import OriginReport

if TYPE_CHECKING:
    from collections.abc import Mapping

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
    "usage_refused": "robotstxt/usage_refused",
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

    def content_usage(self, origin: Origin, preferences: Mapping[str, str]) -> None:
        """Count a downloaded response's usage preferences, label by label, and note them
        in its origin's report."""
        for label, value in preferences.items():
            self.stats.inc_value(f"robotstxt/content_usage/{label}/{value}")
        self.report(origin).add_usage(preferences)

    def report(self, origin: Origin) -> OriginReport:
        report = self._reports.get(origin)
        if report is None:
            report = self._reports[origin] = OriginReport(str(origin))
        return report

    def nothing_allowed(self) -> bool:
        """Whether robots.txt refused requests (forbidden or usage-refused) and let none
        through, in the whole crawl so far."""
        reports = self._reports.values()
        return not any(r.allowed for r in reports) and any(
            r.forbidden or r.usage_refused for r in reports
        )

    def reports(self) -> list[OriginReport]:
        """Copies of every origin's report, sorted by origin."""
        return sorted(
            (dataclasses.replace(report) for report in self._reports.values()),
            key=lambda report: report.origin,
        )
