"""A credential redacted anywhere is redacted everywhere; bodies no rule can read are refused.

The redactor remembers every value it replaced (an unshaped key in an ``Authorization``
header) and replaces it wherever else it is written: an error body or header that echoes
it, a URL, a stream event, a request body. ``{"key": ...}`` holds a credential when its
value looks like a token. A body in a content-encoding llmcassette cannot decode is refused
by the fail-closed scan unless ``allow_unscanned_bodies`` says otherwise.
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest
import vcr
from vcr.request import Request
from vcr.serializers import yamlserializer

import llmcassette
from llmcassette._vcr import serializer as jsonl
from llmcassette._vcr.persister import Persister
from llmcassette.cli.main import main
from llmcassette.errors import UNSCANNABLE_BODY, SecretLeakError
from llmcassette.redact import RedactionConfig, Redactor
from llmcassette.redact.scan import find_in_value
from llmcassette.testing import LocalProvider

from .test_secrets_corpus import echo_server  # noqa: F401 (a fixture)

UNSHAPED = "Zq7Xw2Lm9Rt4Yp6Kd3Hs8Vb1Nc5Fg0Jq"


def _redactor() -> Redactor:
    redactor = Redactor(environ={})
    assert redactor.headers({"authorization": f"Bearer {UNSHAPED}"}) == {
        "authorization": "Bearer <REDACTED:bearer-token>"
    }
    return redactor


def test_a_value_redacted_in_a_header_is_redacted_in_every_other_part() -> None:
    redactor = _redactor()
    response: dict[str, Any] = {
        "status": 401,
        "reason": f"bad key {UNSHAPED}",
        "headers": {"x-echo": [UNSHAPED], "location": [f"/retry?sig2={UNSHAPED}"]},
        "body": {"json": {"error": {"message": f"Invalid API key: {UNSHAPED}"}}},
    }
    redactor.records(None, response, None)
    assert UNSHAPED not in json.dumps(response)
    assert (
        response["body"]["json"]["error"]["message"] == "Invalid API key: <REDACTED:bearer-token>"
    )
    assert response["headers"]["x-echo"] == ["<REDACTED:bearer-token>"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": f"key={UNSHAPED}&x=1"}, "text"),
        ({"json": [{"deep": [f"{UNSHAPED}"]}], "layout": "spaced"}, "json"),
        ({"base64": base64.b64encode(b"\xff\xfe" + UNSHAPED.encode()).decode()}, "base64"),
    ],
)
def test_a_known_value_in_a_body_of_any_kind_is_redacted(body: dict[str, Any], field: str) -> None:
    # Whether a record mentions a known value is told from its strings one by one (the uri,
    # reason, header values and the body's strings, a binary body's bytes).
    redactor = _redactor()
    response: dict[str, Any] = {"status": 200, "headers": {}, "body": body}
    redactor.records(None, response, None)
    stored = response["body"][field]
    text = base64.b64decode(stored).decode("latin-1") if field == "base64" else json.dumps(stored)
    assert UNSHAPED not in text
    assert "<REDACTED:bearer-token>" in text


def test_known_values_are_found_split_across_stream_events_and_escaped() -> None:
    redactor = _redactor()
    half = len(UNSHAPED) // 2
    events = [
        {"type": "event", "data": {"delta": "key: "}},
        {"type": "event", "data": {"delta": UNSHAPED[:half]}},
        {"type": "event", "data": {"delta": UNSHAPED[half:]}},
    ]
    response: dict[str, Any] = {"headers": {}, "body": {"stream": "sse"}}
    assert redactor.records(None, response, events)
    assert [e["data"] for e in events[1:3]] == [{"delta": "<REDACTED:bearer-token>"}, {"delta": ""}]
    assert UNSHAPED[half:] not in json.dumps(events)
    assert redactor.known(f"a {UNSHAPED} b") == "a <REDACTED:bearer-token> b"


def test_placeholders_are_kept_whole_and_short_values_are_not_searched() -> None:
    redactor = Redactor(environ={})
    redactor.headers({"cookie": "a=xyz1"})  # a 4-character value: too likely elsewhere
    assert redactor.known("xyz1 appears in prose") == "xyz1 appears in prose"
    redactor.headers({"x-api-key": "REDACTED:bearer-token"})
    assert redactor.known("<REDACTED:bearer-token>") == "<REDACTED:bearer-token>"


def test_a_known_value_in_a_request_body_is_redacted_on_record_and_on_replay(
    tmp_path: Path,
    echo_server: str,  # noqa: F811
) -> None:
    path = tmp_path / "body.jsonl"
    body = {"model": "m", "where": "text", "note": f"my key is {UNSHAPED}"}
    headers = {"authorization": f"Bearer {UNSHAPED}"}
    with llmcassette.use_cassette(path), httpx.Client() as client:
        recorded = client.post(f"{echo_server}/echo/text", json=body, headers=headers)
    assert UNSHAPED not in path.read_text()
    with llmcassette.use_cassette(path, record_mode="none"), httpx.Client() as client:
        replayed = client.post(f"{echo_server}/echo/text", json=body, headers=headers)
    assert replayed.status_code == recorded.status_code == 200


@pytest.mark.parametrize("convert", [False, True], ids=["recorded", "converted"])
def test_a_value_a_later_call_names_a_secret_is_taken_out_of_earlier_calls(
    tmp_path: Path, convert: bool
) -> None:
    """The writer goes in order; the prompt that mentioned the password was written
    before the tool call that sends it under ``password`` made it a secret."""
    path = tmp_path / ("calls.yaml" if convert else "calls.jsonl")
    password = "radiance-gate"
    prompt = {"role": "user", "content": f"the passwords: mellon, {password}"}
    calls = [{"messages": [prompt]}, {"messages": [prompt], "password": password}]
    with (
        LocalProvider() as provider,
        vcr.VCR().use_cassette(str(path)) if convert else llmcassette.use_cassette(path),
        httpx.Client() as client,
    ):
        for body in calls:
            auth = {"authorization": "Bearer sk-test"}
            answer = client.post(
                f"{provider.url}/v1/chat/completions", json={"model": "m", **body}, headers=auth
            )
            assert answer.status_code == 200
    if convert:
        assert main(["convert", str(path)]) == 0
        path = path.with_suffix(".jsonl")
    text = path.read_text()
    assert password not in text
    # Both requests, and both answers (the local provider echoes the prompt).
    assert text.count("the passwords: mellon, <REDACTED:password>") == 4


def test_keep_json_keys_stores_a_tests_passwords_as_they_are(tmp_path: Path) -> None:
    """A suite whose test data are passwords keeps them; a key shape under the kept key
    is still replaced, and the fail-closed scan agrees with both."""
    path = tmp_path / "tools.jsonl"
    shaped = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3rS5tU7vW9xY1zA3bC5dE7fG9hJ1kL3"
    calls = [
        {"messages": [{"role": "user", "content": "the passwords: mellon, radiance-gate"}]},
        {"messages": [{"role": "user", "content": "look up"}], "password": "radiance-gate"},
        {"messages": [{"role": "user", "content": "look up"}], "password": shaped},
    ]
    auth = {"authorization": "Bearer sk-test"}
    redaction = {"keep_json_keys": ["password"]}
    with LocalProvider() as provider:
        url = f"{provider.url}/v1/chat/completions"
        with llmcassette.use_cassette(path, redaction=redaction), httpx.Client() as client:
            for body in calls:
                assert client.post(url, json={"model": "m", **body}, headers=auth).is_success
        text = path.read_text()
        assert '"password":"radiance-gate"' in text
        assert "the passwords: mellon, radiance-gate" in text
        assert shaped not in text
        with (
            llmcassette.use_cassette(path, record_mode="none", redaction=redaction),
            httpx.Client() as client,
        ):
            for body in calls:
                assert client.post(url, json={"model": "m", **body}, headers=auth).is_success


def test_a_mismatch_report_does_not_show_a_known_value(
    tmp_path: Path,
    echo_server: str,  # noqa: F811
) -> None:
    path = tmp_path / "mismatch.jsonl"
    headers = {"authorization": f"Bearer {UNSHAPED}"}
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(f"{echo_server}/echo/text", json={"where": "text"}, headers=headers)
    changed = {"where": "text", "prompt": f"use {UNSHAPED}"}
    with (
        llmcassette.use_cassette(path, record_mode="none"),
        httpx.Client() as client,
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        client.post(f"{echo_server}/echo/text", json=changed, headers=headers)
    rendered = "".join(
        str(e) for e in (caught.value, caught.value.__cause__, caught.value.__context__) if e
    )
    assert "<REDACTED:bearer-token>" in rendered
    assert UNSHAPED not in rendered


@pytest.mark.parametrize(
    ("value", "redacted"),
    [
        ("tok_9f8a7b6c5d4e3f2a1b0c", True),
        (UNSHAPED, True),
        ("colour", False),
        ("user_profile_settings", False),  # no digit: a name, not a token
        ("a sentence with 2 words and more", False),
        ("1234567890123456789", False),  # no letter: a number
    ],
)
def test_a_json_key_named_key_holds_a_credential_when_it_looks_like_one(
    value: str, redacted: bool
) -> None:
    redactor = Redactor(environ={})
    body = {"key": value, "tool": {"arguments": json.dumps({"key": value, "city": "Paris"})}}
    out = redactor.json(body)
    assert (out["key"] != value) is redacted
    assert (value not in out["tool"]["arguments"]) is redacted
    # The scan agrees with the redactor: what it left is clean, what it replaced is found.
    assert list(find_in_value(redactor.rules, out)) == []
    assert bool(list(find_in_value(redactor.rules, body))) is redacted


def _compressed_exchange(uri: str = "https://api.example.test/v1/chat") -> dict[str, Any]:
    request = Request("POST", uri, b'{"q": "hello"}', {"content-type": "application/json"})
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["application/json"], "content-encoding": ["compress"]},
        "body": {"string": zlib.compress(b'{"key": "anything could be in here"}') + b"\xff"},
    }
    return {"requests": [request], "responses": [response]}


SERIALIZERS = {"jsonl": (jsonl, ".jsonl"), "yaml": (yamlserializer, ".yaml")}


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_a_body_no_rule_can_read_is_refused(tmp_path: Path, serializer: str) -> None:
    module, suffix = SERIALIZERS[serializer]
    path = tmp_path / f"compressed{suffix}"
    persister = Persister(redactor=Redactor(environ={}))
    with pytest.raises(SecretLeakError) as caught:
        persister.save_cassette(path, _compressed_exchange(), serializer=module)
    assert not path.exists()
    assert caught.value.rule == UNSCANNABLE_BODY
    message = str(caught.value)
    assert "content-encoding llmcassette cannot decode" in message
    assert "allow_unscanned_bodies" in message


@pytest.mark.parametrize("serializer", SERIALIZERS)
def test_allow_unscanned_bodies_stores_them_as_they_are(tmp_path: Path, serializer: str) -> None:
    module, suffix = SERIALIZERS[serializer]
    path = tmp_path / f"compressed{suffix}"
    config = RedactionConfig(allow_unscanned_bodies=True)
    persister = Persister(redactor=Redactor(config, environ={}))
    persister.save_cassette(path, _compressed_exchange(), serializer=module)
    assert "compress" in path.read_text()


def test_a_compressed_request_body_is_decoded_and_scanned(tmp_path: Path) -> None:
    import base64
    import gzip

    from llmcassette.redact.scan import find_in_jsonl

    record = {
        "type": "request",
        "headers": {"content-encoding": "gzip"},
        "body": {"base64": base64.b64encode(gzip.compress(b'{"api_key": "hidden-123"}')).decode()},
    }
    rules = Redactor(environ={}).rules
    findings = find_in_jsonl(rules, json.dumps(record), "c.jsonl")
    assert [(f.json_path, f.rule) for f in findings] == [("body<json>.api_key", "api_key")]
