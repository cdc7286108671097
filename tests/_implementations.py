"""Run parser tests with every implementation of the hot parts (see scrapy_rep9309.rules.core)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from scrapy_rep9309.rules import core

#: The pure-Python classes, and the compiled ones where the extension is built.
IMPLEMENTATIONS = [core.PYTHON] + ([core.COMPILED] if core.COMPILED is not None else [])


@contextmanager
def active(implementation: core.Implementation) -> Iterator[None]:
    """Make new RobotsTxt objects use ``implementation`` for the duration of the block."""
    previous = core.ACTIVE
    core.ACTIVE = implementation
    try:
        yield
    finally:
        core.ACTIVE = previous


def for_each_implementation(test: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``test`` once per implementation on the same arguments (hypothesis examples too).

    A decorator rather than a parametrized fixture: pytest-twisted cannot run hypothesis
    tests that use function-scoped fixtures.
    """

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        for implementation in IMPLEMENTATIONS:
            with active(implementation):
                test(*args, **kwargs)

    return run
