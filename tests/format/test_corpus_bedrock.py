"""The shared corpus's Bedrock cassettes (pydantic-ai, boto3 through vcrpy): converted to
JSONL one line per event-stream frame, rebuilt byte for byte, judged complete, assembled by
``show``, and no larger than the YAML. Skips without ``../shared/corpus``."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmcassette.cassette import jsonl
from llmcassette.cli.main import main
from llmcassette.transport.integrity import missing_terminator

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "pydantic-ai"
EVENT_STREAM = "application/vnd.amazon.eventstream"


def _sources() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return [p for p in sorted(CORPUS.rglob("*.yaml")) if EVENT_STREAM in p.read_text()]


def _plain_frames(body: bytes) -> list[tuple[str, Any]]:
    """(event type, JSON payload) of each frame, read here with struct alone (no CRC check):
    an assembly independent of llmcassette's codec."""
    out, at = [], 0
    while at < len(body):
        total, headers_length = struct.unpack_from("!II", body, at)
        headers, cursor = {}, at + 12
        while cursor < at + 12 + headers_length:
            size = body[cursor]
            name = body[cursor + 1 : cursor + 1 + size].decode()
            assert body[cursor + 1 + size] == 7  # every Bedrock header is a string
            (length,) = struct.unpack_from("!H", body, cursor + 2 + size)
            value = body[cursor + 4 + size : cursor + 4 + size + length].decode()
            headers[name] = value
            cursor += 4 + size + length
        payload = body[at + 12 + headers_length : at + total - 4]
        out.append((headers[":event-type"], json.loads(payload)))
        at += total
    return out


def _last_frame_at(body: bytes) -> int:
    at = 0
    while at + struct.unpack_from("!I", body, at)[0] < len(body):
        at += struct.unpack_from("!I", body, at)[0]
    return at


def _expected_text(frames: list[tuple[str, Any]]) -> str:
    return "".join(
        data["delta"].get("text", "") for kind, data in frames if kind == "contentBlockDelta"
    )


@pytest.mark.skipif(not _sources(), reason="the shared pydantic-ai corpus is not here")
def test_corpus_bedrock_streams(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    streams = frames_seen = 0
    sizes: list[tuple[str, int, int]] = []
    for number, source in enumerate(_sources()):
        out = tmp_path / str(number)
        assert main(["convert", "--out", str(out), str(source)]) == 0
        (converted,) = out.glob("*.jsonl")
        items = jsonl.read(converted.read_bytes(), converted).interactions
        original = yaml.safe_load(source.read_text())["interactions"]
        capsys.readouterr()
        assert main(["show", "--json", str(converted)]) == 0
        shown = json.loads(capsys.readouterr().out)["interactions"]
        for position, (item, recorded) in enumerate(zip(items, original, strict=True)):
            body = recorded["response"]["body"]["string"]
            if EVENT_STREAM not in recorded["response"]["headers"]["content-type"][0]:
                continue
            where = f"{source.name} #{position + 1}"
            assert item.stream == "eventstream", where
            assert item.response_body == body, where  # frames and CRCs rebuilt byte for byte
            assert missing_terminator("eventstream", body) is None, where
            frames = _plain_frames(body)
            last = len(body) - struct.unpack_from("!I", body, _last_frame_at(body))[0]
            assert missing_terminator("eventstream", body[:last]) is not None, where
            assert missing_terminator("eventstream", body[:-10]) is not None, where
            assert shown[position]["answer"]["text"] == _expected_text(frames), where
            streams += 1
            frames_seen += len(frames)
        lines = [json.loads(line) for line in converted.read_text().splitlines()]
        assert not any("base64" in line for line in lines if line.get("type") == "event")
        sizes.append((source.name, source.stat().st_size, converted.stat().st_size))
    for name, yaml_size, jsonl_size in sizes:
        print(f"{name}: YAML {yaml_size} B, JSONL {jsonl_size} B ({jsonl_size / yaml_size:.2f}x)")
        assert jsonl_size <= yaml_size, name
    print(f"{streams} Bedrock streams, {frames_seen} frames")
    assert streams >= 5
