"""A real ``redis-server`` for the tests: on 127.0.0.1, a free port, persistence off.

Tests that need it skip, saying why, when ``redis-server`` (or the ``redis`` client)
is missing; with ``REP9309_REQUIRE_REDIS=1`` (as in CI) they fail instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any

import pytest

REQUIRE_VARIABLE = "REP9309_REQUIRE_REDIS"


def require_redis() -> str:
    """The path of ``redis-server``; skips (or fails, when required) without it."""
    missing = None
    executable = shutil.which("redis-server")
    if executable is None:
        missing = "redis-server is not on PATH (Debian/Ubuntu: apt-get install redis-server)"
    else:
        try:
            import redis  # noqa: F401
        except ImportError:
            missing = 'the redis client is not installed (pip install -e ".[test]")'
    if missing is not None:
        if os.environ.get(REQUIRE_VARIABLE) == "1":
            pytest.fail(f"{REQUIRE_VARIABLE}=1 but {missing}")
        pytest.skip(missing)
    assert executable is not None
    return executable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process that a test may stop and start again (same port)."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.port = free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="rep9309-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.executable,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                if self.client().ping():
                    return
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.02)

    def stop(self) -> None:
        """Stop it the hard way: everything it kept is lost (no persistence)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def client(self) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def commands(self) -> int:
        """Commands the server has executed so far (scripts' own calls included)."""
        stats = self.client().info("commandstats")
        return sum(int(entry["calls"]) for entry in stats.values())

    def close(self) -> None:
        self.stop()
        self._dir.cleanup()


def running_server() -> RedisServer:
    server = RedisServer(require_redis())
    server.start()
    return server


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
