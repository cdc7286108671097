"""The benchmark's web servers, run in their own process (not sharing the crawler's CPU).

Usage (bench_crawl.py starts it)::

    python benchmarks/_bench_sites.py --origins 300 --slow-delay 5

Prints one JSON line ``{"origins": [base URL, ...], "slow": base URL}`` once every
origin listens, then serves until its standard input is closed. Each origin is
its own loopback address (127.0.0.2, 127.0.0.3, ...), so Scrapy gives each one
its own download slot, as with distinct hosts on the internet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from twisted.internet import reactor, stdio
from twisted.internet.protocol import Protocol
from twisted.python.failure import Failure

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.servers import ServerPool, rules

ROBOTS_TXT = """\
User-agent: *
Disallow: /private
Disallow: /cgi-bin/
Allow: /private/press
Crawl-delay: 0

Sitemap: /sitemap.xml
"""


class _StopWhenStdinCloses(Protocol):
    """The parent closes our stdin (or dies): stop serving."""

    def connectionLost(self, reason: Failure | None = None) -> None:
        reactor.stop()  # type: ignore[attr-defined]


def serve(origins: int, slow_delay: float) -> None:
    pool = ServerPool()
    bases = [pool.add(rules(ROBOTS_TXT)).base for _ in range(origins)]
    slow = pool.add(rules(ROBOTS_TXT, delay=slow_delay)).base
    print(json.dumps({"origins": bases, "slow": slow}), flush=True)
    stdio.StandardIO(_StopWhenStdinCloses())
    reactor.run()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=300)
    parser.add_argument("--slow-delay", type=float, default=5.0)
    args = parser.parse_args()
    serve(args.origins, args.slow_delay)


if __name__ == "__main__":
    main()
