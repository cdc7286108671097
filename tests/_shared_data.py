"""Locate the read-only data in ``../shared`` that some tests compare against.

The data lives next to the repository, not inside it, so every test that uses it
must skip with a visible reason when a fresh clone does not have it.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Beside the repository; REP9309_SHARED_DIR points elsewhere (e.g. for a copy of the tests).
SHARED_ROOT = Path(os.environ.get("REP9309_SHARED_DIR") or REPO_ROOT.parent / "shared")
CONFORMANCE_FILE = SHARED_ROOT / "conformance" / "google_robots_test_cases.jsonl"
CORPUS_ROBOTS_DIR = SHARED_ROOT / "corpus" / "robots"
RPBENCH_ROBOTS_DIR = SHARED_ROOT / "corpus" / "rpbench" / "robots"
RPBENCH_LINKS_DIR = SHARED_ROOT / "corpus" / "rpbench" / "links"


def absent_reason(path: Path) -> str:
    """The skip message shown when a shared data path is missing."""
    return f"shared test data not found at {path} (it lives outside the repository)"


def require(path: Path) -> Path:
    """Return ``path``, or skip the calling test when it does not exist."""
    if not path.exists():
        pytest.skip(absent_reason(path))
    return path


def load_conformance_records() -> list[dict[str, Any]]:
    """All records of Google's robots_test.cc captured as data; [] when absent."""
    if not CONFORMANCE_FILE.exists():
        return []
    with CONFORMANCE_FILE.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def field_bytes(record: dict[str, Any], name: str) -> bytes:
    """The exact bytes of a record field, always taken from its ``_b64`` twin."""
    encoded = record.get(f"{name}_b64")
    return base64.b64decode(encoded) if encoded else b""


def field_text(record: dict[str, Any], name: str) -> str:
    """A ``_b64`` field decoded as UTF-8 (user agents and URLs are valid UTF-8)."""
    return field_bytes(record, name).decode("utf-8")
