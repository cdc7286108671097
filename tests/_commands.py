"""Run the project's command-line tools the way a user does: in a subprocess, time-bounded.

Tests whose servers live on the test's reactor must not block it while the
tool runs, so the subprocess is waited for in a thread (``run_async``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_PROJECT = REPO_ROOT / "sample_project"
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def tool_environment() -> dict[str, str]:
    """The test's environment without proxies (the servers are on loopback)."""
    return {
        name: value
        for name, value in os.environ.items()
        if name.lower() not in _PROXY_VARIABLES and name != "SCRAPY_SETTINGS_MODULE"
    }


def run(
    args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` and capture its output; fails the test past ``timeout``."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=tool_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


async def run_async(
    args: Sequence[str], *, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``run`` in a thread, so servers on this process's reactor keep answering."""
    return await maybe_deferred_to_future(deferToThread(run, args, cwd=cwd, timeout=timeout))


def check(*args: str) -> list[str]:
    """Arguments of ``python -m scrapy_rep9309 check ARGS``."""
    return ["-m", "scrapy_rep9309", "check", *args]


def scrapy(*args: str) -> list[str]:
    """Arguments of ``scrapy ARGS`` (as ``python -m scrapy``, the same entry point)."""
    return ["-m", "scrapy", *args]


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Non-empty stderr lines."""
    return [line for line in result.stderr.splitlines() if line.strip()]
