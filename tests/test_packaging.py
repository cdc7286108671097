"""The release metadata agrees with itself: version, changelog, wheel matrix, classifiers.

``.ci/package`` builds and installs the archives; these checks catch a release prepared
by hand with one of the places that name the version or the Python versions forgotten.
"""

from __future__ import annotations

import configparser
import re
import sys

import pytest

import scrapy_rep9309
from tests._commands import REPO_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg", encoding="utf-8")
    return config


def _metadata() -> configparser.SectionProxy:
    return _setup_cfg()["metadata"]


def test_package_version_is_the_metadata_version() -> None:
    assert scrapy_rep9309.__version__ == _metadata()["version"]


def test_changelog_has_an_unreleased_section_and_the_current_version() -> None:
    headings = re.findall(r"^## (\S+)", (REPO_ROOT / "CHANGELOG.md").read_text("utf-8"), re.M)
    assert headings[0] == "Unreleased"
    assert _metadata()["version"] in headings


def test_license_file_is_the_declared_license() -> None:
    assert _metadata()["license"] == "BSD-3-Clause"
    text = (REPO_ROOT / "LICENSE").read_text("utf-8")
    assert text.startswith("BSD 3-Clause License")
    assert "the scrapy-rep9309 authors" in text


@pytest.mark.skipif(tomllib is None, reason="tomllib is Python >= 3.11")
def test_wheels_are_built_for_every_python_version_classified() -> None:
    classified = set(
        re.findall(r"Programming Language :: Python :: (3\.\d+)", _metadata()["classifiers"])
    )
    with open(REPO_ROOT / "pyproject.toml", "rb") as file:
        builds = tomllib.load(file)["tool"]["cibuildwheel"]["build"]
    assert {f"3.{pattern[3:-2]}" for pattern in builds} == classified
    oldest = min(classified, key=lambda version: int(version.split(".")[1]))
    assert _setup_cfg()["options"]["python_requires"] == f">={oldest}"
