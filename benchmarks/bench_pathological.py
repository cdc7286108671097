"""Worst cases for the matcher: many wildcard-heavy rules against a long URL.

Usage::

    python benchmarks/bench_pathological.py

The RFC 9309 security considerations ask for matching that cannot be driven into
super-linear time. A backtracking regular expression built from ``/*a*a*a*a*a*a*a*a*a*a*b$``
takes exponential time on ``/aaaa...a``; this package's matcher places each ``*``-piece
left-most (``str.find``, or Knuth-Morris-Pratt in the compiled matcher) and so stays
linear in the URL for every rule. Targets, for one decision over 1,000 such rules and a
2 KB URL (the first decision also compiles the rules): under 1 ms with the compiled
parts, under 5 ms with the pure-Python fallback. Both are measured where the compiled
parts were built.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

# This checkout's package, not an installed one (an editable install of another
# checkout would otherwise be measured).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scrapy_rep9309 import RobotsTxt
from scrapy_rep9309.rules import core

TARGET_SECONDS = {"compiled": 0.001, "python": 0.005}


def pathological_robots_txt(rules: int) -> bytes:
    """``rules`` rules of the ``/*a*a*...*a*b$`` family (10 to 16 ``*a``), allow and disallow."""
    lines = [b"User-agent: *"]
    for index in range(rules):
        key = b"Allow" if index % 2 else b"Disallow"
        lines.append(key + b": /" + b"*a" * (10 + index % 7) + b"*b$")
    return b"\n".join(lines) + b"\n"


def case(name: str, rules: RobotsTxt, url: str, repeat: int, target: float) -> float:
    """Best time of one decision, printed with the answer."""
    best = float("inf")
    allowed = True
    for _ in range(repeat):
        start = time.perf_counter()
        allowed = rules.allowed(url, "AnyBot")
        best = min(best, time.perf_counter() - start)
    verdict = "ok" if best < target else "TOO SLOW"
    print(f"{name:52} {best * 1e3:7.3f} ms  allowed={allowed}  [{verdict}]")
    return best


def worst_decision(body: bytes, url_length: int, repeat: int, target: float) -> float:
    """Parse ``body`` with the active implementation and time each case; the worst time."""
    start = time.perf_counter()
    rules = RobotsTxt.parse(body)
    elapsed = time.perf_counter() - start
    print(f"parse ({len(body)} bytes): {elapsed * 1e3:.3f} ms")
    origin = "https://example.com/"
    filler = url_length - len(origin)
    urls = {
        "'a' * 2 KB + 'b' (every rule runs all its pieces)": origin + "a" * (filler - 1) + "b",
        "'b' * 2 KB (no 'a': each first find scans it all)": origin + "b" * filler,
        "'ba' * 1 KB + 'b'": origin + "ba" * (filler // 2 - 1) + "b",
        "'a' * 2 KB (fails at the anchored end)": origin + "a" * filler,
        "'a' * 2 KB in the query + 'b'": origin + "?" + "a" * (filler - 2) + "b",
    }
    # The first decision also compiles the rules: time it apart from the others.
    first_url = next(iter(urls.values()))
    start = time.perf_counter()
    rules.allowed(first_url, "AnyBot")
    first = time.perf_counter() - start
    verdict = "ok" if first < target else "TOO SLOW"
    name = "first decision (also compiles the rules)"
    print(f"{name:52} {first * 1e3:7.3f} ms  [{verdict}]")
    return max(first, *(case(name, rules, url, repeat, target) for name, url in urls.items()))


def main(argv: Sequence[str] | None = None) -> int:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--rules", type=int, default=1000)
    arguments.add_argument("--url-length", type=int, default=2048)
    arguments.add_argument("--repeat", type=int, default=5)
    options = arguments.parse_args(argv)

    body = pathological_robots_txt(options.rules)
    print(f"{options.rules} rules, URLs of {options.url_length} characters")
    implementations = [core.ACTIVE] + [core.PYTHON] * (core.ACTIVE is not core.PYTHON)
    all_met = True
    for implementation in implementations:
        target = TARGET_SECONDS[implementation.name]
        print(f"--- {implementation.name}")
        active, core.ACTIVE = core.ACTIVE, implementation
        try:
            worst = worst_decision(body, options.url_length, options.repeat, target)
        finally:
            core.ACTIVE = active
        met = worst < target
        all_met &= met
        print(
            f"worst decision ({implementation.name}): {worst * 1e3:.3f} ms "
            f"(target < {target * 1e3:.0f} ms)  {'target met' if met else 'NOT met'}"
        )
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
