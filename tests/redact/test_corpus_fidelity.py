"""Every HTTP cassette of the shared corpus of real traffic (``../shared/corpus``, pydantic-ai's
recordings) converts with default redaction and replays every interaction with its recorded
response: status equal, and the body equal byte for byte outside the spans redaction replaced
(#18 item 1 and its bar). The spans are counted per rule, and each must be a credential-sized
span, not a piece of an image.

The recorded truth is what pydantic-ai itself replays: the file read with pydantic-ai's
serializer, kept beside the corpus in ``../shared/bench-corpus`` (``parsed_body`` turned back
into JSON text). A body is compared in the benchmark's canonical form (JSON as data, an event
stream event by event), so re-serialised JSON counts as equal and a changed value does not.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

import llmcassette
from llmcassette.cli.main import main

SHARED = Path(__file__).resolve().parents[3] / "shared"
CORPUS = SHARED / "corpus" / "pydantic-ai"
HARNESS = SHARED / "bench-corpus"
PLACEHOLDER = re.compile(rb"<REDACTED:([A-Za-z0-9_.\-]+)(?::[0-9]+)?>")
# The longest credential a placeholder may stand for: a PEM private key is the longest rule.
LONGEST_SECRET = 12_000
NOT_SENT = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}

pytestmark = pytest.mark.skipif(
    not (CORPUS.is_dir() and HARNESS.is_dir()), reason="the shared corpus (../shared) is not here"
)


def harness_module(name: str) -> ModuleType:
    """A module of the corpus benchmark (``../shared/bench-corpus/NAME.py``)."""
    spec = importlib.util.spec_from_file_location(name, HARNESS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def recorded(path: Path, serializer: ModuleType) -> list[dict[str, Any]]:
    """The interactions of a corpus cassette as pydantic-ai replays them."""
    data = serializer.deserialize(path.read_text(encoding="utf-8"))
    items = []
    for interaction in data["interactions"]:
        request, response = interaction["request"], interaction["response"]
        headers = []
        for name, values in (request.get("headers") or {}).items():
            if name.lower() in NOT_SENT:
                continue
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, bytes):  # botocore's binary headers
                    value = value.decode("utf-8", "surrogateescape")
                headers.append((str(name), str(value)))
        body = response.get("body")
        body = body.get("string") if isinstance(body, dict) else body
        items.append(
            {
                "method": request["method"],
                "uri": request["uri"],
                "headers": headers,
                "body": as_bytes(request.get("body")),
                "status": int((response.get("status") or {}).get("code", 200)),
                "response": as_bytes(body),
            }
        )
    return items


def as_bytes(body: object) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")  # a request body kept as a YAML mapping


def canonical(body: bytes, fingerprint: ModuleType) -> bytes:
    """``body`` as the benchmark compares it: JSON as data, a stream event by event."""
    if body:
        try:
            return bytes(fingerprint._canon(json.loads(body)))
        except (ValueError, UnicodeDecodeError):
            pass
        try:
            sse = fingerprint._sse(body)
        except UnicodeDecodeError:
            sse = None
        if sse is not None:
            return bytes(sse)
    return body


def replaced_spans(original: bytes, replayed: bytes) -> list[tuple[str, bytes]] | None:
    """The spans of ``original`` that the placeholders of ``replayed`` stand for, as
    ``(rule, span)``; None when the bodies differ anywhere else."""
    pieces = PLACEHOLDER.split(replayed)  # text, rule, text, rule, ...
    pattern = b"".join(
        re.escape(piece) if index % 2 == 0 else rb"(.{1,%d}?)" % LONGEST_SECRET
        for index, piece in enumerate(pieces)
    )
    match = re.fullmatch(pattern, original, re.DOTALL)
    if match is None:
        return None
    rules = [piece.decode() for piece in pieces[1::2]]
    return list(zip(rules, match.groups(), strict=True))


def test_every_http_cassette_of_the_corpus_converts_and_replays_its_recorded_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serializer = harness_module("pydantic_ai_json_body_serializer")
    fingerprint = harness_module("fingerprint")
    sources = [p for p in sorted(CORPUS.rglob("*.yaml")) if "- request:" in p.read_text()]
    assert len(sources) > 50
    spans: Counter[str] = Counter()
    differences = []
    client = httpx.Client(timeout=5.0)
    played = 0
    for number, source in enumerate(sources):
        out = tmp_path / str(number)
        assert main(["convert", "--out", str(out), str(source)]) == 0, source
        (converted,) = out.rglob("*.jsonl")
        items = recorded(source, serializer)
        with llmcassette.use_cassette(converted, record_mode="none"):
            for index, item in enumerate(items):
                with client.stream(
                    item["method"], item["uri"], headers=item["headers"], content=item["body"]
                ) as response:
                    body = b"".join(response.iter_bytes())
                where = f"{source.relative_to(CORPUS)}#{index}"
                assert response.status_code == item["status"], where
                played += 1
                original = canonical(item["response"], fingerprint)
                replayed = canonical(body, fingerprint)
                if original == replayed:
                    continue
                found = replaced_spans(original, replayed)
                if found is None:
                    differences.append(where)
                    continue
                for rule, span in found:
                    assert not span.startswith(b"<REDACTED:"), f"{where}: a placeholder replaced"
                    spans[rule] += 1
    capsys.readouterr()
    assert differences == [], "bodies changed outside credential spans"
    assert played > 90
    print(
        f"corpus: {len(sources)} cassettes, {played} interactions; body spans per rule: {dict(spans)}"
    )
