"""Compare RobotsTxt with other robots.txt parsers, each used the way its users use it.

Usage::

    python benchmarks/bench_parser.py --corpus ../shared/corpus/robots
    python benchmarks/bench_parser.py --corpus ../shared/corpus/rpbench

A corpus is either a directory of robots.txt files named by host, or a directory with
``robots/HOST`` and ``links/HOST`` (one real URL per line) as in rpbench. Without links
a host is asked about a fixed set of typical paths.

Every contender gets the same bytes, URLs and crawler in one run, and three numbers are
compared: (a) parse + first decision per file (what a crawler pays per new site), (b)
every later decision on an already parsed file, and the memory held by the parsed
objects of the whole corpus (tracemalloc), per file.

Contenders: ``rep9309`` is the package as installed (its compiled parts where they were
built); where they were, ``rep9309-py`` measures the pure-Python fallback in the same
run. ``protego`` is used exactly as Scrapy's default ``ProtegoRobotParser`` uses it.
The optional ones (``pip install -e ".[bench]"``) are skipped with a note when missing:
``fast-robotstxt`` (Python bindings to Google's C++ library, which keeps no parsed
object and parses the text again on every call), ``robotspy`` and the standard
library's ``urllib.robotparser`` (as Scrapy's ``PythonRobotParser`` uses it).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
import urllib.robotparser
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protego import Protego

# This checkout's package, not an installed one (an editable install of another
# checkout would otherwise be measured).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules import core

#: What Scrapy sends; parsers that reduce a User-Agent header to its token get it whole.
USER_AGENT = "Scrapy/2.19 (+https://scrapy.org)"
#: The same crawler's product token, for the parsers that want only that (Google's
#: library and robotspy match a group only when given the bare token).
PRODUCT_TOKEN = "Scrapy"
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
#: Targets: (a) at least as fast as Google's C++ library; (b) 10x Protego compiled,
#: and the pure-Python fallback 3x Protego on both (a) and (b).
TARGET_VS_GOOGLE = 1.0
TARGET_LATER_VS_PROTEGO = 10.0
TARGET_PYTHON_VS_PROTEGO = 3.0


@dataclass(frozen=True)
class Site:
    host: str
    body: bytes
    urls: tuple[str, ...]


Parse = Callable[[bytes], Any]
Allowed = Callable[[Any, str], bool]


@dataclass(frozen=True)
class Contender:
    name: str
    parse: Parse
    allowed: Allowed
    #: What the memory figure is, when it is not a parsed object.
    memory_note: str = ""


@dataclass(frozen=True)
class Result:
    first: float  # seconds, whole corpus
    later: float  # seconds, whole corpus
    memory: int  # bytes, whole corpus


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


# --- the contenders ---------------------------------------------------------------------


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


def urllib_parse(body: bytes) -> Any:
    # Exactly what scrapy.robotstxt.PythonRobotParser does.
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(body.decode("utf-8", errors="ignore").splitlines())
    return parser


def urllib_allowed(parsed: Any, url: str) -> bool:
    return parsed.can_fetch(USER_AGENT, url)


def optional_contenders() -> tuple[list[Contender], list[str]]:
    """The contenders whose packages are installed, and a note for each one that is not."""
    found: list[Contender] = []
    missing: list[str] = []
    try:
        from robotstxt import RobotsMatcher
    except ImportError:
        missing.append("fast-robotstxt (Google's C++ library)")
    else:
        matcher = RobotsMatcher()  # one for the whole crawl: it keeps no parsed rules

        def google_parse(body: bytes) -> Any:
            # Its API takes text (encoded back to UTF-8 on each call); it parses nothing
            # now, and the whole text again on every decision.
            return body.decode("utf-8", errors="ignore")

        def google_allowed(parsed: Any, url: str) -> bool:
            return matcher.is_allowed(parsed, PRODUCT_TOKEN, url)

        note = "the text it parses again on every call"
        found.append(Contender("google-c++", google_parse, google_allowed, note))
    try:
        from robots import RobotsParser
    except ImportError:
        missing.append("robotspy")
    else:

        def robotspy_parse(body: bytes) -> Any:
            return RobotsParser.from_string(body.decode("utf-8", errors="ignore"))

        def robotspy_allowed(parsed: Any, url: str) -> bool:
            return parsed.can_fetch(PRODUCT_TOKEN, url)

        found.append(Contender("robotspy", robotspy_parse, robotspy_allowed))
    found.append(Contender("urllib", urllib_parse, urllib_allowed))
    return found, missing


# --- measuring ------------------------------------------------------------------------


def time_site(site: Site, contender: Contender) -> tuple[float, float]:
    """Seconds for (a) parse + first decision and (b) every later decision of one site."""
    parse, allowed = contender.parse, contender.allowed
    start = CLOCK()
    rules = parse(site.body)
    allowed(rules, site.urls[0])
    first_done = CLOCK()
    for url in site.urls[1:]:
        allowed(rules, url)
    return first_done - start, CLOCK() - first_done


def measure(
    sites: Sequence[Site], contenders: Sequence[Contender], repeat: int
) -> dict[str, tuple[float, float]]:
    """Total (a) and (b) seconds per contender, each site's best of ``repeat`` runs.

    Contenders take turns on each site, so a busy machine slows them alike, and the
    best run of each site filters out the moments when it was busiest.
    """
    totals = {contender.name: (0.0, 0.0) for contender in contenders}
    gc.collect()
    gc.disable()  # as timeit does: a collection would charge whoever triggers it
    try:
        for site in sites:
            for contender in contenders:
                runs = [time_site(site, contender) for _ in range(repeat)]
                first, later = totals[contender.name]
                totals[contender.name] = (
                    first + min(run[0] for run in runs),
                    later + min(run[1] for run in runs),
                )
    finally:
        gc.enable()
    return totals


def retained_bytes(sites: Sequence[Site], contender: Contender) -> int:
    """Bytes still allocated by the parsed objects (after one decision each)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = []
    for site in sites:
        rules = contender.parse(site.body)
        contender.allowed(rules, site.urls[0])
        kept.append(rules)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return after - before


