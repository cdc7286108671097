"""The documentation a user meets: README.md's first screen and the docs/ pages it links.

README.md is for users first (install, enable, try, test); reference material lives in
docs/. These tests keep the first screen short and every link between pages working.
"""

from __future__ import annotations

import re

import pytest

from tests._readme import DOCS, README, documentation_pages

FIRST_SCREEN = 40
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings (lower case, punctuation dropped)."""
    headings = re.findall(r"^#{1,6} (.+)$", _FENCE.sub("", text), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_first_screen_says_how_to_install_enable_try_and_test() -> None:
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    assert "pip install scrapy-rep9309" in first
    assert 'ADDONS = {"scrapy_rep9309.Addon": 0}' in first
    assert "pip install -e . && cd sample_project && scrapy crawl demo" in first
    assert 'pip install -e ".[test]" && python -m pytest -q' in first


def test_the_readme_links_every_docs_page() -> None:
    text = README.read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        assert f"(docs/{page.name})" in text, f"README.md does not link docs/{page.name}"


@pytest.mark.parametrize("page", documentation_pages(), ids=lambda page: page.name)
def test_every_local_link_reaches_a_page_and_heading(page) -> None:
    for target in _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name} links {target}: no such file"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text(encoding="utf-8")), (
                f"{page.name} links {target}: no such heading"
            )
