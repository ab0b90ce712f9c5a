"""Every command's ``--help`` reads well in an 80-column terminal: no line wider, no markup.

The subcommands are read from the top-level help itself, so a command added to
``llmcassette`` is checked without a change here.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys

import pytest

from llmcassette.cli.main import main

WIDTH = 80
# What a docstring written for Sphinx leaves in a terminal: ``literal``, `role`, :role:`x`,
# **bold**, and reST's "::" before a literal block.
MARKUP = re.compile(r"`|\*\*|:[a-z]+:`|::\s*$")
# Entry points other than `llmcassette` that print a help text of their own.
MODULES = ("llmcassette.workflow", "llmcassette.demo", "llmcassette.testing")


def _help_of(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """What ``llmcassette ARGV --help`` prints in an 80-column terminal."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return printed.getvalue()


def _subcommands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    # argparse lists each command under COMMAND, indented by four, its help beside it.
    listed = re.findall(r"^    ([a-z][\w-]*)(?:\s{2,}|$)", _help_of([], monkeypatch), re.MULTILINE)
    assert listed, "llmcassette --help lists no subcommands"
    return listed


def _problems(text: str) -> list[str]:
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > WIDTH:
            problems.append(f"line {number} is {len(line)} columns: {line!r}")
        if MARKUP.search(line):
            problems.append(f"line {number} has markup: {line!r}")
    return problems


def test_every_llmcassette_command_has_plain_help_within_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    commands = _subcommands(monkeypatch)
    assert {"scan", "check", "show", "diff"} <= set(commands)
    problems = {
        " ".join(["llmcassette", *argv, "--help"]): _problems(_help_of(argv, monkeypatch))
        for argv in ([], *([command] for command in commands))
    }
    assert {command: found for command, found in problems.items() if found} == {}
    for command in commands:  # each says what it does between its usage and its arguments
        opening = _help_of([command], monkeypatch).split("\n\n")[1]
        assert opening[:1].isupper(), (command, opening)
        assert not opening.startswith(("positional", "options")), (command, opening)


@pytest.mark.parametrize("module", MODULES)
def test_module_entry_points_have_plain_help_within_80_columns(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        env={**os.environ, "COLUMNS": str(WIDTH)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: python -m " + module in done.stdout
    assert _problems(done.stdout) == []


def test_the_checks_catch_a_wide_line_and_reST_markup() -> None:
    assert _problems("The ``llmcassette`` command.") == [
        "line 1 has markup: 'The ``llmcassette`` command.'"
    ]
    assert len(_problems("x" * (WIDTH + 1))) == 1
    assert _problems("plain text, 80 columns or less") == []
