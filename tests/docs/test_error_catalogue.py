"""Each example message of the error catalogue (docs/errors.md) is what llmcassette says.

An entry ``### LCnnn name`` shows its example in a ``text`` block marked
``<!-- docs-test: error=LCnnn -->``. ``_error_triggers.TRIGGERS[LCnnn]`` provokes the error
for real; the example must be a run of consecutive lines of what it said, after the
normalization of every docs sample (paths, ports, times, durations; ``...`` matches anything).
An entry with an example and no trigger fails: add one to ``_error_triggers.py``.

The class tree at the top of the page is a figure, checked against the classes themselves.
"""

from __future__ import annotations

import builtins
import re
from pathlib import Path

import pytest

import llmcassette

from ._error_triggers import TRIGGERS
from ._markdown import Block, read_blocks
from ._runner import normalized, pattern

ROOT = Path(__file__).resolve().parents[2]
PAGE = "docs/errors.md"
CATALOGUE = ROOT / PAGE
_ENTRY = re.compile(r"^### (LC\d{3}) [a-z][a-z-]*$", re.M)
# Entries with nothing to show: the base class, and the mismatch whose report has a page
# of its own (docs/matching.md, where it is produced by a runnable example).
WITHOUT_EXAMPLE = frozenset({"LC000", "LC301"})


def entries() -> dict[str, tuple[int, int]]:
    """Each catalogue code with the first and last line of its entry."""
    text = CATALOGUE.read_text(encoding="utf-8")
    starts = [(m[1], text.count("\n", 0, m.start()) + 1) for m in _ENTRY.finditer(text)]
    ends = [line - 1 for _, line in starts[1:]] + [text.count("\n") + 1]
    return {code: (start, end) for (code, start), end in zip(starts, ends, strict=True)}


def examples() -> list[Block]:
    """The blocks of the page marked ``error=LCnnn``."""
    return [b for b in read_blocks(CATALOGUE, PAGE) if "error" in b.directive]


def said_lines(shown: str, said: str, workdir: Path) -> bool:
    """Whether ``shown`` is a run of consecutive lines of ``said`` (both normalized)."""
    wanted = pattern(normalized(shown, workdir)).pattern
    return re.search(rf"(?:^|\n){wanted}(?:\n|$)", normalized(said, workdir), re.S) is not None


def test_every_entry_shows_an_example_that_is_checked() -> None:
    marked: dict[str, list[int]] = {}
    for block in examples():
        marked.setdefault(str(block.directive["error"]), []).append(block.line)
    missing = []
    for code, (start, end) in entries().items():
        if code in WITHOUT_EXAMPLE:
            continue
        if not any(start < line <= end for line in marked.get(code, [])):
            missing.append(f"{code} (line {start})")
    assert not missing, (
        f"{PAGE}: these entries show no example marked <!-- docs-test: error=LCnnn --> "
        f"before a ```text block of the message: {', '.join(missing)}"
    )
    unknown = sorted(set(marked) - set(entries()))
    assert not unknown, f"{PAGE}: error= names codes the catalogue has no entry for: {unknown}"


@pytest.mark.parametrize("block", examples(), ids=lambda b: f"{b.directive['error']}-line{b.line}")
def test_example_is_what_the_code_says(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = str(block.directive["error"])
    if code not in TRIGGERS:
        pytest.fail(
            f"{block.where}: no trigger for {code}: add a function that provokes it to "
            "tests/docs/_error_triggers.py (@trigger(" + repr(code) + ")), returning what "
            "llmcassette said (str(error), or what the command printed)",
            pytrace=False,
        )
    monkeypatch.chdir(tmp_path)
    said = TRIGGERS[code](monkeypatch)
    if not said_lines(block.code, said, tmp_path):
        pytest.fail(
            f"{block.where}: the example of {code} is not what the code says.\n"
            f"shown in the docs:\n{normalized(block.code, tmp_path)}\n"
            f"the code said:\n{normalized(said, tmp_path)}",
            pytrace=False,
        )


def test_every_trigger_has_an_entry() -> None:
    assert sorted(set(TRIGGERS) - set(entries())) == [], "a trigger for a code not in the page"


_TREE_LINE = re.compile(r"^(?P<prefix>[│├└─ ]*)(?P<name>\w+)(?:\s+\((?P<also>[^)]*)\))?\s*$")


def hierarchy() -> list[tuple[str, str | None, str | None]]:
    """``(class, parent, also)`` for each line of the page's class tree (its first block)."""
    tree = read_blocks(CATALOGUE, PAGE)[0]
    assert tree.directive.get("figure"), tree.where
    assert tree.code.startswith("Exception"), tree.where
    found: list[tuple[str, str | None, str | None]] = []
    stack: list[str] = []
    for line in tree.code.splitlines():
        if not line.strip():
            stack = []
            continue
        match = _TREE_LINE.match(line)
        assert match, f"{tree.where}: cannot read the tree line {line!r}"
        depth = len(match["prefix"]) // 4
        stack[depth:] = [match["name"]]
        found.append((match["name"], stack[depth - 1] if depth else None, match["also"]))
    return found


def test_the_class_tree_is_the_classes_as_they_are() -> None:
    shown = hierarchy()
    for name, parent, also in shown:
        cls = getattr(llmcassette, name, None) or getattr(builtins, name)
        if parent is not None:
            assert cls.__bases__[0].__name__ == parent, f"{name} is not a {parent} first"
        others = {base.__name__ for base in cls.__bases__[1:]}
        said = {also.split()[-1].rpartition(".")[2]} if also else set()
        assert others == said, (
            f"{name}: its other bases are {others or 'none'}, the tree says {also}"
        )
    public = {
        name
        for name in [*dir(llmcassette), "CassetteMismatch"]
        if isinstance(getattr(llmcassette, name), type)
        and issubclass(getattr(llmcassette, name), (Exception, Warning))
        and getattr(llmcassette, name).__module__.startswith("llmcassette")
    }
    assert sorted(public - {name for name, _, _ in shown}) == [], "public classes not in the tree"
