"""Every file llmcassette writes keeps the promise: a red-team pass over the writers.

What it found, each written nowhere now:

- A credential header value with a tab (``Bearer short<TAB><key>``) counted as three
  words, a message, searched by shape only: an unshaped key after the tab was written as
  sent, by a recording and by ``convert``.
- ``serializer="yaml"`` (or ``"json"``) could not save what requests, aiohttp or boto3
  recorded, nor add to a vcrpy cassette in ``new_episodes``: copying a request copied the
  redactor it is marked with, whose lock cannot be copied (``TypeError``).
- vcrpy's cassette ``metadata`` (``cassette.get_metadata(key, value)``) was neither redacted
  nor scanned in a YAML or JSON cassette (a JSONL one refused it): a token stored there was
  written, and ``llmcassette scan`` did not see it.
- A serializer of one's own whose text hides what it holds (compressed, base64) was scanned
  as that text only: a compressed request body holding a key (which redaction leaves to the
  scan) was written. What the serializer was handed is read too.
- With ``serializer="yaml"``, a Bedrock event-stream body was redacted as bytes: a key in
  an InvokeModel chunk (``{"bytes": base64}``, the model's text) was written, and a key
  replaced in a frame left its length and CRC wrong, so the replayed stream broke. The
  scan read the frames as bytes too. Both read the frames now, as a JSONL cassette does.
- With ``serializer="yaml"`` or ``"json"``, Gemini's streamed JSON array
  (``:streamGenerateContent`` without ``alt=sse``) was redacted as one JSON body: a key
  the model streamed across two elements was written.
- A test parametrized with a key (``@pytest.mark.parametrize("key", [api_key])``) has its
  cassette named after it by pytest-recording (``test_x[sk-proj-...].yaml``): the key was
  written as the cassette's file name (and its lock and temporary files' names). Such a
  name is refused, and the error shows it redacted.
- A key in base64 text (``{"data": base64("key=sk-proj-...")}``, a document a prompt
  attaches, a blob a tool returns) was written: only ``Basic`` credentials and bodies
  stored as base64 were decoded. A base64 run that may encode a rule's trigger is decoded;
  the redactor encodes it again with the placeholder inside, and the scan reads it decoded.
"""

from __future__ import annotations

import base64
import gzip
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import vcr
import yaml

import llmcassette
from llmcassette import _eventstream as wire
from llmcassette.errors import SecretLeakError
from llmcassette.redact import RedactionConfig, Redactor, scan
from llmcassette.redact.rules import Rules

from ._server import serving
from .test_rules import OPENAI
from .test_vcrpy_serializers import TokenServer

# Cassette metadata (``cassette.get_metadata``) came with a vcrpy release newer than the
# lowest llmcassette supports: an older vcrpy writes none, so there is nothing to leak.
needs_vcrpy_metadata = pytest.mark.skipif(
    not hasattr(vcr.cassette.Cassette, "get_metadata"),
    reason="this vcrpy has no cassette metadata",
)

# No known shape (Mistral, Cohere): a secret only by the header it travels in.
UNSHAPED = "Qm7Xk2Lp9Wn4Zr8Tv3Yb6Hc1Jd5Fg0Ks"
GITHUB = "ghp_" + "Rt5u" * 9
RULES = Rules(environ={})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("authorization", f"Bearer short\t{UNSHAPED}"),
        ("authorization", f"Bearer {UNSHAPED}\tmore"),
        ("authorization", f"Bearer a b {UNSHAPED}"),
        ("x-api-key", f"one two {UNSHAPED}"),
        ("x-my-auth", f"Bearer x\t{UNSHAPED}"),
        ("x-my-auth", f"invalid key given {UNSHAPED}"),
    ],
)
def test_a_credential_header_with_more_than_one_word_is_redacted_whole(
    name: str, value: str
) -> None:
    redacted = Redactor(RedactionConfig(env=False)).header_value(name, value)
    assert UNSHAPED not in redacted
    assert redacted.endswith(">"), "the whole value after the scheme is the credential"
    found: list[tuple[object, str]] = []
    scan._in_headers(RULES, {name: [value]}, (), found)
    assert found, "the scan reads it as the credential it is"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("x-clerk-auth-message", "Invalid JWT form. A JWT consists of three parts."),
        ("x-time-per-token", "21"),
    ],
)
def test_words_and_numbers_in_a_header_named_so_by_a_part_are_kept(name: str, value: str) -> None:
    assert Redactor(RedactionConfig(env=False)).header_value(name, value) == value
    found: list[tuple[object, str]] = []
    scan._in_headers(RULES, {name: [value]}, (), found)
    assert not found


