"""Outside pytest, llmcassette's warnings name the user's line: the request's call inside a
``use_cassette`` block, else the ``with`` statement; under ``llmcassette run``, the
program's line, else its first line. Each case runs a real script in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llmcassette.testing import LocalProvider

ASK = """\
import sys
import warnings

import httpx

import llmcassette

URL = sys.argv[1]
BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def read():
    with httpx.stream("POST", URL, json=BODY, headers={"authorization": "Bearer sk-x"}) as reply:
        return list(reply.iter_raw())


"""


def _run(tmp_path: Path, *command: str) -> str:
    """The stderr of ``python -W always COMMAND`` in ``tmp_path``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-W", "always", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def _line_of(script: str, marker: str) -> int:
    return next(n for n, line in enumerate(script.splitlines(), 1) if marker in line)


def _drop_the_terminator(path: Path) -> None:
    """The cassette of a stream cut without a word (as one made elsewhere may be)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines = [line for line in lines if line.get("text") != "[DONE]"]
    lines[-1]["events"] -= 1
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_warning_at_the_blocks_exit_names_the_with_statement(
    tmp_path: Path, provider: LocalProvider
) -> None:
    script = ASK + (
        'with llmcassette.use_cassette("c", record_mode="all"):  # the with\n    read()\n'
    )
    (tmp_path / "app.py").write_text(script)
    provider.queue_error(429)
    stderr = _run(tmp_path, "app.py", f"{provider.openai_base_url}/chat/completions")
    with_line = _line_of(script, "# the with")
    assert f"app.py:{with_line}: ErrorResponseNotRecordedWarning: c.jsonl: " in stderr


def test_a_warning_inside_a_request_names_the_call_in_the_block(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = f"{provider.openai_base_url}/chat/completions"
    record = ASK + 'with llmcassette.use_cassette("c", record_mode="all"):\n    read()\n'
    (tmp_path / "record.py").write_text(record)
    _run(tmp_path, "record.py", url)
    _drop_the_terminator(tmp_path / "c.jsonl")
    script = ASK + (
        'with llmcassette.use_cassette("c", record_mode="none"):\n    read()  # the call\n'
    )
    (tmp_path / "app.py").write_text(script)
    stderr = _run(tmp_path, "app.py", url)
    assert f"app.py:{_line_of(script, '# the call')}: IncompleteStreamWarning: " in stderr


def test_under_llmcassette_run_warnings_name_the_program(
    tmp_path: Path, provider: LocalProvider
) -> None:
    url = f"{provider.openai_base_url}/chat/completions"
    script = ASK + "read()\n"
    (tmp_path / "app.py").write_text(script)
    run = ["-m", "llmcassette", "run"]
    provider.queue_error(429)
    stderr = _run(tmp_path, *run, "--record", "c.jsonl", "--", sys.executable, "app.py", url)
    # At the program's exit no line of it runs: its first line stands for it.
    assert "app.py:1: ErrorResponseNotRecordedWarning: c.jsonl: " in stderr
    _run(tmp_path, *run, "--record", "c.jsonl", "--", sys.executable, "app.py", url)
    _drop_the_terminator(tmp_path / "c.jsonl")
    stderr = _run(tmp_path, *run, "--replay", "c.jsonl", "--", sys.executable, "app.py", url)
    # The program's line that made the request, the innermost of its main module.
    call = _line_of(script, "with httpx.stream(")
    assert f"app.py:{call}: IncompleteStreamWarning: " in stderr
