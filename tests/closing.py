"""Setups for what happens as the spider closes, shared by the accounting and usage tests.

Kept apart from ``tests/crawl.py``, which ``benchmarks/bench_crawl.py`` imports for its
spider: what a crawl process imports moves when the garbage collector runs in it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_rep9309.integration.timers import Timers
from tests.servers import Reply, ScriptedOrigin, ServerPool, rules

if TYPE_CHECKING:
    import pytest


def stretch_the_turn_before_the_engine(
    monkeypatch: pytest.MonkeyPatch, seconds: float = 1.0
) -> None:
    """Released requests and expired copies reach the engine a turn of the event loop
    after they leave the driver (its outbox); stretch that turn to ``seconds``."""
    schedule = Timers.schedule

    def stretched(self: Timers, key: Any, delay: float, *args: Any) -> None:
        outbox = isinstance(key, tuple) and key[0] == "outbox"
        schedule(self, key, seconds if outbox else delay, *args)

    monkeypatch.setattr(Timers, "schedule", stretched)


def expiring_as_the_spider_closes(
    servers: ServerPool, monkeypatch: pytest.MonkeyPatch
) -> tuple[ScriptedOrigin, Request, dict[str, Any]]:
    """An origin whose robots.txt answers 503, a page of another that takes 2 s and is not
    decided (so the engine is still closing when the turn before it comes), and settings
    under which a request held for the first expires (0.3 s) inside that turn, stretched
    (``stretch_the_turn_before_the_engine``), while the spider closes (0.6 s)."""
    stretch_the_turn_before_the_engine(monkeypatch)
    failing = servers.add(Reply(503, "busy"))
    slow = servers.add(rules("User-agent: *\n"))
    slow.script("/slow", [Reply(200, "slow", delay=2.0)])
    unheld = Request(slow.url("/slow"), meta={"dont_obey_robotstxt": True})
    settings: dict[str, Any] = {
        "CLOSESPIDER_TIMEOUT": 0.6,
        "REP9309_DEFER_TIMEOUT": 0.3,
        "REP9309_RETRY_DELAY": 30,
        "REP9309_RETRY_MAX_DELAY": 30,
        "DOWNLOAD_TIMEOUT": 10,
    }
    return failing, unheld, settings
