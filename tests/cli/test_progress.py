"""Progress of `convert`, `redact`, `heal` and `report` over many files: drawn on stderr
when it is a terminal (a pseudo-terminal here), never on stdout, never with --json, and
nothing at all when stderr is not a terminal."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import httpx2
import pytest
import vcr

import llmcassette
from llmcassette.testing import LocalProvider

FILES = 6
AUTH = {"authorization": "Bearer sk-test"}
AGE = r'"age_seconds": [0-9.]+'
# The commands, run from a copy of the tree with relative paths, so that two runs print
# the same text. convert writes JSONL beside nothing it reads: into out/.
COMMANDS = {
    "convert": ["convert", "vcrpy", "--out", "out"],
    "redact": ["redact", "--dry-run", "jsonl"],
    "heal": ["heal", "--dry-run", "jsonl"],
    "report": ["report", "jsonl"],
}
# The child runs main() itself, so a test can take tqdm away from it (sys.modules[...] =
# None makes the import fail as if tqdm were not installed).
CHILD = (
    "import sys\n"
    "if sys.argv[1] == 'no-tqdm': sys.modules['tqdm'] = None\n"
    "from llmcassette.cli.main import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)
# One drawing of the plain line: erase the row, then "llmcassette CMD: 3/6 NAME" or
# "llmcassette CMD checking: 3 file(s) NAME", up to the next carriage return.
PLAIN_DRAWING = re.compile(
    r"\r\x1b\[K(?:llmcassette \w+(?: checking)?: (?:\d+/\d+|\d+ file\(s\))[^\r]*(?=\r))?"
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FILES llmcassette cassettes in jsonl/ and FILES vcrpy ones in vcrpy/, recorded from
    the local provider through httpx2, with an API key for redact to find."""
    root = tmp_path_factory.mktemp("tree")
    (root / "jsonl").mkdir()
    (root / "vcrpy").mkdir()
    with LocalProvider() as provider, httpx2.Client() as client:
        url = f"{provider.url}/v1/chat/completions"
        for number in range(FILES):
            body = {"model": "m", "messages": [{"role": "user", "content": f"Hi {number}"}]}
            with llmcassette.use_cassette(root / "jsonl" / f"test_{number}"):
                assert client.post(url, json=body, headers=AUTH).status_code == 200
            with vcr.VCR().use_cassette(str(root / "vcrpy" / f"test_{number}.yaml")):
                assert client.post(url, json=body, headers=AUTH).status_code == 200
    for path in (root / "jsonl").iterdir():  # old enough that `report`'s age column is fixed
        lines = path.read_text().splitlines(keepends=True)
        header = json.loads(lines[0])
        header["created_at"] = "2020-01-01T00:00:00Z"
        path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    return root


@pytest.fixture
def copies(tree: Path, tmp_path: Path) -> list[Path]:
    """Fresh copies of the tree: one per run of a command."""
    made = [tmp_path / f"run{n}" for n in range(2)]
    for target in made:
        shutil.copytree(tree, target)
    return made


def run(cwd: Path, args: list[str], *, terminal: bool, tqdm: bool = False) -> tuple[int, str, str]:
    """The CLI in a child process: stdout to a pipe, stderr to a pipe or to a 100-column
    pseudo-terminal; the exit code, stdout and stderr (as the terminal got it)."""
    argv = [sys.executable, "-c", CHILD, "tqdm" if tqdm else "no-tqdm", *args]
    env = {**os.environ, "COLUMNS": "100"}
    if not terminal:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=120
        )
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    chunks: list[bytes] = []

    def drain() -> None:  # the child would block on a full terminal buffer
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its side
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=follower,
            stdin=subprocess.DEVNULL,
        )
        os.close(follower)
        follower = -1
        reader.start()
        stdout, _ = process.communicate(timeout=120)
        reader.join(timeout=30)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    # The terminal turns "\n" into "\r\n".
    return process.returncode, stdout.decode(), b"".join(chunks).decode()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_progress_on_a_terminal_goes_to_stderr_only(command: str, copies: list[Path]) -> None:
    args = COMMANDS[command]
    code, out, err = run(copies[0], args, terminal=False)
    code_tty, out_tty, err_tty = run(copies[1], args, terminal=True)
    assert code_tty == code == 0, err
    assert out_tty == out  # stdout is the same bytes
    assert out.strip() or err.strip()  # the command said something to compare
    # The line was drawn, with the count and the file being worked on...
    drawings = [found.group(0) for found in PLAIN_DRAWING.finditer(err_tty) if found.group(0)]
    assert drawings, err_tty
    assert re.search(rf"llmcassette {command}(?: checking)?: (?:0/{FILES}|0 file\(s\)) ", err_tty)
    folder = "vcrpy" if command == "convert" else "jsonl"
    assert any(f"{folder}/test_" in drawing for drawing in drawings)
    # ...erased before each line the command wrote there and at the end: without the
    # drawings, stderr is what it is off a terminal, and nothing is left on the row.
    assert PLAIN_DRAWING.sub("", err_tty).replace("\r\n", "\n") == err
    assert err_tty.endswith("\r\x1b[K") or err_tty.endswith("\n")
    # Off a terminal nothing of it shows.
    assert "\r" not in err
    assert "\x1b" not in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_progress_with_json(command: str, copies: list[Path]) -> None:
    args = [*COMMANDS[command], "--json"]
    code, out, err = run(copies[0], args, terminal=False)
    code_tty, out_tty, err_tty = run(copies[1], args, terminal=True)
    assert code_tty == code
    assert json.loads(out_tty)["command"] == command
    # The same document; report's ages moved on between the two runs.
    assert re.sub(AGE, "", out_tty) == re.sub(AGE, "", out)
    assert err_tty.replace("\r\n", "\n") == err
    assert "\r" not in err_tty.replace("\r\n", "")


@pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="tqdm is not installed")
def test_tqdm_draws_the_bar_when_installed(copies: list[Path]) -> None:
    code, out, err = run(copies[0], COMMANDS["heal"], terminal=False, tqdm=True)
    code_tty, out_tty, err_tty = run(copies[1], COMMANDS["heal"], terminal=True, tqdm=True)
    assert code_tty == code == 0
    assert out_tty == out
    assert "llmcassette heal:   0%|" in err_tty
    assert f"| 0/{FILES} [" in err_tty
    assert "file/s" in err_tty
    # The summary the command writes to stderr is there, on a row of its own.
    assert err.strip() == f"llmcassette heal: 0 of {FILES} cassette(s) would heal"
    assert f"\rllmcassette heal: 0 of {FILES} cassette(s) would heal\r\n" in err_tty
    assert "\r" not in err
