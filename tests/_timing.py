"""Timing parse work without depending on a fast or quiet machine.

Late in a run the suite's heap is large, and one full collection of it, or a busy CI host,
can stop a millisecond parse for half a second. So the collector is off while timing, each
measure is the quickest of several runs, and what is asserted is how the time grows with
the input (linear: 8x for 8x the input; quadratic: 64x), not how long it takes here.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: Between linear (8) and quadratic (64) growth for 8 times the input.
GROWTH_LIMIT = 24.0
#: Below this, timer resolution and fixed costs decide the ratio, not the input.
NEGLIGIBLE = 0.002


def quickest(run: Callable[[], object], repeats: int = 5) -> float:
    """The quickest of ``repeats`` runs, in seconds, with the garbage collector off."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - started)
        return best
    finally:
        if collecting:
            gc.enable()


def grows_linearly(run_with: Callable[[int], Callable[[], object]], size: int) -> bool:
    """Whether work at ``size`` costs at most GROWTH_LIMIT times the work at ``size // 8``."""
    small = quickest(run_with(size // 8))
    large = quickest(run_with(size))
    return large < NEGLIGIBLE or large < GROWTH_LIMIT * small
