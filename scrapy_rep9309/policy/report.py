"""Per-origin counters for the end-of-crawl summary and ``origin_reports()``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_rep9309.policy.record import PENDING

# The stats shown in the spider-close summary line, in this order.
SUMMARY_STATS = (
    "request_count",
    "forbidden",
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


@dataclass
class OriginReport:
    """What happened to one origin during the crawl (see README "Stats").

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


def summary_line(reports: Iterable[OriginReport], stats: Mapping[str, Any]) -> str:
    """One line: origins by outcome, then the robotstxt/* counts."""
    outcomes = Counter(report.outcome for report in reports)
    total = sum(outcomes.values())
    by_outcome = ", ".join(f"{outcomes[name]} {name}" for name in OUTCOME_ORDER)
    counts = ", ".join(f"{name} {stats.get(f'robotstxt/{name}', 0)}" for name in SUMMARY_STATS)
    return f"robots.txt: {total} origins ({by_outcome}); {counts}"