def test_a_key_after_a_tab_is_written_nowhere(tmp_path: Path) -> None:
    path = tmp_path / "tab.jsonl"
    with serving(TokenServer) as base, llmcassette.use_cassette(str(path), record_mode="all"):
        httpx.post(base + "/v1/chat", headers={"authorization": f"Bearer short\t{UNSHAPED}"})
    request = json.loads(path.read_text().split("\n")[1])
    assert request["headers"]["authorization"] == "Bearer <REDACTED:bearer-token>"
    assert UNSHAPED not in path.read_text()


@pytest.mark.parametrize("record_mode", ["all", "new_episodes"])
def test_a_vcrpy_serializer_saves_what_requests_recorded(tmp_path: Path, record_mode: str) -> None:
    path = tmp_path / "requests.yaml"
    for _ in range(2):  # the second time, new_episodes adds to the file the first wrote
        with (
            serving(TokenServer) as base,
            llmcassette.use_cassette(str(path), record_mode=record_mode, serializer="yaml"),
        ):
            requests.post(base + "/v1/chat", headers={"authorization": f"Bearer {UNSHAPED}"})
    text = path.read_text()
    assert "Bearer <REDACTED:bearer-token>" in text
    assert UNSHAPED not in text


@needs_vcrpy_metadata
@pytest.mark.parametrize("serializer", ["jsonl", "yaml", "json"])
def test_a_key_in_the_cassettes_metadata_is_refused(tmp_path: Path, serializer: str) -> None:
    path = tmp_path / f"meta.{serializer}"

    def record() -> None:
        with (
            serving(TokenServer) as base,
            llmcassette.use_cassette(str(path), record_mode="all", serializer=serializer) as c,
        ):
            c.get_metadata("token", OPENAI)
            httpx.post(base + "/v1/chat")

    with pytest.raises(SecretLeakError, match=r"metadata\.token"):
        record()
    assert not path.exists()


def test_the_scan_reads_a_vcrpy_cassettes_metadata() -> None:
    text = yaml.safe_dump({"interactions": [], "version": 1, "metadata": {"token": OPENAI}})
    findings = scan.find_in_vcrpy(RULES, yaml.safe_load(text), text, "x.yaml")
    assert [(f.line, f.json_path, f.rule) for f in findings] == [
        (3, "metadata.token", "openai-api-key")
    ]


class Packed:
    """A serializer of one's own whose text shows nothing: gzip-compressed YAML, in base64."""

    @staticmethod
    def serialize(data: dict[str, Any]) -> str:
        return base64.b64encode(gzip.compress(yaml.safe_dump(data).encode())).decode()

    @staticmethod
    def deserialize(text: str) -> Any:
        return yaml.safe_load(gzip.decompress(base64.b64decode(text)))


@pytest.mark.parametrize(
    "where", ["gzip body", pytest.param("metadata", marks=needs_vcrpy_metadata), "nothing"]
)
def test_a_serializer_that_packs_its_text_is_read_as_what_it_was_handed(
    tmp_path: Path, where: str
) -> None:
    my_vcr = vcr.VCR()
    my_vcr.register_serializer("packed", Packed)
    llmcassette.configure(my_vcr)
    path = tmp_path / "packed.txt"
    note = json.dumps({"note": f"my key is {OPENAI}" if where == "gzip body" else "hi"})

    def record() -> None:
        with (
            serving(TokenServer) as base,
            my_vcr.use_cassette(str(path), serializer="packed", record_mode="all") as cassette,
        ):
            if where == "metadata":
                cassette.get_metadata("token", OPENAI)
            httpx.post(
                base + "/v1/chat",
                content=gzip.compress(note.encode()),
                headers={"content-type": "application/json", "content-encoding": "gzip"},
            )

    if where != "metadata":  # a compressed request body is redacted like any other
        record()
        packed = yaml.safe_dump(Packed.deserialize(path.read_text()))
        assert OPENAI not in packed
        assert ("<REDACTED:openai-api-key>" in packed) == (where == "gzip body")
        return
    with pytest.raises(SecretLeakError, match="openai-api-key"):
        record()
    assert not path.exists()


