"""`llmcassette run`: a program that streams through the openai SDK, recorded and replayed
with no change to it; a changed prompt is a path-level mismatch and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llmcassette.testing import LocalProvider

from ._support import cassette_lines

APP = """
import os
import sys

import openai

client = openai.OpenAI(base_url=os.environ["APP_BASE_URL"], api_key="sk-test", max_retries=0)
stream = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": sys.argv[1]}],
    stream=True,
)
print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
"""


def _run(tmp_path: Path, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmcassette", "run", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "APP_BASE_URL": base_url},
        timeout=120,
    )


def test_record_then_replay_offline_gives_the_same_output_and_a_changed_prompt_fails(
    tmp_path: Path, provider: LocalProvider
) -> None:
    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "app.jsonl"
    app = [sys.executable, "app.py"]
    base_url = provider.openai_base_url

    recorded = _run(tmp_path, base_url, "--record", str(cassette), "--", *app, "Name a river")
    assert recorded.returncode == 0, recorded.stderr
    assert "Error in sitecustomize" not in recorded.stderr
    assert recorded.stdout.strip() == "You said: Name a river"
    assert "1 interaction(s) recorded, 0 replayed, 0 request(s) matched no" in recorded.stderr
    lines = cassette_lines(cassette)
    assert lines[0]["format"] == "llmcassette"
    assert sum(line.get("type") == "event" for line in lines) > 2  # the stream, event by event
    assert "sk-test" not in cassette.read_text()  # redacted as under pytest

    provider.stop()
    replayed = _run(tmp_path, base_url, "--replay", str(cassette), "--", *app, "Name a river")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    assert "0 interaction(s) recorded, 1 replayed, 0 request(s)" in replayed.stderr

    changed = _run(tmp_path, base_url, "--replay", str(cassette), "--", *app, "Name a lake")
    assert changed.returncode != 0
    assert "body.messages[0].content" in changed.stderr  # the path that differs
    assert "recorded 'Name a river', incoming 'Name a lake'" in changed.stderr
    assert "1 request(s) matched no recorded interaction" in changed.stderr
    assert json.loads(cassette.read_text().splitlines()[0])["format"] == "llmcassette"


def test_the_environment_variables_alone_switch_a_program_started_otherwise(
    tmp_path: Path, provider: LocalProvider
) -> None:
    from llmcassette.cli.run import environment

    (tmp_path / "app.py").write_text(APP)
    cassette = tmp_path / "env.jsonl"
    env = {**environment(str(cassette), "once"), "APP_BASE_URL": provider.openai_base_url}
    first = subprocess.run(
        [sys.executable, "app.py", "Hi"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert first.returncode == 0, first.stderr
    assert cassette.is_file()
    provider.stop()
    again = subprocess.run(
        [sys.executable, "app.py", "Hi"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert (again.returncode, again.stdout) == (0, first.stdout)
