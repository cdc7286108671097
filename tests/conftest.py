"""Fixtures for the end-to-end tests: local origins on the crawl's reactor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_twisted

from tests.servers import ServerPool


@pytest.fixture
def servers() -> Iterator[ServerPool]:
    """A pool of scripted origins, all closed when the test ends."""
    pool = ServerPool()
    try:
        yield pool
    finally:
        pytest_twisted.blockon(pool.close())