class Answers(BaseHTTPRequestHandler):
    """Answers every call with ``BODY`` as ``CONTENT_TYPE`` (set on a subclass)."""

    BODY = b""
    CONTENT_TYPE = "application/json"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", self.CONTENT_TYPE)
        self.send_header("content-length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)


def _chunk(event: dict[str, Any]) -> bytes:
    """An InvokeModelWithResponseStream frame: the event's JSON, base64, under ``bytes``."""
    headers = wire.string_headers(
        [
            (":event-type", "chunk"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ]
    )
    inner = base64.b64encode(json.dumps(event).encode()).decode()
    return wire.encode_frame(headers, json.dumps({"bytes": inner}).encode())


def _text(text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }


class BedrockStream(Answers):
    CONTENT_TYPE = "application/vnd.amazon.eventstream"
    BODY = b"".join(
        [
            _chunk(_text(f"a key {OPENAI[:20]}")),
            _chunk(_text(f"{OPENAI[20:]} and {GITHUB} done")),
            _chunk({"type": "message_stop"}),
        ]
    )


def _frames_text(body: bytes) -> str:
    """What the frames of an event-stream body say, chunks decoded (CRCs checked)."""
    out = []
    for frame in wire.decode_frames(body):
        payload = json.loads(frame.payload)
        out.append(base64.b64decode(payload["bytes"]).decode())
    return "".join(out)


def test_a_key_in_a_bedrock_stream_is_redacted_in_a_yaml_cassette(tmp_path: Path) -> None:
    path = tmp_path / "bedrock.yaml"
    with (
        serving(BedrockStream) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer="yaml"),
        httpx.Client() as client,
        client.stream("POST", base + "/model/m/invoke-with-response-stream") as response,
    ):
        response.read()
    body = yaml.safe_load(path.read_text())["interactions"][0]["response"]["body"]["string"]
    said = _frames_text(body)  # the frames still rebuild: lengths and CRCs are right
    assert "<REDACTED:openai-api-key>" in said
    assert "<REDACTED:github-token>" in said
    for piece in (OPENAI[:20], OPENAI[20:], GITHUB):
        assert piece not in said


def test_the_scan_reads_a_bedrock_stream_in_a_vcrpy_cassette() -> None:
    data = {
        "interactions": [
            {
                "request": {"body": None, "headers": {}, "method": "POST", "uri": "http://x/m"},
                "response": {
                    "body": {"string": BedrockStream.BODY},
                    "headers": {"Content-Type": [BedrockStream.CONTENT_TYPE]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    found = {(f.json_path, f.rule) for f in scan.find_in_vcrpy(RULES, data, "", "x.yaml")}
    assert (
        "interactions[0].response.body.string[1].data.bytes.delta.text",
        "github-token",
    ) in found


class GeminiArray(Answers):
    BODY = json.dumps(
        [
            {"candidates": [{"content": {"parts": [{"text": f"a key {OPENAI[:20]}"}]}}]},
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": f"{OPENAI[20:]} done"}]},
                        "finishReason": "STOP",
                    }
                ]
            },
        ]
    ).encode()


@pytest.mark.parametrize("serializer", ["yaml", "json"])
def test_a_key_split_across_a_gemini_array_is_redacted(tmp_path: Path, serializer: str) -> None:
    path = tmp_path / f"gemini.{serializer}"
    with (
        serving(GeminiArray) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer=serializer),
    ):
        httpx.post(base + "/v1beta/models/gemini-2.0-flash:streamGenerateContent")
    text = path.read_text()
    assert "<REDACTED:openai-api-key>" in text
    assert OPENAI[:20] not in text
    assert OPENAI[20:] not in text


@pytest.mark.parametrize("serializer", ["jsonl", "yaml"])
def test_a_cassette_named_after_a_key_is_not_written(tmp_path: Path, serializer: str) -> None:
    path = tmp_path / f"test_chat[{OPENAI}].{serializer}"
    with (
        pytest.raises(SecretLeakError, match="the file name holds a credential") as raised,
        serving(TokenServer) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer=serializer),
    ):
        httpx.post(base + "/v1/chat")
    assert list(tmp_path.iterdir()) == []  # no cassette, lock or temporary file
    assert OPENAI not in str(raised.value)
    assert raised.value.path == str(tmp_path / f"test_chat[<REDACTED:openai-api-key>].{serializer}")


PARAMETRIZED = """
import os
import httpx
import pytest

KEY = "{key}"


@pytest.mark.vcr
@pytest.mark.parametrize("key", [KEY, pytest.param(KEY, id="openai")])
def test_chat(key):
    httpx.post(os.environ["BASE"] + "/v1/chat", headers={{"authorization": "Bearer " + key}})
"""


def test_a_test_parametrized_with_a_key_gets_no_cassette_named_after_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mod=PARAMETRIZED.format(key=OPENAI))
    with serving(TokenServer) as base:
        monkeypatch.setenv("BASE", base)
        result = pytester.runpytest_subprocess("--record-mode=once", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*the file name holds a credential*"])
    written = sorted(p.name for p in (pytester.path / "cassettes").rglob("*") if p.is_file())
    assert written == ["test_chat[openai].jsonl"]


def _b64(text: str, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(text.encode()).decode()


@pytest.mark.parametrize("prefix", ["", "key=", "my keys: ", "api_key: "])
@pytest.mark.parametrize("urlsafe", [False, True])
def test_a_key_in_base64_text_is_redacted_and_stays_base64(prefix: str, urlsafe: bool) -> None:
    blob = _b64(f"{prefix}{OPENAI} and {GITHUB}\n", urlsafe)
    redacted = Redactor(RedactionConfig(env=False)).json({"data": blob, "n": 1})
    decoded = base64.b64decode(redacted["data"], altchars=b"-_" if urlsafe else None).decode()
    assert decoded == f"{prefix}<REDACTED:openai-api-key> and <REDACTED:github-token>\n"
    assert RULES.kinds_in(blob) == ["openai-api-key"]
    assert RULES.kinds_in(redacted["data"]) == []


def test_base64_data_without_a_secret_is_kept() -> None:
    image = base64.b64encode(bytes(range(256)) * 64).decode()  # 21 KB of binary
    text = _b64("the quick brown fox jumps over the lazy dog, " * 20)
    value = {"image": image, "text": text, "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012"}
    assert Redactor(RedactionConfig(env=False)).json(value) == value
    assert RULES.kinds_in(json.dumps(value)) == []


def test_a_key_in_a_long_base64_run_is_data() -> None:
    """A run longer than ``BASE64_DECODED_MAX`` (an image, a file) is not decoded."""
    from llmcassette.redact.rules import BASE64_DECODED_MAX

    blob = _b64("x" * BASE64_DECODED_MAX + f" {OPENAI}")
    assert RULES.base64_spans(blob) == []


@pytest.mark.parametrize("serializer", ["jsonl", "yaml"])
def test_a_key_in_base64_is_written_nowhere(tmp_path: Path, serializer: str) -> None:
    path = tmp_path / f"b64.{serializer}"
    attachment = _b64(f"config:\n  openai_key: {OPENAI}\n")
    with (
        serving(TokenServer) as base,
        llmcassette.use_cassette(str(path), record_mode="all", serializer=serializer),
    ):
        httpx.post(base + "/v1/chat", json={"file": {"data": attachment}})
    text = "".join(path.read_text().split())  # (YAML folds a long line)
    assert attachment not in text
    assert _b64("config:\n  openai_key: <REDACTED:openai-api-key>\n") in text


def test_the_scan_refuses_a_key_in_base64(tmp_path: Path) -> None:
    line = json.dumps({"type": "request", "body": {"json": {"data": _b64(f"k={OPENAI}")}}})
    findings = scan.find_in_jsonl(RULES, line + "\n", "x.jsonl")
    assert [(f.json_path, f.rule) for f in findings] == [("body.json.data", "openai-api-key")]
