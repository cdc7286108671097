"""The robots.txt state a paused crawl leaves under ``JOBDIR``, and reads back on resume.

Scrapy keeps the scheduler's queue and the duplicate filter under ``JOBDIR``; the
requests this plugin holds are in neither, so they are saved here, with the origin
records (rules, status, fetch and expiry times, backoff), in one file of a versioned
format: ``JOBDIR/rep9309/state.json``. It is written atomically (a kill during the
write leaves the previous file whole), and a missing, corrupt or other-version file is
ignored with one WARNING: the crawl then starts from an empty state.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_rep9309.policy.record import OriginRecord, is_finite_number

logger = logging.getLogger(__name__)

STATE_DIRECTORY = "rep9309"
STATE_FILE = "state.json"
FORMAT = "scrapy-rep9309 JOBDIR state"
VERSION = 1
#: Written by Scrapy's SpiderState extension when a run with JOBDIR closes: its presence
#: means "this is a resume" (requests.seen and requests.queue exist from the first run on).
_SCRAPY_CLOSED_JOB_FILE = "spider.state"


@dataclass(frozen=True, slots=True)
class SavedRequest:
    """A held request as saved: its origin key, the defer time it had left, the request
    serialised as Scrapy's disk queues do (``Request.to_dict``, pickled)."""

    origin: str
    remaining: float
    data: bytes


@dataclass
class JobState:
    records: dict[str, OriginRecord] = field(default_factory=dict)
    held: list[SavedRequest] = field(default_factory=list)


def state_path(jobdir: str | os.PathLike[str]) -> Path:
    return Path(jobdir) / STATE_DIRECTORY / STATE_FILE


def discard_state(jobdir: str | os.PathLike[str]) -> None:
    """Remove the state saved at an earlier pause (OSError if it cannot be): when this
    pause's cannot be written, a resume must not take up that older one, whose copies
    this run may have seen superseded and whose held requests it may have ended."""
    state_path(jobdir).unlink(missing_ok=True)


def write_state(jobdir: str | os.PathLike[str], state: JobState, now: float) -> Path:
    """Write ``state`` atomically: a temporary file in the same directory, then rename."""
    path = state_path(jobdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "saved_at": now,
        "records": {key: record.to_dict() for key, record in state.records.items()},
        "held": [
            {
                "origin": saved.origin,
                "remaining": saved.remaining,
                "request": base64.b64encode(saved.data).decode("ascii"),
            }
            for saved in state.held
        ],
    }
    descriptor, temporary = tempfile.mkstemp(prefix=".state-", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(document, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def read_state(jobdir: str | os.PathLike[str]) -> JobState:
    """The state saved under ``jobdir``; an empty one (with a WARNING) when it is
    missing on a resume, unreadable, corrupt or of another version."""
    path = state_path(jobdir)
    if not path.exists():
        if (Path(jobdir) / _SCRAPY_CLOSED_JOB_FILE).exists():
            logger.warning(
                "Resuming the job in %s without robots.txt state (%s is missing): every "
                "origin's robots.txt is fetched again, and no held request is restored",
                jobdir,
                path,
            )
        return JobState()
    try:
        return _parse(json.loads(path.read_bytes()))
    # RecursionError: JSON nested deeper than the parser goes.
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        logger.warning(
            "Ignored the robots.txt state in %s (%s: %s): the crawl starts without it, "
            "fetching every robots.txt again; held requests saved there are not restored",
            path,
            type(exc).__name__,
            exc,
        )
        return JobState()


def _parse(document: Any) -> JobState:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a scrapy-rep9309 state file")
    if document.get("version") != VERSION:
        raise ValueError(f"format version {document.get('version')!r}, expected {VERSION}")
    records = {
        str(key): OriginRecord.from_dict(dict(value))
        for key, value in dict(document["records"]).items()
    }
    held = [
        SavedRequest(
            str(entry["origin"]),
            _defer_time_left(entry["remaining"]),
            base64.b64decode(entry["request"], validate=True),
        )
        for entry in list(document["held"])
    ]
    return JobState(records, held)


def _defer_time_left(value: Any) -> float:
    """Seconds a saved request had left: a finite number, at least 0 (NaN or infinity
    would hold it, and keep the spider open, forever)."""
    if not is_finite_number(value) or value < 0:
        raise ValueError(f"a held request's time left is {value!r}")
    return float(value)
