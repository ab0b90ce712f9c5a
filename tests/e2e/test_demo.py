"""``python -m llmcassette.demo`` (``nox -s demo``) tells the whole story, quickly."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")


def test_the_demo_shows_redaction_a_mismatch_and_a_cut_stream(tmp_path: Path) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "llmcassette.demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.monotonic() - started
    output = result.stdout
    assert result.returncode == 0, output + result.stderr
    assert elapsed < 60, f"the demo took {elapsed:.1f} s"

    assert "authorization: Bearer <REDACTED:" in output
    assert "set-cookie: __cf_bm=<REDACTED:cookie>" in output
    assert "openai-organization: <REDACTED:" in output
    assert (
        "body.messages[0].content: recorded 'Tell me about cassettes', "
        "incoming 'Tell me about floppy disks'"
    ) in output
    assert "use_cassette(..., record_mode='all')" in output  # the hint for use_cassette
    assert "--record-mode" not in output
    assert "IncompleteStreamWarning" in output
    assert "the connection broke mid-stream" in output
    assert '"incomplete":' in output

    # The counts it prints are the cassette's.
    lines = [json.loads(line) for line in (tmp_path / "demo.jsonl").read_text().splitlines()]
    events = sum(1 for line in lines if line.get("type") == "event")
    assert lines[-1] == {**lines[-1], "type": "end", "events": events}
    assert f"{events} stream events, the {events - 1} chunks the SDK yielded" in output
    assert f'"events":{events})' in output
