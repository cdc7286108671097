"""Fixtures for the end-to-end tests: local origins on the crawl's reactor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_twisted

from scrapy_rep9309.rules import core
from tests._redis import RedisServer, running_server
from tests.servers import ServerPool


@pytest.fixture
def servers() -> Iterator[ServerPool]:
    """A pool of scripted origins, all closed when the test ends."""
    pool = ServerPool()
    try:
        yield pool
    finally:
        pytest_twisted.blockon(pool.close())


@pytest.fixture(
    params=[core.PYTHON, core.COMPILED],
    ids=["python", "compiled"],
)
def each_implementation(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> core.Implementation:
    """Run a parser test once with the pure-Python classes and once with the compiled ones."""
    implementation = request.param
    if implementation is None:
        pytest.skip("scrapy_rep9309.rules._speedups is not built (no C compiler at install time)")
    monkeypatch.setattr(core, "ACTIVE", implementation)
    return implementation


@pytest.fixture(scope="session")
def _shared_redis_server() -> Iterator[RedisServer]:
    server = running_server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def redis_server(_shared_redis_server: RedisServer) -> RedisServer:
    """A real redis-server on 127.0.0.1 (persistence off), emptied for this test.

    Skips with the reason when redis-server is missing (fails with REP9309_REQUIRE_REDIS=1).
    """
    _shared_redis_server.client().flushall()
    return _shared_redis_server


@pytest.fixture
def own_redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test's own, which it may stop and start again."""
    server = running_server()
    try:
        yield server
    finally:
        server.close()
