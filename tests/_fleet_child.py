"""One process of a scrapy-redis fleet, for the fleet tests and ``benchmarks/bench_fleet.py``.

Usage: ``python -m tests._fleet_child JOB.json`` (from the repository root). The job
gives the settings and optional spider arguments (e.g. ``redis_batch_size``). The
spider is a scrapy-redis ``RedisSpider`` reading start URLs from ``fleet:start_urls``,
with scrapy-redis's scheduler and duplicate filter when the job's settings name them.
When the spider closes, the process writes what happened to each request it decided
(``ok`` for a response, the errback's message otherwise), its ``robotstxt/*`` stats and
timings to the job's ``out`` file (JSON).

With ``"die_after_take": true`` in the job, the process kills itself (SIGKILL) in the
moment after it took held requests from Redis and before it hands them to its engine.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider
from twisted.python.failure import Failure

START_URLS_KEY = "fleet:start_urls"


class FleetSpider(RedisSpider):
    """Reads one plain URL per Redis list entry; records every outcome."""

    name = "fleet"
    redis_key = START_URLS_KEY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: list[tuple[str, str]] = []
        self.first_response = 0.0
        self.last_response = 0.0

    def make_request_from_data(self, data: bytes) -> Request:
        return Request(data.decode(), callback=self.parse, errback=self.on_error)

    def parse(self, response: Response) -> None:
        now = time.time()
        self.first_response = self.first_response or now
        self.last_response = now
        self.outcomes.append((response.url, "ok"))

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        self.outcomes.append((request.url, str(failure.value)))


def die_after_take() -> None:
    """SIGKILL this process when the driver is about to hand requests it took from the
    store to the engine (the test hook of ``"die_after_take"``)."""
    from scrapy_rep9309.integration.driver import OriginDriver

    hand_over = OriginDriver._flush

    def _flush(self: OriginDriver) -> None:
        if self._taken_from_store:
            os.kill(os.getpid(), signal.SIGKILL)
        hand_over(self)

    OriginDriver._flush = _flush  # type: ignore[method-assign]


def main(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    if job.get("die_after_take"):
        die_after_take()
    process = CrawlerProcess(job["settings"])
    crawler = process.create_crawler(FleetSpider)
    started = {"engine": 0.0, "cpu": 0.0}

    def engine_started() -> None:
        started["engine"] = time.time()
        started["cpu"] = time.process_time()

    def spider_closed(spider: FleetSpider, reason: str) -> None:
        stats = crawler.stats.get_stats() if crawler.stats is not None else {}
        report = {
            "outcomes": spider.outcomes,
            "stats": {k: v for k, v in stats.items() if k.startswith("robotstxt/")},
            "reason": reason,
            "engine_started": started["engine"],
            "first_response": spider.first_response,
            "last_response": spider.last_response,
            "cpu": time.process_time() - started["cpu"],
        }
        Path(job["out"]).write_text(json.dumps(report))

    crawler.signals.connect(engine_started, signal=signals.engine_started)
    crawler.signals.connect(spider_closed, signal=signals.spider_closed)
    process.crawl(crawler, **job.get("spider_kwargs", {}))
    process.start()


if __name__ == "__main__":
    main(sys.argv[1])
