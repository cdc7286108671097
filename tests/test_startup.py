"""The start-up line about the parser implementation: loud only when compiled parts are missing."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from scrapy_rep9309.integration.startup import log_parser_implementation
from scrapy_rep9309.rules import core

LOGGER = "scrapy_rep9309.integration.startup"


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def test_compiled_parts_missing_is_one_warning_with_the_cost(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(core, "COMPILED", None)
    monkeypatch.setattr(core, "ACTIVE", core.PYTHON)
    caplog.set_level(logging.DEBUG, logger=LOGGER)

    assert log_parser_implementation() == "python"

    ((level, message),) = _lines(caplog)
    assert level == logging.WARNING
    assert "compiled parser parts not built" in message
    assert "C compiler" in message and "5x slower" in message


def test_pure_python_chosen_by_the_environment_is_info(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(core, "COMPILED", core.Implementation("compiled", object, object))  # type: ignore[arg-type]
    monkeypatch.setattr(core, "ACTIVE", core.PYTHON)
    caplog.set_level(logging.DEBUG, logger=LOGGER)

    assert log_parser_implementation() == "python"

    ((level, message),) = _lines(caplog)
    assert level == logging.INFO
    assert core.PURE_PYTHON_VARIABLE in message


def test_compiled_parts_in_use_is_a_debug_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    compiled = core.Implementation("compiled", object, object)  # type: ignore[arg-type]
    monkeypatch.setattr(core, "COMPILED", compiled)
    monkeypatch.setattr(core, "ACTIVE", compiled)
    caplog.set_level(logging.DEBUG, logger=LOGGER)

    assert log_parser_implementation() == "compiled"

    assert [level for level, _ in _lines(caplog)] == [logging.DEBUG]


def test_the_installed_package_says_what_it_uses() -> None:
    """A fresh interpreter with the Python parser forced: INFO if compiled, WARNING if not."""
    code = (
        "import logging, sys\n"
        "logging.basicConfig(stream=sys.stdout, level=logging.DEBUG,\n"
        "                    format='%(levelname)s %(message)s')\n"
        "from scrapy_rep9309.integration.startup import log_parser_implementation\n"
        "print(log_parser_implementation())\n"
    )
    environment = {**os.environ, core.PURE_PYTHON_VARIABLE: "1"}
    output = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    expected_level = "WARNING" if core.COMPILED is None else "INFO"
    assert output[-1] == "python"
    assert [line.split()[0] for line in output[:-1]] == [expected_level]
