"""The start-up line saying which robots.txt parser implementation the crawl decides with.

The package installs and works without its compiled parts (``rules/_speedups.c``), so a
missing C compiler at install time goes unnoticed unless something says so: the crawl
still obeys robots.txt exactly, only each decision costs several times more CPU.
"""

from __future__ import annotations

import logging

from scrapy_rep9309.rules import core

logger = logging.getLogger(__name__)

NOT_BUILT_MESSAGE = (
    "scrapy-rep9309: compiled parser parts not built (no C compiler at install time?); "
    "using the pure-Python parser, about 5x slower per decision. Reinstall with a C "
    "compiler and the Python headers, or from a wheel, to get them."
)
DISABLED_MESSAGE = (
    "scrapy-rep9309: using the pure-Python parser, as %s=1 asks (about 5x slower per "
    "decision than the compiled parts, which are installed)"
)
COMPILED_MESSAGE = "scrapy-rep9309: using the compiled parser parts"


def log_parser_implementation(log: logging.Logger = logger) -> str:
    """Log one line about the parser implementation in use; return its name.

    WARNING when the compiled parts were not built, INFO when they are installed but
    turned off by ``SCRAPY_REP9309_PURE_PYTHON=1``, DEBUG when they are in use.
    """
    active = core.ACTIVE
    if active is core.PYTHON and core.COMPILED is None:
        log.warning(NOT_BUILT_MESSAGE)
    elif active is core.PYTHON:
        log.info(DISABLED_MESSAGE, core.PURE_PYTHON_VARIABLE)
    else:
        log.debug(COMPILED_MESSAGE)
    return active.name
