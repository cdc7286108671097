"""Counting held and decided requests in the crawl stats and per origin, together.

One ``count()`` bumps the crawl stat and the same counter of the origin's report, so
the two always agree (``deferred == released + expired + closed + saved`` in both).
``content_usage()`` does the same for the usage preferences of downloaded responses.

Reports are kept one by one for the origins in memory only: when the driver forgets an
origin (REP9309_CACHE_SIZE), its report is added to the totals (``forget``); reports of
origins the driver does not know (a response of an origin forgotten meanwhile) are
kept for REP9309_CACHE_SIZE origins at most, then added to the totals too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_rep9309.policy.record import PENDING
from scrapy_rep9309.policy.report import (
    OriginReport,
    ReportTotals,
    all_forbidden_warnings,
    crawl_totals,
    summary_line,
)
from scrapy_rep9309.storage.lru import LRUCache

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

    def __init__(
        self,
        stats: StatsCollector,
        capacity: int,
        known: Callable[[Origin], bool] | None = None,
    ) -> None:
        self.stats = stats
        #: Whether the driver keeps an origin: its report is then kept until ``forget``.
        self._known = known
        self._reports: dict[Origin, OriginReport] = {}
        #: Reports of origins the driver did not keep when they were made, least recently
        #: made first: folded past ``capacity`` unless the driver keeps the origin by then.
        self._unattached: LRUCache[Origin, OriginReport] = LRUCache(capacity, self._fold_unattached)
        #: The reports of the origins forgotten, added up.
        self.folded = ReportTotals()

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
            if self._known is None or not self._known(origin):
                self._unattached.put(origin, report)
        return report

    def take_back_allowed(self, origin: Origin) -> None:
        """A request counted allowed is decided again (the last look found a newer copy,
        or none): its count comes off where it went. Its origin may have been forgotten
        since (its report folded into the totals) and met again (a new report)."""
        report = self._reports.get(origin)
        if report is not None and report.allowed > 0:
            report.allowed -= 1
        else:
            self.folded.allowed -= 1

    def forget(self, origin: Origin) -> None:
        """The driver forgot ``origin``: its report goes into the totals."""
        report = self._reports.pop(origin, None)
        if report is not None:
            counts_only = _counts_only(report, made_unattached=origin in self._unattached)
            self.folded.add(report, counts_only=counts_only)
        self._unattached.delete(origin)

    def _fold_unattached(self, origin: Origin, report: OriginReport) -> None:
        if self._known is not None and self._known(origin):
            return  # kept until the driver forgets it
        if self._reports.get(origin) is report:
            del self._reports[origin]
            self.folded.add(report, counts_only=_counts_only(report, made_unattached=True))

    def _an_origin(self, origin: Origin, report: OriginReport) -> bool:
        """Whether ``report``, kept, counts as an origin of the crawl: unless the driver
        does not keep its origin (it was made unattached: ``_counts_only``)."""
        kept = self._known is None or self._known(origin)
        return not _counts_only(report, made_unattached=not kept)

    def _split(self) -> tuple[list[OriginReport], list[OriginReport]]:
        """The reports kept: those of origins, and those that add request counts only."""
        origins: list[OriginReport] = []
        counts_only: list[OriginReport] = []
        for origin, report in self._reports.items():
            (origins if self._an_origin(origin, report) else counts_only).append(report)
        return origins, counts_only

    def __len__(self) -> int:
        """How many reports are kept one by one."""
        return len(self._reports)

    def nothing_allowed(self) -> bool:
        """Whether robots.txt refused requests (forbidden or usage-refused) and let none
        through, in the whole crawl so far (forgotten origins included)."""
        origins, counts_only = self._split()
        return crawl_totals(origins, self.folded, counts_only).nothing_allowed

    def reports(self) -> list[OriginReport]:
        """Copies of the reports kept (the origins in memory), sorted by origin."""
        return sorted(
            (dataclasses.replace(report) for report in self._reports.values()),
            key=lambda report: report.origin,
        )

    def summary(self, stats: Mapping[str, Any]) -> str:
        """The close summary line: every origin of the crawl, kept or folded."""
        origins, counts_only = self._split()
        return summary_line(origins, stats, self.folded, counts_only)

    def all_forbidden_warnings(self) -> list[str]:
        """The close WARNINGs for origins whose every request was refused, kept or folded."""
        origins, counts_only = self._split()
        return all_forbidden_warnings(origins, folded=self.folded, counts_only=counts_only)


def _counts_only(report: OriginReport, *, made_unattached: bool) -> bool:
    """Whether ``report`` adds only its request counts to the crawl, not an origin: it
    was made while the driver did not keep its origin (a request decided, or a response
    counted, after the driver forgot it) and no fetch has decided the origin since. The
    origin was counted when forgotten, with its outcome; counted again, it would read
    "pending". Whether it was made so, each caller knows its own way: still in the
    unattached reports (``forget``), folded from them (``_fold_unattached``), or of an
    origin the driver does not keep while kept here (``_an_origin``)."""
    return made_unattached and report.outcome == PENDING
