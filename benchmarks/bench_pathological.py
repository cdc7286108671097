"""Worst cases for the matcher: many wildcard-heavy rules against a long URL.

Usage::

    python benchmarks/bench_pathological.py

The RFC 9309 security considerations ask for matching that cannot be driven into
super-linear time. A backtracking regular expression built from ``/*a*a*a*a*a*a*a*a*a*a*b$``
takes exponential time on ``/aaaa...a``; this package's matcher places each ``*``-piece
left-most (``str.find``, or Knuth-Morris-Pratt in the compiled matcher) and so stays
linear in the URL for every rule. The target is one decision over 1,000 such rules and
a 2 KB URL in under 5 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from scrapy_rep9309 import RobotsTxt

TARGET_SECONDS = 0.005


def pathological_robots_txt(rules: int) -> bytes:
    """``rules`` rules of the ``/*a*a*...*a*b$`` family (10 to 16 ``*a``), allow and disallow."""
    lines = [b"User-agent: *"]
    for index in range(rules):
        key = b"Allow" if index % 2 else b"Disallow"
        lines.append(key + b": /" + b"*a" * (10 + index % 7) + b"*b$")
    return b"\n".join(lines) + b"\n"


def case(name: str, rules: RobotsTxt, url: str, repeat: int) -> float:
    """Best time of one decision, printed with the answer."""
    best = float("inf")
    allowed = True
    for _ in range(repeat):
        start = time.perf_counter()
        allowed = rules.allowed(url, "AnyBot")
        best = min(best, time.perf_counter() - start)
    verdict = "ok" if best < TARGET_SECONDS else "TOO SLOW"
    print(f"{name:52} {best * 1e3:7.3f} ms  allowed={allowed}  [{verdict}]")
    return best


def main(argv: Sequence[str] | None = None) -> int:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--rules", type=int, default=1000)
    arguments.add_argument("--url-length", type=int, default=2048)
    arguments.add_argument("--repeat", type=int, default=5)
    options = arguments.parse_args(argv)

    body = pathological_robots_txt(options.rules)
    start = time.perf_counter()
    rules = RobotsTxt.parse(body)
    elapsed = time.perf_counter() - start
    print(f"parse {options.rules} rules ({len(body)} bytes): {elapsed * 1e3:.3f} ms")
    origin = "https://example.com/"
    filler = options.url_length - len(origin)
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
    verdict = "ok" if first < TARGET_SECONDS else "TOO SLOW"
    name = "first decision (also compiles the rules)"
    print(f"{name:52} {first * 1e3:7.3f} ms  [{verdict}]")
    worst = max(first, *(case(name, rules, url, options.repeat) for name, url in urls.items()))
    print(f"worst decision: {worst * 1e3:.3f} ms (target < {TARGET_SECONDS * 1e3:.0f} ms)")
    return 0 if worst < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
