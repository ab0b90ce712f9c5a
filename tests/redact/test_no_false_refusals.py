"""Differential test: wherever the fail-closed scan would refuse a secret, the redactor
redacts it first. Every place a secret can sit (the scan's catalogue of locations, in
test_scan_independent, and more), times every secret format of the rules (test_rules'
SHAPES, and a key with no shape where a name makes it a credential), is saved through the
real save path with the real redactor, as JSONL (the request redacted by the save, or as
a recording redacts it when it is sent) and as YAML. The save must go through (a
``SecretLeakError`` there is a false refusal: a recording stopped although llmcassette
could redact it) and the file must hold the secret in none of its forms (a leak).

The places this found were false refusals: a ``"headers"`` object inside a body, an event
or JSON text held by a string (a fetch tool's page, a webhook's echo), read by the scan by
header name; a ``"uri"`` with ``?token=`` in JSON text held by a string; a secret key in
JSON text held by JSON text; an event-stream frame header named as a credential. What the
scan refuses on purpose (``REFUSED``) is checked to stay refused; ordinary data in the
places redaction now reads more closely is checked to stay as it is (``ORDINARY``).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_plus

import pytest
import yaml
from vcr.cassette import Cassette
from vcr.request import Request
from vcr.serializers import yamlserializer

from llmcassette import _eventstream as wire
from llmcassette._vcr import persister as persister_module
from llmcassette._vcr import serializer as jsonl
from llmcassette._vcr.persister import Persister
from llmcassette.errors import SecretLeakError
from llmcassette.redact import Redactor
from llmcassette.redact.rules import char_refs_decoded

from .test_rules import ANTHROPIC, OPENAI, SHAPES
from .test_scan_independent import GOOGLE, LOCATIONS

# A key with no shape (Mistral, Cohere, DeepSeek): a secret only by where it is sent.
UNSHAPED = "Zq8rT2mW9xK4vB7nL3pF6hJ1cD5gS0aY"
SECRETS = [(kind, secret) for kind, values in SHAPES.items() for secret in values]
SECRETS.append(("unshaped", UNSHAPED))
# A key with no shape that the environment holds (MISTRAL_API_KEY): found anywhere.
ENVIRONMENT = {"MISTRAL_API_KEY": "Mq4TzP8wLr2VxK6nB9cJ3dH7fG1sA5eY"}
SECRETS.append(("environment", ENVIRONMENT["MISTRAL_API_KEY"]))

JSON = "application/json"


@dataclass
class Exchange:
    """One interaction, as a test would send and a server answer it."""

    uri: str = "https://api.example.test/v1/chat"
    request_headers: dict[str, Any] = field(default_factory=lambda: {"content-type": JSON})
    request_body: bytes = b'{"q": "hello"}'
    status: str = "OK"
    response_headers: dict[str, list[str]] = field(default_factory=lambda: {"content-type": [JSON]})
    response_body: bytes = b'{"a": "fine"}'
    metadata: dict[str, Any] | None = None

    def cassette_dict(self) -> dict[str, Any]:
        request = Request("POST", self.uri, self.request_body, dict(self.request_headers))
        response = {
            "status": {"code": 200, "message": self.status},
            "headers": self.response_headers,
            "body": {"string": self.response_body},
        }
        data: dict[str, Any] = {"requests": [request], "responses": [response]}
        if self.metadata is not None:
            data["metadata"] = self.metadata
        return data


def _request_json(value: Any, **headers: str) -> Exchange:
    return Exchange(
        request_headers={"content-type": JSON, **headers}, request_body=json.dumps(value).encode()
    )


def _response(body: bytes, content_type: str = JSON, **headers: str) -> Exchange:
    listed = {name.replace("_", "-"): [value] for name, value in headers.items()}
    return Exchange(response_headers={"content-type": [content_type], **listed}, response_body=body)


def _response_json(value: Any) -> Exchange:
    return _response(json.dumps(value).encode())


def _sse(*events: Any) -> Exchange:
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    return _response(text.encode(), "text/event-stream")


def _frames(*frames: bytes) -> Exchange:
    return _response(b"".join(frames), wire.CONTENT_TYPE)


def _multipart(name: str, value: bytes, before: bytes = b"") -> Exchange:
    body = (
        b"--b\r\n" + before + b'Content-Disposition: form-data; name="' + name.encode() + b'"'
        b"\r\n\r\n" + value + b"\r\n--b--\r\n"
    )
    return Exchange(
        request_headers={"content-type": "multipart/form-data; boundary=b"}, request_body=body
    )


def _char_refs(secret: str) -> str:
    return "&#" + str(ord(secret[0])) + ";" + secret[1:].replace("-", "&#x2d;")


def _url(secret: str) -> str:
    return quote(secret, safe="")


# Where a secret is put, by shape (any string: only a shaped secret is found there) or by
# name (a header, key or parameter that names a credential: any secret, shaped or not).
Place = Callable[[str], Exchange]
BY_SHAPE: dict[str, Place] = {
    "a request header of no credential name": lambda s: Exchange(
        request_headers={"content-type": JSON, "x-note": f"key {s}"}
    ),
    "a URL path": lambda s: Exchange(uri=f"https://api.example.test/v1/files/{_url(s)}/content"),
    "a request JSON string": lambda s: _request_json({"messages": [{"content": f"my key {s}"}]}),
    "a request JSON object's key": lambda s: _request_json({"metadata": {s: "primary"}}),
    "a key of JSON text held in a string": lambda s: _request_json({"a": json.dumps({s: 1})}),
    "a request JSON string, \\u-escaped": lambda s: Exchange(
        request_body=(f'{{"q": "\\u{ord(s[0]):04x}' + json.dumps(s[1:])[1:]).encode()
    ),
    "a request JSON string, URL-encoded": lambda s: _request_json({"next": "/v1?x=" + _url(s)}),
    "base64 text in a request JSON body": lambda s: _request_json(
        {"file": {"data": base64.b64encode(f"key={s}".encode()).decode()}}
    ),
    "a multipart body that is not UTF-8": lambda s: _multipart(
        "note", s.encode(), b'Content-Disposition: form-data; name="f"\r\n\r\n\xff\xd8\r\n--b\r\n'
    ),
    "a response header of no credential name": lambda s: _response(b"{}", x_debug=f"key {s}"),
    'a header\'s name in a "headers" object of a body': lambda s: _request_json(
        {"headers": {s: "1", "cookie": "theme=dark"}}
    ),
    "a response header's name": lambda s: Exchange(
        response_headers={"content-type": [JSON], s: ["1"]}
    ),
    "a response header that redaction drops": lambda s: _response(b"{}", cf_ray=s),
    "the reason phrase": lambda s: Exchange(status=f"OK {s}"),
    "a response JSON string": lambda s: _response_json({"token_info": s}),
    "a response gzip body": lambda s: Exchange(
        response_headers={"content-type": [JSON], "content-encoding": ["gzip"]},
        response_body=gzip.compress(json.dumps({"echo": f"key={s}"}).encode()),
    ),
    "a gzip request body": lambda s: Exchange(
        request_headers={"content-type": JSON, "content-encoding": "gzip"},
        request_body=gzip.compress(json.dumps({"note": f"key {s}"}).encode()),
    ),
    "a deflate request body": lambda s: Exchange(
        request_headers={"content-type": JSON, "content-encoding": "deflate"},
        request_body=zlib.compress(json.dumps({"note": f"key {s}"}).encode()),
    ),
    "an HTML body, character references": lambda s: _response(
        f"<p>{_char_refs(s)}</p>".encode(), "text/html"
    ),
    "a streamed SSE event": lambda s: _sse({"choices": [{"delta": {"content": s}}]}),
    "a key streamed in two SSE events": lambda s: _sse(
        {"choices": [{"delta": {"content": "key " + s[: len(s) // 2]}}]},
        {"choices": [{"delta": {"content": s[len(s) // 2 :] + " ok"}}]},
    ),
    "a streamed SSE event's key": lambda s: _sse({"usage": {s: 1}}),
    "an AWS event-stream frame's string header": lambda s: _frames(
        wire.encode_frame(wire.string_headers([(":event-type", "x"), ("note", s)]), b"{}")
    ),
    "an AWS event-stream frame's bytes header": lambda s: _frames(
        wire.encode_frame(
            (
                *wire.string_headers([(":event-type", "x")]),
                wire.Header("t", wire.BYTES, s.encode()),
            ),
            b"{}",
        )
    ),
    "a Bedrock InvokeModel chunk": lambda s: _frames(
        wire.encode_frame(
            wire.string_headers([(":event-type", "chunk"), (":message-type", "event")]),
            json.dumps(
                {"bytes": base64.b64encode(json.dumps({"delta": {"text": s}}).encode()).decode()}
            ).encode(),
        )
    ),
    "an AWS event-stream payload that is not UTF-8": lambda s: _frames(
        wire.encode_frame(wire.string_headers([(":event-type", "audio")]), b"\xff " + s.encode())
    ),
    "an AWS event-stream frame cut short": lambda s: _frames(
        wire.encode_frame(wire.string_headers([(":event-type", "x")]), f"key {s}".encode())[:-4]
    ),
}
BY_NAME: dict[str, Place] = {
    "the authorization header": lambda s: Exchange(
        request_headers={"content-type": JSON, "authorization": f"Bearer {s}"}
    ),
    "the x-api-key header": lambda s: Exchange(
        request_headers={"content-type": JSON, "x-api-key": s}
    ),
    "a *-token header": lambda s: Exchange(
        request_headers={"content-type": JSON, "x-service-token": s}
    ),
    "the cookie header": lambda s: Exchange(
        request_headers={"content-type": JSON, "cookie": f"session={_url(s)}"}
    ),
    "a ?key= parameter": lambda s: Exchange(uri=f"https://api.example.test/v1/chat?key={_url(s)}"),
    "a ?token= parameter": lambda s: Exchange(uri=f"https://h.test/v1?a=1&token={_url(s)}"),
    "URL userinfo": lambda s: Exchange(uri=f"https://user:{_url(s)}@api.example.test/v1"),
    "a request JSON api_key": lambda s: _request_json({"q": "hi", "api_key": s}),
    "a request JSON accessToken": lambda s: _request_json({"auth": {"accessToken": s}}),
    "a request JSON api_key list": lambda s: _request_json({"api_key": [s]}),
    "a request JSON key given twice": lambda s: Exchange(
        request_body=(
            '{"api_key": ' + json.dumps(s) + ', "api_key": "<REDACTED:api_key>"}'
        ).encode()
    ),
    "a secret key in JSON text held in a string": lambda s: _request_json(
        {"arguments": json.dumps({"user": "bob", "api_key": s})}
    ),
    "a secret key in JSON text held twice over": lambda s: _request_json(
        {"a": json.dumps({"b": json.dumps({"api_key": s})})}
    ),
    'a "uri" with ?token=': lambda s: _request_json({"uri": f"https://f.test/a?token={_url(s)}"}),
    'a "uri" with ?token= in JSON text': lambda s: _request_json(
        {"content": json.dumps({"uri": f"https://f.test/a?token={_url(s)}"})}
    ),
    'a "uri" with ?api_key= in JSON text held twice over': lambda s: _request_json(
        {"a": json.dumps({"content": json.dumps({"uri": f"https://f.test/?api_key={_url(s)}"})})}
    ),
    'a "uri" with ?token= in a response': lambda s: _response_json(
        {"contents": [{"uri": f"https://f.test/a?token={_url(s)}"}]}
    ),
    'a "uri" with ?token= in a streamed event': lambda s: _sse(
        {"resource": {"uri": f"https://f.test/a?token={_url(s)}"}}
    ),
    'JSON text under a "uri" key': lambda s: _request_json({"uri": json.dumps({"api_key": s})}),
    'a "headers" object in a request body: authorization': lambda s: _request_json(
        {"headers": {"authorization": f"Bearer {s}"}}
    ),
    'a "headers" object in a request body: x-api-key': lambda s: _request_json(
        {"headers": {"X-Api-Key": s}}
    ),
    'a "headers" object in a request body: cookie, as a list': lambda s: _request_json(
        {"headers": {"cookie": [f"session={_url(s)}"]}}
    ),
    'a "headers" object in a tool message': lambda s: _request_json(
        {
            "messages": [
                {
                    "role": "tool",
                    "content": json.dumps(
                        {"status": 200, "headers": {"set-cookie": f"a={_url(s)}"}}
                    ),
                }
            ]
        }
    ),
    'a "headers" object in a response body (a webhook echo)': lambda s: _response_json(
        {"headers": {"authorization": f"Bearer {s}", "set-cookie": f"sid={_url(s)}; Path=/"}}
    ),
    'a "headers" object in a streamed event': lambda s: _sse(
        {"echo": {"headers": {"x-goog-api-key": s}}}
    ),
    "a URL-encoded form body": lambda s: Exchange(
        request_headers={"content-type": "application/x-www-form-urlencoded"},
        request_body=f"q=hi&api_key={_url(s)}".encode(),
    ),
    "a multipart form field": lambda s: _multipart("api_key", s.encode()),
    'a "headers" object in a response body: a URL with ?token=': lambda s: _response_json(
        {"headers": {"location": f"https://h.test/cb?token={_url(s)}"}}
    ),
    'a "headers" object in a request body: openai-organization': lambda s: _request_json(
        {"headers": {"OpenAI-Organization": s}}
    ),
    'a "headers" object in JSON text held twice over': lambda s: _request_json(
        {"a": json.dumps({"content": json.dumps({"headers": {"cookie": f"s={_url(s)}"}})})}
    ),
    'a "headers" object in a streamed event\'s JSON text': lambda s: _sse(
        {"delta": {"arguments": json.dumps({"headers": {"set-cookie": f"s={_url(s)}"}})}}
    ),
    'a "uri" with ?token= in a streamed event\'s JSON text': lambda s: _sse(
        {"delta": {"arguments": json.dumps({"uri": f"https://f.test/a?token={_url(s)}"})}}
    ),
    "an AWS event-stream frame's header named as a credential": lambda s: _frames(
        wire.encode_frame(
            wire.string_headers([(":event-type", "x"), ("x-amz-security-token", s)]), b"{}"
        )
    ),
    "a ?token= URL in a request header of no credential name": lambda s: Exchange(
        request_headers={"content-type": JSON, "x-callback": f"https://h.test/cb?token={_url(s)}"}
    ),
    "a Basic credential": lambda s: Exchange(
        request_headers={
            "content-type": JSON,
            "proxy-authorization": "Basic " + base64.b64encode(f"user:{s}".encode()).decode(),
        }
    ),
    "the x-amz-date request header": lambda s: Exchange(
        request_headers={"content-type": JSON, "x-amz-date": s}
    ),
    "an XML request body": lambda s: Exchange(
        request_headers={"content-type": "application/xml"},
        request_body=f"<A><Password>{s}</Password></A>".encode(),
    ),
    'XML under a "uri" key': lambda s: _request_json(
        {"uri": f"<R><SessionToken>{s}</SessionToken></R>"}
    ),
    "a secret key in a streamed tool call's arguments, in pieces": lambda s: _sse(
        {"delta": {"arguments": '{"api_key": "' + json.dumps(s)[1:12]}},
        {"delta": {"arguments": json.dumps(s)[12:-1] + '"}'}},
    ),
    "a URL-encoded form response (an OAuth token endpoint)": lambda s: _response(
        f"access_token={_url(s)}&scope=repo".encode(), "application/x-www-form-urlencoded"
    ),
    'a "headers" object in Gemini\'s streamed JSON array': lambda s: Exchange(
        uri="https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent",
        response_body=json.dumps(
            [{"candidates": []}, {"headers": {"cookie": f"sid={_url(s)}"}}], indent=1
        ).encode(),
    ),
    "the set-cookie response header": lambda s: _response(b"{}", set_cookie=f"s={_url(s)}; Path=/"),
    "a ?token= in the location header": lambda s: _response(
        b"{}", location=f"https://h.test/cb?token={_url(s)}"
    ),
    "the openai-organization response header": lambda s: _response(b"{}", openai_organization=s),
    "a response JSON access_token": lambda s: _response_json({"access_token": s}),
    "a response XML SessionToken": lambda s: _response(
        f"<R><SessionToken>{s}</SessionToken></R>".encode(), "text/xml"
    ),
    "a secret key in a response's tool call arguments": lambda s: _response_json(
        {"tool_calls": [{"function": {"arguments": json.dumps({"api_key": s})}}]}
    ),
    "a streamed SSE event's access_token": lambda s: _sse({"access_token": s}),
    "a streamed NDJSON event's password": lambda s: _response(
        b'{"n": 1}\n' + json.dumps({"password": s}).encode() + b"\n", "application/x-ndjson"
    ),
}

# Where the scan refuses a secret on purpose, and redaction leaves it: what a test stores
# as the cassette's metadata is what it reads back on replay, so a placeholder there would
# change the test's own data (docs/redaction.md).
REFUSED: dict[str, Place] = {
    "the cassette's metadata": lambda s: Exchange(metadata={"note": f"key {s}"}),
}

# What can travel where: a private key block (line ends) is no header value or URL part.
_ONE_LINE = {"a request header of no credential name", "a response header of no credential name"}


# Where a secret is found by the name it travels under, its shape matters less: the key
# with none, and shapes of every make (dots, line ends, "=" padding, a "-" or "_" inside).
_BY_NAME_KINDS = {
    "unshaped",
    "environment",
    "openai-api-key",
    "jwt",
    "google-oauth-token",
    "private-key",
}


def _secrets(place: str) -> list[tuple[str, str]]:
    """The secrets put in ``place``: every shape there where only a shape tells."""
    if place in BY_SHAPE:
        return [(kind, secret) for kind, secret in SECRETS if kind != "unshaped"]
    first = {}
    for kind, secret in SECRETS:
        if kind in _BY_NAME_KINDS:
            first.setdefault(kind, secret)
    return list(first.items())


MODES = ["jsonl", "jsonl as recorded", "yaml"]


@pytest.fixture
def disk_without_syncs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Saves without the lock file and the fsync that make them durable (most of a save's
    time on some disks): the redaction, the scan and the write are the real ones."""
    monkeypatch.setattr(persister_module, "locked", _unlocked)
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@contextlib.contextmanager
def _unlocked(path: Path, timeout: float = 0) -> Iterator[None]:
    yield None


