"""Every code example in `docs/` runs, page by page (see `_runner` for the conventions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

from ._markdown import read_blocks
from ._recipes import PAGE as RECIPES
from ._recipes import install_line, recipes, runnable_blocks
from ._runner import DocsExampleFailure, PageRunner, unchecked

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page: str, docs_workdir: Path, docs_provider: LocalProvider) -> None:
    blocks = read_blocks(ROOT / page, page)
    not_here: list[str] = []
    if page == RECIPES:  # each recipe also runs alone, in its own environment (noxfile.py)
        blocks, not_here = runnable_blocks(recipes())
    try:
        tally = PageRunner(page, docs_workdir, docs_provider).run(blocks)
    except DocsExampleFailure as failure:
        pytest.fail(str(failure), pytrace=False)
    left = f"; recipes left to their own environments: {', '.join(not_here)}" if not_here else ""
    print(f"{page}: {tally}{left}")


@pytest.mark.parametrize("page", [*PAGES, "README.md"])
def test_every_output_sample_is_checked(page: str) -> None:
    found = unchecked(read_blocks(ROOT / page, page))
    if found:
        where = ", ".join(block.where for block in found)
        pytest.fail(
            f"{page} shows {len(found)} output sample(s) that nothing checks ({where}). "
            "Mark each <!-- docs-test: output --> after the "
            "python block that prints it (<!-- docs-test: raises --> on that block for an "
            "exception), <!-- docs-test: run --> on a console block of $ commands and what "
            "they print, <!-- docs-test: error=LCnnn --> for the example of a catalogue entry "
            "in docs/errors.md, or <!-- docs-test: figure --> when it is not output at all "
            "(docs/architecture.md#output-in-the-docs-is-checked)",
            pytrace=False,
        )


def test_every_recipe_states_its_setup_and_runs_something() -> None:
    found = recipes()  # raises RecipeError for a recipe with code but no set-up block
    assert {"openai", "anthropic", "litellm", "langchain-openai", "langchain-anthropic"} <= set(
        found
    )
    assert all(recipe.blocks for recipe in found.values()), "a recipe without code"
    assert install_line(found, "normalizers")[:2] == ["openai", "anthropic"]
