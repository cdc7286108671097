"""The per-origin reports and their totals when a request's allowed count is taken back."""

from __future__ import annotations

from scrapy_rep9309.integration.accounting import Accounting
from scrapy_rep9309.policy.origin import Origin
from tests._stats import CountingStats

ORIGIN = Origin.from_url("https://example.com/")


def test_an_allowed_count_taken_back_comes_off_its_origins_report() -> None:
    accounting = Accounting(CountingStats(), 10, known=lambda origin: True)  # type: ignore[arg-type]
    accounting.report(ORIGIN).allowed += 1

    accounting.take_back_allowed(ORIGIN)

    assert accounting.report(ORIGIN).allowed == 0
    assert accounting.folded.allowed == 0


def test_an_allowed_count_of_a_forgotten_origin_comes_off_the_totals() -> None:
    """Decided, then its origin forgotten (evicted) and met again, then decided again at
    the last look: no report may count -1 allowed requests."""
    accounting = Accounting(CountingStats(), 10, known=lambda origin: True)  # type: ignore[arg-type]
    accounting.report(ORIGIN).allowed += 1
    accounting.forget(ORIGIN)
    accounting.count(ORIGIN, "forbidden")  # met again: a new report

    accounting.take_back_allowed(ORIGIN)

    assert accounting.report(ORIGIN).allowed == 0
    assert accounting.folded.allowed == 0
    assert accounting.report(ORIGIN).forbidden == 1
