"""Compare RobotsTxt with Protego used the way Scrapy's ProtegoRobotParser uses it.

Usage::

    python benchmarks/bench_parser.py --corpus ../shared/corpus/robots
    python benchmarks/bench_parser.py --corpus ../shared/corpus/rpbench

A corpus is either a directory of robots.txt files named by host, or a directory with
``robots/HOST`` and ``links/HOST`` (one real URL per line) as in rpbench. Without links
a host is asked about a fixed set of typical paths.

Both parsers get the same bytes, URLs and User-Agent in one run, and three numbers are
compared: (a) parse + first decision per file (what a crawler pays per new site), (b)
every later decision on an already parsed file, and the memory held by the parsed
objects of the whole corpus (tracemalloc), per file.

``rep9309`` is the package as installed (its compiled parts where they were built);
where they were, ``rep9309-py`` measures the pure-Python fallback in the same run.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protego import Protego

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules import core

USER_AGENT = "Scrapy/2.19 (+https://scrapy.org)"
CLOCK = time.perf_counter
TYPICAL_PATHS = (
    "/",
    "/search?q=robots",
    "/about/",
    "/admin/login.php",
    "/products/item-42.html?ref=home",
    "/wp-admin/admin-ajax.php",
    "/cgi-bin/test",
    "/images/logo.png",
)


@dataclass(frozen=True)
class Site:
    host: str
    body: bytes
    urls: tuple[str, ...]


def load_corpus(directory: Path, max_urls: int) -> list[Site]:
    """Read every robots.txt of ``directory`` with the URLs to ask about."""
    robots_dir = directory / "robots"
    links_dir = directory / "links"
    if not robots_dir.is_dir():
        robots_dir, links_dir = directory, directory / "\0none"
    sites = []
    for path in sorted(robots_dir.iterdir()):
        if not path.is_file():
            continue
        links_file = links_dir / path.name
        if links_file.is_file():
            lines = links_file.read_text("utf-8", "replace").split()
            urls = tuple(lines[:max_urls])
        else:
            urls = tuple(f"https://{path.name}{p}" for p in TYPICAL_PATHS)
        if urls:
            sites.append(Site(path.name, path.read_bytes(), urls))
    return sites


def ours_parse(body: bytes) -> Any:
    return RobotsTxt.parse(body)


def python_parse(body: bytes) -> Any:
    """``RobotsTxt.parse`` built from the pure-Python classes (see scrapy_rep9309.rules.core)."""
    active, core.ACTIVE = core.ACTIVE, core.PYTHON
    try:
        return RobotsTxt.parse(body)
    finally:
        core.ACTIVE = active


def ours_allowed(parsed: Any, url: str) -> bool:
    return parsed.allowed(url, USER_AGENT)


def protego_parse(body: bytes) -> Any:
    # Exactly what scrapy.robotstxt.ProtegoRobotParser does.
    return Protego.parse(body.decode("utf-8", errors="ignore"))


def protego_allowed(parsed: Any, url: str) -> bool:
    return parsed.can_fetch(url, USER_AGENT)


Parse = Callable[[bytes], Any]
Allowed = Callable[[Any, str], bool]


def time_site(site: Site, parse: Parse, allowed: Allowed) -> tuple[float, float]:
    """Seconds for (a) parse + first decision and (b) every later decision of one site."""
    start = CLOCK()
    rules = parse(site.body)
    allowed(rules, site.urls[0])
    first_done = CLOCK()
    for url in site.urls[1:]:
        allowed(rules, url)
    return first_done - start, CLOCK() - first_done


def measure(
    sites: Sequence[Site], contenders: dict[str, tuple[Parse, Allowed]], repeat: int
) -> dict[str, tuple[float, float]]:
    """Total (a) and (b) seconds per contender, each site's best of ``repeat`` runs.

    Contenders take turns on each site, so a busy machine slows them alike, and the
    best run of each site filters out the moments when it was busiest.
    """
    totals = dict.fromkeys(contenders, (0.0, 0.0))
    gc.collect()
    gc.disable()  # as timeit does: a collection would charge whoever triggers it
    try:
        for site in sites:
            for name, (parse, allowed) in contenders.items():
                runs = [time_site(site, parse, allowed) for _ in range(repeat)]
                first, later = totals[name]
                totals[name] = (
                    first + min(run[0] for run in runs),
                    later + min(run[1] for run in runs),
                )
    finally:
        gc.enable()
    return totals


def retained_bytes(sites: Sequence[Site], parse: Parse, allowed: Allowed) -> int:
    """Bytes still allocated by the parsed objects (after one decision each)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = []
    for site in sites:
        rules = parse(site.body)
        allowed(rules, site.urls[0])
        kept.append(rules)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return after - before


def main(argv: Sequence[str] | None = None) -> int:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--corpus", type=Path, required=True, help="corpus directory")
    arguments.add_argument("--repeat", type=int, default=5, help="runs per site (best kept)")
    arguments.add_argument("--max-urls", type=int, default=200, help="URLs per host at most")
    options = arguments.parse_args(argv)

    sites = load_corpus(options.corpus, options.max_urls)
    later_count = sum(len(site.urls) - 1 for site in sites)
    print(f"corpus {options.corpus}: {len(sites)} files, {later_count} later decisions")

    print(f"rep9309 parser implementation: {core.ACTIVE.name}")
    contenders: dict[str, tuple[Parse, Allowed]] = {
        "protego": (protego_parse, protego_allowed),
        "rep9309": (ours_parse, ours_allowed),
    }
    if core.ACTIVE is not core.PYTHON:
        contenders["rep9309-py"] = (python_parse, ours_allowed)
    times = measure(sites, contenders, options.repeat)
    results: dict[str, tuple[float, float, int]] = {}
    for name, (parse, allowed) in contenders.items():
        first, later = times[name]
        memory = retained_bytes(sites, parse, allowed)
        results[name] = (first, later, memory)
        print(
            f"{name:10} (a) parse+first decision: {first * 1e6 / len(sites):8.1f} us/file   "
            f"(b) later decisions: {later * 1e6 / max(later_count, 1):6.2f} us/decision   "
            f"memory: {memory / len(sites) / 1024:6.1f} KiB/file"
        )
    protego = results["protego"]
    for name, ours in results.items():
        if name == "protego":
            continue
        label = "speed-up vs Protego" if name == "rep9309" else f"{name} vs Protego"
        print(
            f"{label}: (a) parse+first decision {protego[0] / ours[0]:.1f}x, "
            f"(b) later decisions {protego[1] / ours[1]:.1f}x; "
            f"memory {ours[2] / protego[2]:.2f}x Protego's"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
