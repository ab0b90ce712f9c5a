"""The contributors' map (docs/architecture.md) names every module, and its layers are the
ones import-linter enforces.

The first figure is the package tree: each module of ``src/llmcassette`` appears there by
name, in its folder (a folder's line stands for its ``__init__.py``; ``cli/`` and
``testing/`` are described as a whole). The second is
the layer diagram, which must be the ``layers`` contract of ``pyproject.toml``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ._markdown import read_blocks

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "llmcassette"
PAGE = "docs/architecture.md"
DESCRIBED_WHOLE = ("cli", "testing")  # one line each in the figure, not one per module
_ENTRY = re.compile(r"^(?P<indent> *)(?P<names>[\w/]+(?:\.py)?(?:, [\w.]+\.py)*)(?: |$)")


def figures() -> list[str]:
    blocks = read_blocks(ROOT / PAGE, PAGE)
    return [block.code for block in blocks if block.directive.get("figure")]


def modules_in_tree(figure: str) -> set[str]:
    """The modules the tree names, as paths below the package (``_vcr/lookup.py``)."""
    named: set[str] = set()
    folder = ""
    for line in figure.splitlines()[1:]:  # the first line is src/llmcassette/ itself
        entry = _ENTRY.match(line)
        if entry is None:
            continue
        names = entry["names"]
        if names.endswith("/"):
            folder = names
            continue
        if len(entry["indent"]) <= 2:
            folder = ""
        named.update(folder + name for name in names.split(", "))
    return named


def test_the_tree_names_every_module() -> None:
    modules = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] not in DESCRIBED_WHOLE
        and not (path.name == "__init__.py" and path.parent != PACKAGE)  # its folder's line
    }
    named = modules_in_tree(figures()[0])
    assert sorted(modules - named) == [], f"{PAGE}: add these modules to the tree"
    assert sorted(named - modules) == [], f"{PAGE}: the tree names modules that do not exist"


def test_the_layer_diagram_is_the_enforced_contract() -> None:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = settings["tool"]["importlinter"]["contracts"]
    layers = next(contract["layers"] for contract in contracts if contract["type"] == "layers")
    enforced = [layer.replace("llmcassette.", "") for layer in layers]
    assert figures()[1].strip().splitlines() == enforced
