"""The round trip of `llmcassette convert` (issue #25): for generated cassettes in every
vcrpy shape it reads, `convert` then `convert --to vcrpy-json` gives back every request
and response body, header value and status byte for byte, except the spans redaction
replaced, which `convert --json` lists per rule.

What legitimately differs, and is compared as such: a response sent gzip-encoded is stored
decoded (its ``content-encoding`` goes and ``content-length`` counts the decoded bytes);
a binary body cannot be held by vcrpy's JSON serializer, so it is compared in the JSONL
cassette and ``--to vcrpy-json`` refuses it with LC111; a lowercase method comes back
upper-cased; an early-stub response (``status_code`` + ``content``) comes back in today's
shape, with an empty reason.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import string
from contextlib import redirect_stdout
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.main import main
from llmcassette.redact.rules import Rules

RULES = Rules(environ={})
SECRET = "sk-proj-" + "R0undTr1p" * 5  # an OpenAI-shaped key: always redacted
PLACEHOLDER = re.compile(r"<REDACTED:[A-Za-z0-9_.\-]+(?::[0-9]+)?>")


def clean(value: str) -> bool:
    """Whether no redaction rule touches ``value`` (then it must come back as it was)."""
    return not RULES.kinds_in(value)


words = st.text(string.ascii_letters + string.digits + " .,:;!?'()/{}é€", max_size=40).filter(clean)
marker_text = st.builds(lambda a, b: a + "{{fromRequest:x}}" + b, words, words)
texts = st.one_of(words, marker_text)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | words,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=8,
)
json_texts = st.builds(
    lambda value, layout: json.dumps(value, **layout),
    st.dictionaries(st.sampled_from(["id", "model", "choices", "note"]), json_values, max_size=4),
    st.sampled_from([{}, {"separators": (",", ":")}, {"indent": 2}]),
)
header_names = st.from_regex(r"x-[a-z]{1,8}", fullmatch=True).filter(
    lambda name: RULES.header_action(name) == "scan"
)
header_values = st.text(string.ascii_letters + string.digits + " ;=/.", min_size=1, max_size=20)
headers = st.dictionaries(
    header_names, st.lists(header_values.filter(clean), min_size=1, max_size=2), max_size=3
)
sse_chunks = st.lists(
    st.builds(lambda text: json.dumps({"choices": [{"delta": {"content": text}}]}), words),
    min_size=1,
    max_size=4,
)


@st.composite
def response_bodies(draw: Any) -> tuple[bytes, dict[str, list[str]], str]:
    """A body, the headers that say what it is, and its kind."""
    kind = draw(st.sampled_from(["text", "json", "binary", "gzip", "stream"]))
    if kind == "text":
        return draw(texts).encode(), {"content-type": ["text/plain"]}, kind
    if kind == "json":
        return draw(json_texts).encode(), {"content-type": ["application/json"]}, kind
    if kind == "binary":
        return (
            b"\x89PNG\r\n\x1a\n" + draw(st.binary(max_size=30)),
            {"content-type": ["image/png"]},
            kind,
        )
    if kind == "gzip":
        body = gzip.compress(draw(json_texts).encode(), mtime=0)
        return body, {"content-type": ["application/json"], "content-encoding": ["gzip"]}, kind
    chunks = draw(sse_chunks)
    body = "".join(f"data: {c}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode(), {"content-type": ["text/event-stream"]}, kind


@st.composite
def interactions(draw: Any) -> dict[str, Any]:
    body, body_headers, kind = draw(response_bodies())
    request_body = draw(st.none() | json_texts)
    return {
        "method": draw(st.sampled_from(["POST", "GET", "post", "put"])),
        "uri": "https://api.example.test/v1/" + draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True)),
        "request_headers": {**draw(headers), "authorization": [f"Bearer {SECRET}"]},
        "request_body": request_body,
        "status": draw(st.sampled_from([200, 201, 400, 404, 429, 500, 503])),
        "reason": draw(st.sampled_from(["OK", "Bad Request", "whatever"])),
        "response_headers": {**draw(headers), **body_headers},
        "body": body,
        "kind": kind,
        "stub": draw(st.sampled_from(["today", "early-httpx"])),
    }


def vcrpy_response(item: dict[str, Any], text_bodies: bool) -> dict[str, Any]:
    body: bytes = item["body"]
    string_body: bytes | str = body.decode() if text_bodies and item["kind"] != "binary" else body
    if item["stub"] == "early-httpx" and item["kind"] not in ("binary", "gzip"):
        # vcrpy's first httpx stub: the status as status_code, the body decoded as content
        return {
            "status_code": item["status"],
            "http_version": "HTTP/1.1",
            "headers": item["response_headers"],
            "content": body.decode(),
        }
    return {
        "status": {"code": item["status"], "message": item["reason"]},
        "headers": item["response_headers"],
        "body": {"string": string_body},
    }


def source_text(items: list[dict[str, Any]], layout: str, serializer: str) -> tuple[str, bytes]:
    requests = [
        {
            "method": item["method"],
            "uri": item["uri"],
            "headers": item["request_headers"],
            "body": item["request_body"],
        }
        for item in items
    ]
    responses = [vcrpy_response(item, text_bodies=serializer == "json") for item in items]
    if layout == "interactions":
        data: dict[str, Any] = {
            "interactions": [
                {"request": q, "response": r} for q, r in zip(requests, responses, strict=True)
            ],
            "version": 1,
        }
    else:  # langchain's custom serializer: the two lists as they are
        data = {"requests": requests, "responses": responses}
    if serializer == "json":
        return ".json", json.dumps(data).encode()
    return ".yaml", yaml.safe_dump(data, allow_unicode=True).encode()


def expected_response(item: dict[str, Any]) -> tuple[bytes, dict[str, list[str]], str]:
    body, headers = item["body"], dict(item["response_headers"])
    if item["kind"] == "gzip":
        body = gzip.decompress(body)
        headers.pop("content-encoding")
    reason = (
        ""
        if item["stub"] == "early-httpx" and item["kind"] not in ("binary", "gzip")
        else item["reason"]
    )
    return body, headers, reason


def expected_request_headers(item: dict[str, Any]) -> dict[str, list[str]]:
    return {**item["request_headers"], "authorization": ["Bearer <REDACTED:openai-api-key>"]}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    items=st.lists(interactions(), min_size=1, max_size=3),
    layout=st.sampled_from(["interactions", "requests/responses"]),
    serializer=st.sampled_from(["yaml", "json"]),
    compressed=st.booleans(),
)
def test_convert_and_back_gives_every_byte_outside_redacted_spans(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[dict[str, Any]],
    layout: str,
    serializer: str,
    compressed: bool,
) -> None:
    if serializer == "json":  # vcrpy's JSON serializer holds text only
        items = [item for item in items if item["kind"] not in ("binary", "gzip")]
        if not items:
            return
    folder = tmp_path_factory.mktemp("roundtrip")
    suffix, raw = source_text(items, layout, serializer)
    source = folder / ("c" + suffix + (".gz" if compressed else ""))
    source.write_bytes(gzip.compress(raw, mtime=0) if compressed else raw)

    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["convert", "--json", str(source)])
    assert code == 0, printed.getvalue()
    (result,) = json.loads(printed.getvalue())["results"]
    # Only the planted key was replaced, once per request, and convert says so per rule.
    assert result["redacted"] == {"openai-api-key": 1}

    jsonl = folder / "c.jsonl"
    stored = cassette_file.read(jsonl.read_bytes(), jsonl).interactions
    assert len(stored) == len(items)
    for item, got in zip(items, stored, strict=True):
        body, response_headers, reason = expected_response(item)
        assert (got.method, got.uri, got.status, got.reason) == (
            item["method"].upper(),
            item["uri"],
            item["status"],
            reason,
        )
        assert got.request_headers == expected_request_headers(item)
        assert got.request_body == (
            None if item["request_body"] is None else item["request_body"].encode()
        )
        assert got.response_body.replace(b"{{!fromRequest", b"{{fromRequest") == body
        decoded_length = (
            {"content-length": [str(len(body))]} if "content-length" in got.response_headers else {}
        )
        assert got.response_headers == {**response_headers, **decoded_length}

    binary = any(
        item["kind"] in ("binary", "gzip") and b"\x89PNG" in item["body"] for item in items
    )
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(
            ["convert", "--json", "--to", "vcrpy-json", "--out", str(folder / "back"), str(jsonl)]
        )
    if binary:
        assert code == 2
        (error,) = json.loads(printed.getvalue())["errors"]
        assert error["code"] == "LC111 binary-body-in-json"
        first = next(  # numbered from 1, as every message numbers interactions
            number
            for number, item in enumerate(items, start=1)
            if item["kind"] in ("binary", "gzip") and b"\x89PNG" in item["body"]
        )
        assert error["message"].startswith(
            f"interaction #{first} ({items[first - 1]['method'].upper()} "
        )
        return
    assert code == 0
    back = json.loads((folder / "back" / "c.json").read_text())["interactions"]
    for item, entry in zip(items, back, strict=True):
        body, response_headers, reason = expected_response(item)
        request, response = entry["request"], entry["response"]
        assert request["method"] == item["method"].upper()
        assert request["uri"] == item["uri"]
        assert request["headers"] == expected_request_headers(item)
        assert request["body"] == item["request_body"]
        assert response["status"] == {"code": item["status"], "message": reason}
        assert response["body"]["string"].encode() == body
        if item["kind"] != "gzip":
            assert response["headers"] == response_headers
        assert not PLACEHOLDER.search(json.dumps(response))  # nothing of the answer redacted