def _save(path: Path, data: dict[str, Any], mode: str) -> None:
    redactor = Redactor(environ=ENVIRONMENT)
    persister = Persister(redactor=redactor)
    if mode == "jsonl as recorded":
        # As a recording does: vcrpy's before_record_request redacted the request as it
        # was sent, and the save does not redo it.
        requests = []
        for request in data["requests"]:
            sent = redactor.vcr_request(copy.deepcopy(request))
            sent.redacted_by = redactor
            requests.append(sent)
        data = {**data, "requests": requests}
    persister.save_cassette(path, data, serializer=yamlserializer if mode == "yaml" else jsonl)


def _strings(value: Any) -> Iterator[str]:
    """Every string the file holds, decoded every way the scan decodes it: JSON text in a
    string parsed, base64 and YAML's binary decoded, gzip and deflate undone."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, bytes):
        if value[:2] == b"\x1f\x8b":
            value = gzip.decompress(value)
        elif value[:1] == b"\x78":  # a zlib stream (deflate), if it is one
            with contextlib.suppress(zlib.error):
                value = zlib.decompress(value)
        yield from _strings(value.decode("latin-1"))
    elif isinstance(value, str):
        yield value
        yield unquote_plus(value)
        yield char_refs_decoded(value)
        if value.startswith(("{", "[")):
            with contextlib.suppress(ValueError):
                yield from _strings(json.loads(value))
        try:
            decoded = base64.b64decode(value, validate=True)
        except ValueError:
            return
        if decoded:
            yield from _strings(decoded)


def _leaked(path: Path, secret: str) -> bool:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yaml":
        parsed: Any = yaml.load(text, Loader=yaml.Loader)  # our own file: !!binary
    else:
        parsed = [json.loads(line) for line in text.splitlines() if line.strip()]
    return any(secret in string for string in _strings([text, parsed]))


@pytest.mark.parametrize("place", [*BY_SHAPE, *BY_NAME])
def test_what_the_scan_refuses_the_redactor_redacts(
    tmp_path: Path, disk_without_syncs: None, place: str
) -> None:
    put = {**BY_SHAPE, **BY_NAME}[place]
    problems = []
    for index, (kind, secret) in enumerate(_secrets(place)):
        if "\n" in secret and place in _ONE_LINE:
            continue  # no line end in a header value
        for mode in MODES:
            path = tmp_path / f"{index}-{mode}.{'yaml' if mode == 'yaml' else 'jsonl'}"
            try:
                _save(path, put(secret).cassette_dict(), mode)
            except SecretLeakError as refused:
                problems.append(f"{kind}, {mode}: refused: {refused.findings}")
                continue
            if _leaked(path, secret):
                problems.append(f"{kind}, {mode}: written in clear")
    assert problems == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", list(REFUSED))
def test_what_is_refused_on_purpose_stays_refused(
    tmp_path: Path, disk_without_syncs: None, place: str, mode: str
) -> None:
    if "metadata" in place and mode == "yaml" and not hasattr(Cassette, "get_metadata"):
        pytest.skip("this vcrpy writes no cassette metadata, so there is nothing to leak")
    path = tmp_path / ("c.yaml" if mode == "yaml" else "c.jsonl")
    secret = SHAPES["openai-api-key"][0]
    with pytest.raises(SecretLeakError):
        _save(path, REFUSED[place](secret).cassette_dict(), mode)
    assert not path.exists()


# Ordinary data in the places redaction reads more closely now: a "headers" object of no
# credential, a "uri" without a secret parameter, JSON text held in JSON text, an image.
ORDINARY = {
    "a page's headers": {
        "headers": {
            "content-type": "text/html; charset=utf-8",
            "x-request-id": "req_8e5d38a8140e1825a15a7a9d2932fca6",
            "www-authenticate": 'Bearer realm="api", error="invalid_token"',
            "x-time-per-token": "21",
            "x-ratelimit-remaining-tokens": "149000",
            "cf-ray": "8d5e7f3a2b1c4d6e-AMS",
            "location": "https://example.com/next?page=2&sort=asc",
            "vary": ["accept-encoding", "origin"],
        }
    },
    "a book's headers": {"headers": {"author": "Jane Austen", ":authority": "api.example.com"}},
    "a tool call that quotes code": {
        "arguments": json.dumps({"code": 'print("hello, \\"world\\"")', "uri": "file:///tmp/a.txt"})
    },
    "JSON text held in JSON text": {
        "content": json.dumps(
            {"uri": "https://example.com/a?page=2", "note": json.dumps({"q": 'what is "auth"?'})}
        )
    },
    "a model turn that echoes headers": {
        "messages": [
            {"role": "assistant", "content": json.dumps({"headers": {"accept": "*/*"}}, indent=2)}
        ]
    },
    "an image": {
        "image": {"data": base64.b64encode(bytes(range(256)) * 64).decode(), "headers": {}}
    },
}


@pytest.mark.parametrize("response", [False, True])
@pytest.mark.parametrize("name", list(ORDINARY))
def test_ordinary_data_is_left_as_it_is(name: str, response: bool) -> None:
    text = json.dumps(ORDINARY[name])
    redactor = Redactor(environ={})
    assert redactor.body_text(text, JSON, response=response) == text
    assert redactor.json(ORDINARY[name], response=response) == ORDINARY[name]
    events = [{"data": copy.deepcopy(ORDINARY[name])}]
    redactor.events(events)
    assert events == [{"data": ORDINARY[name]}]
    assert redactor.changes == 0


def test_a_headers_object_that_says_which_part_it_is_is_read_by_header_name() -> None:
    # An object with an "index" puts it in the path of its strings (the part of an answer
    # it carries): still a "headers" object to the scan.
    events = [{"data": {"headers": {"index": 0, "cookie": f"sid={UNSHAPED}"}}}]
    Redactor(environ={}).events(events)
    assert events == [{"data": {"headers": {"index": 0, "cookie": "sid=<REDACTED:cookie>"}}}]


# The scan's own catalogue (test_scan_independent): each place it must refuse a key in when
# redaction does nothing, saved with the real redactor. What it refuses on purpose aside.
_CATALOGUE_REFUSED = {"the cassette's metadata (cassette.get_metadata)"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "location", [place for place in LOCATIONS if place not in _CATALOGUE_REFUSED]
)
def test_every_place_of_the_scans_catalogue_is_redacted(
    tmp_path: Path, disk_without_syncs: None, location: str, mode: str
) -> None:
    data, _ = LOCATIONS[location]
    path = tmp_path / ("c.yaml" if mode == "yaml" else "c.jsonl")
    _save(path, copy.deepcopy(data), mode)
    for secret in (OPENAI, ANTHROPIC, GOOGLE, "plain-key-0123", "org-Planted42"):
        assert not _leaked(path, secret)


def test_the_places_of_the_catalogue_left_out_are_in_it() -> None:
    # (a place renamed there would otherwise drop out of the list above unseen)
    assert set(LOCATIONS) >= _CATALOGUE_REFUSED
