"""Check an installed scrapy-rep9309 (not this source tree): its parser, and that it decides.

Run by cibuildwheel on every wheel (``--expect compiled``: a wheel whose extension failed
to build must not be published) and by ``.ci/package`` on the wheel and on an sdist
installed without a C compiler (``--expect python``, which also checks the start-up
WARNING saying so). Run as a script, so ``sys.path[0]`` is this directory and
``import scrapy_rep9309`` finds the installed package.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import subprocess
import sys
from pathlib import Path

SOURCE_TREE = Path(__file__).resolve().parent.parent

ROBOTS_TXT = b"""\
User-agent: mybot
Disallow: /private
Allow: /private/open
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: *
Disallow: /
Sitemap: https://example.org/sitemap.xml
"""
SITEMAPS = ["https://example.org/sitemap.xml"]
#: (url, user agent, allowed)
DECISIONS = [
    ("https://example.org/page", "MyBot/1.0", True),
    ("https://example.org/private/x", "MyBot/1.0", False),
    ("https://example.org/private/open/x", "mybot", True),
    ("https://example.org/file.pdf", "MyBot/1.0", False),
    ("https://example.org/file.pdf?v=1", "MyBot/1.0", True),
    ("https://example.org/st%C3%A4dte/x", "OtherBot", False),
    ("https://example.org/robots.txt", "OtherBot", True),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--expect", choices=["compiled", "python"], required=True)
    expected = parser.parse_args().expect

    import scrapy_rep9309
    from scrapy_rep9309 import RobotsTxt
    from scrapy_rep9309.rules import core

    location = Path(scrapy_rep9309.__file__).resolve()
    if SOURCE_TREE in location.parents:
        return fail(f"imported the source tree ({location}), not the installed package")
    if expected == "compiled":
        # Required, not optional: raises ImportError if the extension is missing.
        importlib.import_module("scrapy_rep9309.rules._speedups")
    elif core.COMPILED is not None:
        return fail("the compiled parts are installed; expected the pure-Python fallback")
    if core.ACTIVE.name != expected:
        return fail(f"parser implementation {core.ACTIVE.name!r}, expected {expected!r}")

    for implementation in filter(None, (core.COMPILED, core.PYTHON)):
        core.ACTIVE = implementation
        rules = RobotsTxt.parse(ROBOTS_TXT)
        for url, agent, allowed in DECISIONS:
            if rules.allowed(url, agent) is not allowed:
                return fail(f"{implementation.name}: allowed({url!r}, {agent!r}) != {allowed}")
        if rules.crawl_delay("mybot") != 2.0 or rules.sitemaps != SITEMAPS:
            return fail(f"{implementation.name}: crawl delay or sitemaps wrong")

    if expected == "python":
        problem = check_start_up_warning()
        if problem:
            return fail(problem)

    check = subprocess.run(
        [sys.executable, "-m", "scrapy_rep9309", "check", "--help"], capture_output=True, text=True
    )
    if check.returncode != 0:
        return fail(f"python -m scrapy_rep9309 check --help failed:\n{check.stderr}")
    print(
        f"wheel smoke test passed: {expected} parser, {len(DECISIONS)} decisions, {location.parent}"
    )
    return 0


def check_start_up_warning() -> str | None:
    """The one WARNING a crawl logs at start-up without the compiled parts; None if right."""
    from scrapy_rep9309.integration.startup import log_parser_implementation

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log = logging.getLogger("wheel_smoke")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log_parser_implementation(log)
    lines = [(r.levelno, r.getMessage()) for r in records]
    if len(lines) != 1 or lines[0][0] != logging.WARNING or "not built" not in lines[0][1]:
        return f"start-up line without the compiled parts: {lines}"
    print(f"start-up line: WARNING {lines[0][1]}")
    return None


def fail(message: str) -> int:
    print(f"wheel smoke test FAILED: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
