"""Every code example in `docs/` runs, page by page (see `_runner` for the conventions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmcassette.testing import LocalProvider

from ._markdown import read_blocks
from ._runner import DocsExampleFailure, PageRunner

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page: str, docs_workdir: Path, docs_provider: LocalProvider) -> None:
    blocks = read_blocks(ROOT / page, page)
    try:
        tally = PageRunner(page, docs_workdir, docs_provider).run(blocks)
    except DocsExampleFailure as failure:
        pytest.fail(str(failure), pytrace=False)
    print(f"{page}: {tally}")
