"""`llmcassette convert`: vcrpy cassettes to JSONL that replays the same, and back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx2
import pytest
import vcr

import llmcassette
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "pydantic-ai"
CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "convert me"}]}
AUTH = {"authorization": "Bearer sk-test"}


def stream_lines(url: str) -> list[str]:
    with httpx2.Client() as client, client.stream("POST", url, json=CHAT, headers=AUTH) as r:
        return list(r.iter_lines())


@pytest.mark.parametrize("serializer", ["yaml", "json"])
def test_a_vcrpy_cassette_converts_to_jsonl_that_replays_the_same(
    tmp_path: Path, serializer: str
) -> None:
    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with vcr.VCR(serializer=serializer).use_cassette(str(tmp_path / f"old.{serializer}")):
            live = stream_lines(url)
    assert main(["convert", str(tmp_path / f"old.{serializer}")]) == 0
    converted = tmp_path / "old.jsonl"
    lines = [json.loads(line) for line in converted.read_text().splitlines()]
    assert sum(1 for line in lines if line.get("type") == "event") == len(
        [line for line in live if line]
    )
    assert "sk-test" not in converted.read_text()  # converted cassettes are redacted too
    with llmcassette.use_cassette(converted, record_mode="none"):
        assert stream_lines(url) == live


def test_gzip_compressed_yaml_and_parsed_body_cassettes(tmp_path: Path) -> None:
    source = tmp_path / "suite.yaml.gz"
    source.write_bytes(
        gzip.compress(
            b"""interactions:
- request:
    body: null
    headers:
      content-type:
      - application/json
    method: POST
    parsed_body:
      messages:
      - content: hi
        role: user
      model: gpt-4o-mini
    uri: https://api.openai.com/v1/chat/completions
  response:
    headers:
      content-type:
      - application/json
    parsed_body:
      choices:
      - message:
          content: hello
          role: assistant
      object: chat.completion
    status:
      code: 200
      message: OK
version: 1
"""
        )
    )
    assert main(["convert", str(source)]) == 0
    (item,) = cassette_file.read((tmp_path / "suite.jsonl").read_bytes(), "x").interactions
    assert json.loads(item.request_body or b"") == {
        "messages": [{"content": "hi", "role": "user"}],
        "model": "gpt-4o-mini",
    }
    assert json.loads(item.response_body)["choices"][0]["message"]["content"] == "hello"
    assert main(["convert", str(source)]) == 1  # the target exists: not replaced without --force
    assert main(["convert", "--force", str(source)]) == 0


def test_back_to_vcrpy_json_replays_with_plain_vcrpy(tmp_path: Path) -> None:
    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with llmcassette.use_cassette(tmp_path / "c"):
            live = stream_lines(url)
    assert main(["convert", "--to", "vcrpy-json", str(tmp_path / "c.jsonl")]) == 0
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["version"] == 1
    with vcr.VCR(serializer="json", record_mode="none").use_cassette(str(tmp_path / "c.json")):
        assert stream_lines(url) == live


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared pydantic-ai corpus is not here")
def test_the_real_traffic_corpus_converts_and_checks_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = sorted(CORPUS.rglob("*.yaml"))
    grpc = [path for path in everything if "- request:" not in path.read_text()]
    sources = [path for path in everything if path not in grpc]
    assert len(sources) > 50
    assert main(["convert", "--out", str(tmp_path), *map(str, sources)]) == 0
    if grpc:  # xAI's SDK speaks gRPC: said so, and nothing written
        assert main(["convert", "--out", str(tmp_path / "grpc"), str(grpc[0])]) == 2
        assert "gRPC recording" in capsys.readouterr().err
        assert not (tmp_path / "grpc").exists()
    assert main(["check", str(tmp_path)]) == 0
    converted = sorted(tmp_path.glob("*.jsonl"))
    assert len(converted) == len({source.stem for source in sources})
    streamed = 0
    for path in converted:
        for item in cassette_file.read(path.read_bytes(), path).interactions:
            streamed += item.stream is not None
    assert streamed > 20  # SSE bodies stored as raw text in the corpus became event lines
