"""`llmcassette convert`: vcrpy cassettes to JSONL that replays the same, and back."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest
import vcr
import yaml

import llmcassette
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli import convert, paths
from llmcassette.cli.main import main
from llmcassette.config import age_of
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
    # The bytes pydantic-ai's serializer, which defines parsed_body, hands vcrpy.
    assert (
        item.request_body
        == b'{"messages": [{"content": "hi", "role": "user"}], "model": "gpt-4o-mini"}'
    )
    assert item.response_body.startswith(b'{"choices": [{"message": {"content": "hello"')
    assert main(["convert", str(source)]) == 1  # the target exists: not replaced without --force
    assert main(["convert", "--force", str(source)]) == 0


def vcrpy_yaml_answered_on(*dates: str | None) -> str:
    """A vcrpy YAML cassette of one call per date, each answered with that Date header."""
    interactions = ""
    for number, date in enumerate(dates):
        date_header = f"      Date:\n      - {date}\n" if date else ""
        interactions += f"""- request:
    body: '{{"n": {number}}}'
    headers: {{}}
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{{"ok": true}}'
    headers:
{date_header}      content-type:
      - application/json
    status:
      code: 200
      message: OK
"""
    return f"interactions:\n{interactions}version: 1\n"


def test_a_converted_cassette_is_as_old_as_its_traffic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``created_at`` is the earliest response Date, so ``max_age`` judges the recording."""
    old = tmp_path / "old.yaml"
    old.write_text(
        vcrpy_yaml_answered_on("Tue, 17 Feb 2026 23:44:12 GMT", "Mon, 16 Feb 2026 08:00:00 GMT")
    )
    undated = tmp_path / "undated.yaml"
    undated.write_text(vcrpy_yaml_answered_on(None, "not a date"))
    assert main(["convert", str(old), str(undated)]) == 0
    header = cassette_file.read((tmp_path / "old.jsonl").read_bytes(), "x").header
    assert header["created_at"] == "2026-02-16T08:00:00Z"
    undated_header = cassette_file.read((tmp_path / "undated.jsonl").read_bytes(), "x").header
    age = age_of(undated_header)
    assert age is not None
    assert 0 <= age < 60, "no readable Date: the conversion's time"
    capsys.readouterr()
    assert main(["check", "--max-age", "30d", str(tmp_path / "old.jsonl")]) == 1
    assert "recorded 2026-02-16T08:00:00Z" in capsys.readouterr().out
    assert main(["check", "--max-age", "30d", str(tmp_path / "undated.jsonl")]) == 0


