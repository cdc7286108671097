"""What the documentation says: stats, settings and request meta keys, read from its sections.

The documentation is README.md and the pages under docs/ it links to; a ``## title``
section is looked up in all of them (titles are unique). Tests compare what these
sections list with what the middleware really emits and reads, so the documentation
cannot silently fall behind the code.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
PACKAGE = REPO_ROOT / "scrapy_rep9309"

_CODE = re.compile(r"`([^`]+)`")
_PLACEHOLDER = re.compile(r"<([^>]+)>")
#: What a ``<...>`` placeholder in a documented stat name stands for (by its name; any
#: other placeholder is a class path).
_PLACEHOLDERS = {"status": r"[1-5]\d\d", "label": r"[a-z][a-z0-9-]*", "value": r"[yn]"}
_CLASS_PATH = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"


def documentation_pages() -> list[Path]:
    """README.md, then every page under docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


@cache
def section(title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## `` heading, in whichever
    documentation page has it."""
    pattern = re.compile(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", re.M | re.S)
    found = [
        match.group(1)
        for page in documentation_pages()
        if (match := pattern.search(page.read_text(encoding="utf-8")))
    ]
    assert len(found) == 1, f"{len(found)} documentation pages have a '## {title}' section"
    return found[0]


def code_spans(title: str) -> set[str]:
    """Every `code` span of a section."""
    return set(_CODE.findall(section(title)))


def first_column(title: str) -> list[str]:
    """The `code` of the first cell of each table row of a section."""
    names = []
    for line in section(title).splitlines():
        if line.startswith("| `"):
            match = _CODE.search(line)
            assert match is not None
            names.append(match.group(1))
    return names


def documented_stats() -> dict[str, re.Pattern[str]]:
    """The Stats table's names, each with the pattern of the stat keys it covers."""
    patterns = {}
    for name in first_column("Stats"):
        pieces = _PLACEHOLDER.split(name)
        regex = "".join(
            re.escape(piece) if index % 2 == 0 else _PLACEHOLDERS.get(piece, _CLASS_PATH)
            for index, piece in enumerate(pieces)
        )
        patterns[name] = re.compile(regex)
    return patterns


def undocumented_stats(names: set[str]) -> set[str]:
    """The ``robotstxt/`` stat keys among ``names`` that no Stats row covers."""
    patterns = documented_stats().values()
    return {
        name
        for name in names
        if name.startswith("robotstxt/")
        and not any(pattern.fullmatch(name) for pattern in patterns)
    }


def stat_names_in_source() -> set[str]:
    """Every ``robotstxt/...`` stat key the package can emit, as written in its source.

    An f-string passed to a stats method (``inc_value``...) gives its constant prefix
    followed by ``<...>`` (``robotstxt/x/<...>``).
    """
    names = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stat_arguments = {
            id(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_value")
            and node.args
        }
        in_fstrings = {
            id(part)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr) and id(node) in stat_arguments:
                head = node.values[0]
                if isinstance(head, ast.Constant) and str(head.value).startswith("robotstxt/"):
                    names.add(f"{head.value}<...>")
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in in_fstrings
                and re.fullmatch(r"robotstxt/[\w/]+", node.value)
            ):
                names.add(node.value)
    return names


def setting_names_read(module: Path) -> set[str]:
    """Setting names a module reads: string arguments of ``_read``/``get*`` calls."""
    names = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called != "_read" and not called.startswith("get"):
            continue
        for argument in node.args:
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                if re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", argument.value):
                    names.add(argument.value)
    return names


def meta_keys_used(module: Path) -> set[str]:
    """Meta keys a module reads or sets.

    Found in ``x.meta.get(KEY)``, ``x.meta[KEY]``, ``meta[KEY] = ...`` and the
    keys of dict literals assigned to ``*_META`` names; ``KEY`` is a string or
    a module-level constant holding one.
    """
    tree = ast.parse(module.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }

    def key_of(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    def is_meta(node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "meta") or (
            isinstance(node, ast.Name) and node.id == "meta"
        )

    keys: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_meta(node.value):
            keys.add(key_of(node.slice))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and is_meta(node.func.value)
            and node.args
        ):
            keys.add(key_of(node.args[0]))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.endswith("_META") for t in targets):
                keys.update(key_of(key) for key in node.value.keys if key is not None)
        elif isinstance(node, ast.Dict):
            # {**SOME_META, KEY: value}: a meta dict built from another one
            if any(key is None for key in node.keys):
                keys.update(key_of(key) for key in node.keys if key is not None)
    keys.discard(None)
    return {key for key in keys if key is not None}
