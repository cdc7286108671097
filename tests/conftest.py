"""Fixtures for the end-to-end tests: local origins on the crawl's reactor."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

# Test modules import their helpers as ``tests.<module>``: make that work under a
# bare ``pytest`` too, not only ``python -m pytest`` (which puts the cwd on sys.path).
_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from tests.servers import ServerPool  # noqa: E402


@pytest.fixture
def servers() -> Iterator[ServerPool]:
    """A pool of scripted origins, all closed when the test ends."""
    pool = ServerPool()
    try:
        yield pool
    finally:
        pytest_twisted.blockon(pool.close())