def test_a_json_answer_no_layout_rebuilds_replays_every_byte(tmp_path: Path) -> None:
    """AI21 on Bedrock writes floats as Java does: redaction leaves them, and the spacing,
    as they are (OpenLLMetry's Bedrock cassettes replayed ``{"id": 1234, ...}`` for ``{"id":1234,...}``)."""
    # The key makes redaction look into the body (a model's ``password`` is left as it is).
    answer = '{"id":1234,"password":"hunter2","tokens":[{"logprob":-3.6954811548639555E-6}]}'
    uri = "https://bedrock-runtime.us-east-1.amazonaws.com/model/ai21.j2-mid-v1/invoke"
    recorded = {
        "interactions": [
            {
                "request": {
                    "body": '{"prompt": "hi"}',
                    "headers": {},
                    "method": "POST",
                    "uri": uri,
                },
                "response": {
                    "body": {"string": answer},
                    "headers": {"Content-Type": ["application/json"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    (tmp_path / "ai21.yaml").write_text(yaml.safe_dump(recorded))
    assert main(["convert", str(tmp_path / "ai21.yaml")]) == 0
    with llmcassette.use_cassette(tmp_path / "ai21.jsonl", record_mode="none"):
        assert httpx2.post(uri, content=b'{"prompt": "hi"}').content == answer.encode()


def test_vcrpy_metadata_is_kept_both_ways(tmp_path: Path) -> None:
    """vcrpy's cassette metadata (``cassette.get_metadata``) becomes the header's
    ``metadata`` and goes back with ``--to vcrpy-json``; it was dropped without a word."""
    text = vcrpy_yaml_answered_on("Tue, 17 Feb 2026 23:44:12 GMT")
    (tmp_path / "meta.yaml").write_text(text + "metadata:\n  model: gpt-4o\n  seed: 7\n")
    assert main(["convert", str(tmp_path / "meta.yaml")]) == 0
    header = cassette_file.read((tmp_path / "meta.jsonl").read_bytes(), "x").header
    assert header["metadata"] == {"model": "gpt-4o", "seed": 7}
    (tmp_path / "meta.yaml").unlink()
    assert main(["convert", "--to", "vcrpy-json", str(tmp_path / "meta.jsonl")]) == 0
    assert json.loads((tmp_path / "meta.json").read_text())["metadata"] == {
        "model": "gpt-4o",
        "seed": 7,
    }


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


def test_a_gemini_json_array_stream_converts_into_one_event_per_element(tmp_path: Path) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "convert me"}]}]}
    key = {"x-goog-api-key": "AIza-local"}

    def chunks(url: str) -> list[bytes]:
        with httpx2.Client() as client, client.stream("POST", url, json=body, headers=key) as r:
            return list(r.iter_raw())

    with LocalProvider() as provider:
        provider.behaviour.events = 4
        base = provider.gemini_base_url
        url = f"{base}/v1beta/models/gemini-2.0-flash:streamGenerateContent"
        with llmcassette.use_cassette(tmp_path / "direct", record_mode="once"):
            live = chunks(url)  # one chunk per element
        with vcr.VCR().use_cassette(str(tmp_path / "old.yaml")):
            assert b"".join(chunks(url)) == b"".join(live)  # vcrpy keeps the body whole
    assert main(["convert", str(tmp_path / "old.yaml")]) == 0

    def event_lines(path: Path) -> list[dict[str, object]]:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        return [{k: v for k, v in e.items() if k != "t"} for e in lines if e.get("type") == "event"]

    converted = event_lines(tmp_path / "old.jsonl")
    assert len(converted) == len(live) == 4
    assert converted == event_lines(tmp_path / "direct.jsonl"), "the same events as recorded"
    with llmcassette.use_cassette(tmp_path / "old.jsonl", record_mode="none"):
        assert chunks(url) == live
    # And back to vcrpy: the body as vcrpy recorded it.
    assert main(["convert", "--to", "vcrpy-json", str(tmp_path / "old.jsonl")]) == 0
    (entry,) = json.loads((tmp_path / "old.json").read_text())["interactions"]
    assert entry["response"]["body"]["string"].encode() == b"".join(live)


def _tree_of_cassettes(root: Path) -> None:
    """A suite's cassette folders: many small vcrpy cassettes, and what a folder also holds
    (a broken file, a data file that is no cassette, a cassette already converted)."""
    for folder in ("a", "b/c"):
        for number in range(12):
            answer = json.dumps({"n": number, "key": "sk-" + "Ab1" * 16})
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / f"test_{number}.yaml").write_text(
                "interactions:\n- request:\n    body: null\n    headers: {}\n    method: GET\n"
                f"    uri: https://api.example.com/v1/{number}\n  response:\n"
                "    body: {string: '" + answer + "'}\n    headers: {}\n"
                "    status: {code: 200, message: OK}\nversion: 1\n"
            )
    (root / "a" / "broken.yaml").write_text("interactions: [\n")
    (root / "a" / "data.json").write_text('{"not": "a cassette"}')
    (root / "b" / "c" / "test_3.jsonl").write_text("already here\n")  # no vcrpy cassette
    (root / "out" / "a").mkdir(parents=True)
    (root / "out" / "a" / "test_5.jsonl").write_text("converted before\n")  # not replaced


