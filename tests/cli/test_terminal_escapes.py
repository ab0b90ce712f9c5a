"""A cassette is untrusted input: what the commands print of it cannot drive the terminal.

An escape sequence in a recorded URL, method or answer, or in a file name, could clear the
screen, hide a finding, set the window title or write to the clipboard (OSC 52); every
control character is printed as ``\\xNN``, and only the commands' own colours pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from _cli_support import write_records

from llmcassette.cli.main import main
from llmcassette.cli.output import terminal_safe

HOSTILE = "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x9b1A\rX"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
OWN_COLOURS = r"\x1b\[(?:0|1|31|32|33|36)m"  # what --color always paints with


def _cassette(path: Path, text: str) -> Path:
    records: list[dict[str, Any]] = [
        {"format": "llmcassette", "format_version": 2, "created_at": "2026-01-01T00:00:00Z"},
        {"type": "request", "method": "POST" + text, "uri": "http://x.test/" + text},
        {
            "type": "response",
            "status": 200,
            "headers": {"content-type": "application/json"},
            "body": {"json": {"choices": [{"message": {"role": "assistant", "content": text}}]}},
        },
        {"type": "end", "events": 0},
    ]
    write_records(path, records)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "{a}"],
        ["show", "--color", "always", "{a}"],
        ["show", "--textconv", "{a}"],
        ["diff", "{a}", "{b}"],
        ["diff", "--color", "always", "{a}", "{b}"],
        ["check", "{bad}"],
        ["report", "{folder}"],
    ],
)
def test_no_control_character_of_a_cassette_reaches_the_terminal(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _cassette(tmp_path / "a.jsonl", HOSTILE)
    b = _cassette(tmp_path / "b.jsonl", "")
    bad = tmp_path / f"bad{HOSTILE[:4]}.jsonl"  # a file name from a pull request
    bad.write_text('{"format": "llmcassette", "format_version": 2}\n{"type": 1}\n')
    names = {"a": a, "b": b, "bad": bad, "folder": tmp_path}
    main([arg.format(**names) for arg in argv])
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert r"\x1b[2J" in printed or argv[0] == "report"  # shown, as text
    unpainted = re.sub(OWN_COLOURS, "", printed) if "always" in argv else printed
    assert not CONTROL.search(unpainted), printed


def test_terminal_safe_keeps_tabs_newlines_and_only_its_own_colours() -> None:
    assert terminal_safe("a\tb\nc") == "a\tb\nc"
    assert terminal_safe("\x1b]0;t\x07\r") == r"\x1b]0;t\x07\x0d"
    assert terminal_safe("\x1b[31mred\x1b[0m", colors=True) == "\x1b[31mred\x1b[0m"
    assert terminal_safe("\x1b[31mred\x1b[0m") == r"\x1b[31mred\x1b[0m"
    assert terminal_safe("\x1b[2J", colors=True) == r"\x1b[2J"
