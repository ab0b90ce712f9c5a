"""The recipes of docs/recipes.md, each run from its stated set-up alone.

A recipe is a ``## `` section whose set-up is an ``sh`` block marked
``<!-- docs-test: setup=NAME -->`` (``needs=A,B`` when it builds on other recipes) holding
one ``pip install ...`` line. ``nox -s tests`` makes one environment per recipe from that
line (its needs' lines included) and runs ``python -m tests.docs._recipes NAME`` in it; the
docs test of the page runs the recipes whose packages the test environment has.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from llmcassette.testing import LocalProvider

from ._markdown import Block, read_blocks
from ._runner import DocsExampleFailure, PageRunner

ROOT = Path(__file__).resolve().parents[2]
PAGE = "docs/recipes.md"
_HEADING = re.compile(r"^## ")


@dataclass(frozen=True)
class Recipe:
    """One recipe: what its set-up installs and the blocks of its section."""

    name: str
    #: The packages of its ``pip install`` line, llmcassette (the checkout) left out.
    packages: tuple[str, ...]
    #: The recipes it builds on (their names and cassettes), in the order given.
    needs: tuple[str, ...]
    blocks: tuple[Block, ...]


class RecipeError(ValueError):
    """docs/recipes.md does not say how a recipe is set up."""


def _packages(block: Block) -> tuple[str, ...]:
    lines = [line for line in block.code.splitlines() if line.strip()]
    if len(lines) != 1 or not lines[0].startswith("pip install llmcassette"):
        raise RecipeError(f"{block.where}: a set-up block is one `pip install llmcassette ...`")
    return tuple(lines[0].split()[3:])


def recipes(path: Path = ROOT / PAGE, page: str = PAGE) -> dict[str, Recipe]:
    """Every recipe of the page, in page order."""
    text = path.read_text(encoding="utf-8")
    fenced: set[int] = set()
    every = read_blocks(path, page)
    for block in every:
        fenced.update(range(block.line, block.line + block.code.count("\n") + 2))
    headings = [
        number
        for number, line in enumerate(text.splitlines(), 1)
        if _HEADING.match(line) and number not in fenced
    ]
    found: dict[str, Recipe] = {}
    for start, end in zip(headings, [*headings[1:], len(text.splitlines()) + 1], strict=True):
        section = [block for block in every if start < block.line < end]
        setups = [block for block in section if "setup" in block.directive]
        code = [block for block in section if "setup" not in block.directive]
        if not setups:
            if code:
                raise RecipeError(f"{page}:{start}: a recipe with code needs a set-up block")
            continue
        if len(setups) > 1:
            raise RecipeError(f"{setups[1].where}: one set-up block per recipe")
        setup = setups[0]
        needs = str(setup.directive.get("needs", ""))
        name = str(setup.directive["setup"])
        found[name] = Recipe(
            name, _packages(setup), tuple(filter(None, needs.split(","))), tuple(code)
        )
    for recipe in found.values():
        unknown = [need for need in recipe.needs if need not in found]
        if unknown:
            raise RecipeError(f"{page}: recipe {recipe.name} needs unknown recipe(s) {unknown}")
    return found


def with_needs(found: dict[str, Recipe], name: str) -> list[Recipe]:
    """The recipe and those it builds on, transitively, in page order."""
    wanted, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current not in wanted:
            wanted.add(current)
            pending.extend(found[current].needs)
    return [recipe for recipe in found.values() if recipe.name in wanted]


def install_line(found: dict[str, Recipe], name: str) -> list[str]:
    """What the environment of a recipe installs next to llmcassette: its needs' too."""
    packages: list[str] = []
    for recipe in with_needs(found, name):
        packages += [package for package in recipe.packages if package not in packages]
    return packages


def _installed(requirement: str) -> bool:
    name = re.split(r"[<>=!~\[;]", requirement, maxsplit=1)[0]
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def runnable_blocks(found: dict[str, Recipe]) -> tuple[list[Block], list[str]]:
    """The blocks of the recipes this environment can run, and the names of those it can't."""
    blocks: list[Block] = []
    missing: list[str] = []
    for name, recipe in found.items():
        if all(_installed(package) for package in install_line(found, name)):
            blocks += recipe.blocks
        else:
            missing.append(name)
    return sorted(blocks, key=lambda block: block.line), missing


def main(argv: list[str] | None = None) -> int:
    """Run one recipe (after those it needs) against a local provider; 0 when it runs."""
    parser = argparse.ArgumentParser(prog="python -m tests.docs._recipes")
    parser.add_argument("recipe", help="the name in the recipe's setup=NAME")
    name = parser.parse_args(argv).recipe
    found = recipes()
    if name not in found:
        parser.error(f"no recipe {name!r} in {PAGE}; there are {', '.join(found)}")
    # What the docs tests' fixtures set (tests/docs/conftest.py), for a run without pytest.
    from .conftest import _LEAKY, ANTHROPIC_KEY, OPENAI_KEY

    blocks = sorted((b for r in with_needs(found, name) for b in r.blocks), key=lambda b: b.line)
    with LocalProvider() as provider, tempfile.TemporaryDirectory() as workdir:
        os.environ.update(
            OPENAI_BASE_URL=provider.openai_base_url,
            ANTHROPIC_BASE_URL=provider.anthropic_base_url,
            OPENAI_API_KEY=OPENAI_KEY,
            ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        )
        for variable in _LEAKY:
            os.environ.pop(variable, None)
        os.chdir(workdir)
        try:
            tally = PageRunner(PAGE, Path(workdir), provider).run(blocks)
        except DocsExampleFailure as failure:
            print(f"recipe {name}: {failure}", file=sys.stderr)
            return 1
        finally:
            os.chdir(ROOT)
    print(f"recipe {name} ({' '.join(install_line(found, name))}): {tally}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
