"""One crawl in a process of its own, for the pause/resume tests: ``python -m
tests.jobdir_crawl CONFIG.json``.

The spider starts from ``start_urls`` and follows the links of home pages (``/``), as
real crawls discover URLs; no other page's links are followed. Each response and each
errback failure is appended, flushed, to ``results`` (JSON lines), so two runs of one job
can be added up; the crawl stats are
written to ``stats`` when the process ends. Ctrl-C (SIGINT) pauses it as it pauses any
Scrapy crawl.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from twisted.python.failure import Failure


class LinkSpider(Spider):
    name = "links"

    def __init__(self, *args: Any, start: list[str], results: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_list = start
        self.results_path = results

    async def start(self) -> Any:
        for url in self.start_list:
            yield Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response: Response) -> Any:
        self._record({"url": response.url, "status": response.status})
        if urlsplit(response.url).path != "/":
            return
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        self._record({"url": url, "error": str(failure.value)})

    def _record(self, entry: dict[str, Any]) -> None:
        with open(self.results_path, "a", encoding="utf-8") as file:
            file.write(json.dumps(entry) + "\n")
            file.flush()


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    process = CrawlerProcess(settings=config["settings"], install_root_handler=True)
    crawler = process.create_crawler(LinkSpider)
    process.crawl(crawler, start=config["start_urls"], results=config["results"])
    process.start()
    stats = {key: value for key, value in (crawler.stats.get_stats() or {}).items()}
    Path(config["stats"]).write_text(json.dumps(stats, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
