"""The package's layers, checked: the pure ones import neither Scrapy nor Twisted.

``rules`` (the RFC 9309 parser and matcher), ``policy`` (the crawl policy and the
state machine), ``storage`` (the store interface and the stores that need no
third-party client) and ``tools`` (``python -m scrapy_rep9309 check``) must work
where Scrapy and Twisted are not installed: each is imported in a fresh interpreter
in which importing either raises ImportError. Lower layers never import higher ones.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests._commands import REPO_ROOT, tool_environment

PACKAGE = REPO_ROOT / "scrapy_rep9309"
PURE_LAYERS = ("rules", "policy", "storage", "tools")
#: layer -> the layers it may import (besides itself).
ALLOWED_IMPORTS = {
    "rules": set(),
    "policy": {"rules"},
    "storage": {"rules", "policy"},
    "tools": {"rules", "policy"},
    # `scrapy robots` prints the same report as the tools.
    "integration": {"rules", "policy", "storage", "tools"},
}
#: Modules of a pure layer that need an optional third-party client (not Scrapy).
OPTIONAL_CLIENT_MODULES: set[str] = {"scrapy_rep9309.storage.redisstore"}

_BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("scrapy", "twisted"):
            raise ImportError(f"{name} is blocked by the layering test")
        return None
sys.meta_path.insert(0, Block())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
assert not any(m.split(".")[0] in ("scrapy", "twisted") for m in sys.modules)
"""


def _modules(layer: str) -> list[str]:
    names = []
    for path in sorted((PACKAGE / layer).glob("*.py")):
        name = f"scrapy_rep9309.{layer}.{path.stem}".removesuffix(".__init__")
        if name not in OPTIONAL_CLIENT_MODULES:
            names.append(name)
    return names


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layer_imports_without_scrapy_or_twisted(layer: str) -> None:
    _assert_imports_without_scrapy_or_twisted(["scrapy_rep9309", *_modules(layer)])


@pytest.mark.parametrize("module", sorted(OPTIONAL_CLIENT_MODULES))
def test_optional_client_module_imports_without_scrapy_or_twisted(module: str) -> None:
    """It may need its client (``redis``), never Scrapy or Twisted."""
    client = {"scrapy_rep9309.storage.redisstore": "redis"}[module]
    pytest.importorskip(client)
    _assert_imports_without_scrapy_or_twisted(["scrapy_rep9309", module])


def _assert_imports_without_scrapy_or_twisted(modules: list[str]) -> None:
    """Import ``modules`` in a fresh interpreter where importing Scrapy or Twisted raises."""
    result = subprocess.run(
        [sys.executable, "-c", _BLOCKER, *modules],
        cwd=REPO_ROOT,
        env=tool_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def _imported_layers(path: Path) -> set[str]:
    layers = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "scrapy_rep9309" and len(parts) > 1 and parts[1] in ALLOWED_IMPORTS:
                layers.add(parts[1])
    return layers


@pytest.mark.parametrize("layer", sorted(ALLOWED_IMPORTS))
def test_layer_imports_only_lower_layers(layer: str) -> None:
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        wrong = _imported_layers(path) - ALLOWED_IMPORTS[layer] - {layer}
        assert not wrong, f"{path.relative_to(REPO_ROOT)} imports {sorted(wrong)}"


def test_every_module_belongs_to_a_layer() -> None:
    loose = sorted(
        path.name
        for path in PACKAGE.glob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )
    assert loose == [], f"modules outside the layers: {loose}"


#: Modules whose import would let a pure layer read the clock.
_CLOCKS = {"time", "datetime"}


@pytest.mark.parametrize("layer", ["rules", "policy"])
def test_the_pure_logic_reads_no_clock(layer: str) -> None:
    """The time is passed in (``now``), so unit tests drive it with a fake clock; found by
    a reviewer: ``policy/fetchresult.py`` resolved a ``Retry-After`` date against the real
    clock while the state machine ran on the time it was given."""
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module.split(".")[0]}
            else:
                continue
            clocks = names & _CLOCKS
            assert not clocks, f"{path.relative_to(REPO_ROOT)} imports {sorted(clocks)}"


@pytest.mark.parametrize("layer", sorted(ALLOWED_IMPORTS))
def test_the_layer_table_names_every_module(layer: str) -> None:
    """docs/how-it-works.md's table of layers names each layer's every module."""
    table = (REPO_ROOT / "docs" / "how-it-works.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith(f"| `{layer}/`"))
    modules = {path.name for path in (PACKAGE / layer).glob("*.py")} - {"__init__.py"}
    missing = sorted(name for name in modules if f"`{name}`" not in row)
    assert not missing, f"docs/how-it-works.md's {layer}/ row does not name {missing}"
