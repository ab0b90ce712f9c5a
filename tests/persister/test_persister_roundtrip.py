"""Saving vcrpy interactions with the persister and loading them back changes nothing."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from vcr.request import Request

from llmcassette._vcr import serializer
from llmcassette._vcr.persister import Persister

SETTINGS = settings(max_examples=60, derandomize=True, deadline=None, database=None)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)

SSE_SAMPLES = [
    b'data: {"a":1}\n\ndata: [DONE]\n\n',
    b'event: ping\ndata: {"type":"ping"}\n\n',
    b": keep-alive\r\n\r\ndata: x\r\n\r\n",
    b"data:no-space\rdata: \r\r",
    b'data: {"a": 1}\n\nid: 3\nretry: 10\ndata: tail',
    b"",
    b"\n\n\n",
    b'data: "\\ud800"\n\n',
    "data: \u2028é\n\n".encode(),
]


@st.composite
def body_and_type(draw: st.DrawFn) -> tuple[bytes, str | None]:
    shape = draw(st.sampled_from(["bytes", "text", "json", "sse", "ndjson", "gzip"]))
    if shape == "bytes":
        return draw(st.binary(max_size=40)), draw(
            st.sampled_from([None, "application/octet-stream", "application/json"])
        )
    if shape == "text":
        return draw(st.text(max_size=40)).encode(), draw(
            st.sampled_from([None, "text/plain", "text/event-stream"])
        )
    if shape == "json":
        value = draw(json_values)
        kwargs = draw(
            st.sampled_from(
                [{}, {"separators": (",", ":")}, {"indent": 2}, {"ensure_ascii": False}]
            )
        )
        return json.dumps(value, **kwargs).encode(), "application/json"
    if shape == "sse":
        return draw(st.sampled_from(SSE_SAMPLES)), "text/event-stream"
    if shape == "ndjson":
        lines = draw(st.lists(json_values, max_size=3))
        text = "".join(json.dumps(v) + "\n" for v in lines)
        return (text + draw(st.sampled_from(["", "\n", "{}"]))).encode(), "application/x-ndjson"
    return gzip.compress(draw(st.binary(max_size=40))), "application/octet-stream"


@st.composite
def vcr_interaction(draw: st.DrawFn) -> tuple[Request, dict[str, Any]]:
    request_body, request_type = draw(body_and_type())
    response_body, response_type = draw(body_and_type())
    request_headers = {"User-Agent": "t"}
    if request_type:
        request_headers["Content-Type"] = request_type
    response_headers: dict[str, list[str]] = {
        draw(st.sampled_from(["x-a", "X-B", "set-cookie"])): draw(
            st.lists(st.text(max_size=5), max_size=2)
        )
    }
    if response_type:
        response_headers["Content-Type"] = [response_type]
    request = Request(
        draw(st.sampled_from(["GET", "POST"])),
        draw(st.sampled_from(["http://127.0.0.1:1/a", "https://example.com/b?x=1"])),
        draw(st.sampled_from([None, request_body])),
        request_headers,
    )
    response = {
        "status": {"code": draw(st.integers(100, 599)), "message": draw(st.text(max_size=8))},
        "headers": response_headers,
        "body": {"string": response_body},
    }
    return request, response


@SETTINGS
@given(
    pairs=st.lists(vcr_interaction(), max_size=3),
    metadata=st.none() | st.dictionaries(st.text(max_size=4), json_values, min_size=1, max_size=2),
)
def test_save_then_load_is_lossless(
    pairs: list[tuple[Request, dict[str, Any]]], metadata: dict[str, Any] | None
) -> None:
    expected = [
        (
            r.method,
            r.uri,
            r.body,
            dict(r.headers),
            resp["status"],
            resp["headers"],
            resp["body"]["string"],
        )
        for r, resp in pairs
    ]
    data: dict[str, Any] = {"requests": [p[0] for p in pairs], "responses": [p[1] for p in pairs]}
    if metadata:
        data["metadata"] = metadata
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.jsonl"
        Persister().save_cassette(path, data, serializer=serializer)
        text = path.read_text(encoding="utf-8")
        loaded = Persister().load_cassette(path, serializer=serializer)
        requests, responses = loaded[0], loaded[1]
        got = [
            (
                r.method,
                r.uri,
                r.body,
                dict(r.headers),
                resp["status"],
                resp["headers"],
                resp["body"]["string"],
            )
            for r, resp in zip(requests, responses, strict=True)
        ]
        assert got == expected
        assert (loaded[2] if len(loaded) == 3 else None) == (metadata or None)
        # Saving what was loaded gives the very same file.
        again: dict[str, Any] = {"requests": requests, "responses": responses}
        if metadata:
            again["metadata"] = metadata
        Persister().save_cassette(path, again, serializer=serializer)
        assert path.read_text(encoding="utf-8") == text
        assert sorted(p.name for p in Path(folder).iterdir()) == ["c.jsonl"]