# --- reporting ------------------------------------------------------------------------


def ratio_line(label: str, reference: Result, result: Result) -> str:
    """How many times faster ``result`` is than ``reference``, and its share of the memory."""
    line = (
        f"{label}: (a) parse+first decision {reference.first / result.first:.1f}x, "
        f"(b) later decisions {reference.later / result.later:.1f}x"
    )
    if reference.memory > 0:
        line += f"; memory {result.memory / reference.memory:.2f}x"
    return line


def verdict(ratio: float, target: float) -> str:
    return "target met" if ratio >= target else "NOT met"


def print_targets(results: dict[str, Result]) -> None:
    """One line per target: the ratio measured, the target and whether it is met."""
    ours, protego = results["rep9309"], results["protego"]
    google = results.get("google-c++")
    if google is None:
        print("target (a) rep9309 >= 1.0x google-c++: not measured (fast-robotstxt missing)")
    else:
        ratio = google.first / ours.first
        print(
            f"target (a) parse+first decision, rep9309 >= {TARGET_VS_GOOGLE:.1f}x google-c++: "
            f"{ratio:.2f}x  {verdict(ratio, TARGET_VS_GOOGLE)}"
        )
    ratio = protego.later / ours.later
    print(
        f"target (b) later decisions, rep9309 >= {TARGET_LATER_VS_PROTEGO:.0f}x protego: "
        f"{ratio:.2f}x  {verdict(ratio, TARGET_LATER_VS_PROTEGO)}"
    )
    python = results.get("rep9309-py")
    if python is None:
        return
    for label, ratio in (
        ("(a) parse+first decision", protego.first / python.first),
        ("(b) later decisions", protego.later / python.later),
    ):
        print(
            f"target {label}, rep9309-py >= {TARGET_PYTHON_VS_PROTEGO:.0f}x protego: "
            f"{ratio:.2f}x  {verdict(ratio, TARGET_PYTHON_VS_PROTEGO)}"
        )


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

    contenders = [
        Contender("rep9309", ours_parse, ours_allowed),
        Contender("protego", protego_parse, protego_allowed),
    ]
    if core.ACTIVE is not core.PYTHON:
        contenders.append(Contender("rep9309-py", python_parse, ours_allowed))
    optional, missing = optional_contenders()
    contenders += optional
    for name in missing:
        print(f"skipped: {name} is not installed (pip install -e '.[bench]')")

    times = measure(sites, contenders, options.repeat)
    results: dict[str, Result] = {}
    for contender in contenders:
        first, later = times[contender.name]
        results[contender.name] = result = Result(first, later, retained_bytes(sites, contender))
        note = f" ({contender.memory_note})" if contender.memory_note else ""
        print(
            f"{contender.name:10} (a) parse+first decision: {first * 1e6 / len(sites):8.1f} "
            f"us/file   (b) later decisions: {later * 1e6 / max(later_count, 1):6.2f} "
            f"us/decision   memory: {result.memory / len(sites) / 1024:6.1f} KiB/file{note}"
        )
    protego = results["protego"]
    for name, result in results.items():
        if name != "protego":
            print(ratio_line(f"{name} vs protego", protego, result))
    google = results.get("google-c++")
    if google is not None:
        for name in ("rep9309", "rep9309-py"):
            if name in results:
                print(ratio_line(f"{name} vs google-c++", google, results[name]))
    print_targets(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