def test_a_tree_converts_in_several_processes_as_in_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each process opens, converts and writes whole files; what they say comes back in the
    # files' order, so the output, the exit code and the files are those of one process.
    # (These files are tiny: every one is made worth a process of its own.)
    monkeypatch.setattr(paths, "WORK_PER_JOB", 1)
    outcomes = []
    for jobs in ("1", "2"):
        root = tmp_path / f"jobs{jobs}"
        _tree_of_cassettes(root)
        code = main(["convert", "--jobs", jobs, "--out", str(root / "out"), str(root)])
        said = capsys.readouterr()
        written = {
            path.relative_to(root).as_posix(): path.read_text().split("\n", 1)[1]
            for path in sorted((root / "out").rglob("*.jsonl"))
        }
        outcomes.append((code, said.out.replace(str(root), "ROOT"), said.err, written))
        code = main(["convert", "--json", "--jobs", jobs, "--out", str(root / "json"), str(root)])
        document = json.loads(capsys.readouterr().out.replace(str(root), "ROOT"))
        outcomes[-1] += (code, document)
    one, two = outcomes
    assert one[0] == 2  # the broken file
    assert one[1].count(" -> ") == 23  # all but a/test_5, whose target exists
    assert "test_5.jsonl exists; use --force" in one[2]
    assert "broken.yaml" in one[2]
    assert "sk-" + "Ab1" * 16 not in "".join(one[3].values())
    assert one[2] == two[2].replace("jobs2", "jobs1")
    assert (one[0], one[1], one[3], one[4]) == (two[0], two[1], two[3], two[4])
    assert json.dumps(one[5]) == json.dumps(two[5])


def test_a_target_written_by_another_process_meanwhile_is_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # x.json and x.yaml convert to one x.jsonl. In several processes both looked for it
    # before either wrote it, and the second replaced the first without a word.
    (tmp_path / "x.yaml").write_text(
        "interactions:\n- request: {method: GET, uri: 'https://api.example.com/', body: null,"
        " headers: {}}\n  response: {status: {code: 200, message: OK}, headers: {},"
        " body: {string: hi}}\nversion: 1\n"
    )
    target = tmp_path / "out" / "x.jsonl"
    converted = convert.jsonl_of

    def other_process_writes_first(*args: Any, **kwargs: Any) -> Any:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x.json converted\n")  # after the check, before the write
        return converted(*args, **kwargs)

    monkeypatch.setattr(convert, "jsonl_of", other_process_writes_first)
    code = main(["convert", "--out", str(tmp_path / "out"), str(tmp_path / "x.yaml")])
    said = capsys.readouterr()
    assert code == 1
    assert "x.jsonl exists; use --force to replace it" in said.err
    assert " -> " not in said.out
    assert target.read_text() == "x.json converted\n"
    assert sorted(path.name for path in target.parent.iterdir()) == ["x.jsonl"]


def test_little_work_stays_in_one_process(tmp_path: Path) -> None:
    # Starting a process costs its imports; a tree of small files converts faster without.
    _tree_of_cassettes(tmp_path)
    found = [item for item in paths.files_of([tmp_path]) if isinstance(item, paths.Found)]
    assert len(found) == 28  # 24 cassettes, a broken one, a data file, two JSONL files
    # A lambda cannot be sent to another process: this fails if one were started.
    ran_in = list(paths._mapped(lambda found: os.getpid(), found, jobs=2))
    assert ran_in == [os.getpid()] * len(found)


def test_one_file_stays_in_this_process_however_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file is converted by one process: starting others for it would only cost.
    monkeypatch.setattr(paths, "WORK_PER_JOB", 1)
    (tmp_path / "test_big.yaml").write_text("interactions: []\nversion: 1\n")
    found = [paths.Found(tmp_path / "test_big.yaml")]
    assert list(paths._mapped(lambda found: os.getpid(), found, jobs=2)) == [os.getpid()]


def test_jobs_must_be_a_whole_number_from_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "--jobs", "0", "x.yaml"]) == 2
    assert "expected a whole number from 1, not '0'" in capsys.readouterr().err
