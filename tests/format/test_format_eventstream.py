"""AWS event-stream bodies in a cassette: one event line per frame, rebuilt byte for byte;
redaction and the fail-closed scan read the decoded payloads."""

from __future__ import annotations

import base64
import json

import pytest
from _eventstream_frames import EVENT
from _eventstream_frames import chunk as _chunk

from llmcassette import _eventstream as wire
from llmcassette.cassette import jsonl
from llmcassette.cassette.jsonl import Cassette, Interaction


def test_a_cassette_stores_one_line_per_frame_and_rebuilds_the_body(tmp_path: object) -> None:
    frames = [
        wire.encode_frame(EVENT, b'{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"ab"}'),
        _chunk(b'{"type":"message_stop"}'),
    ]
    cut = wire.encode_frame(EVENT, b'{"contentBlockIndex":0}')[:20]  # a stream cut mid-frame
    body = b"".join(frames) + cut
    item = Interaction(
        method="POST",
        uri="http://127.0.0.1:9/model/m/converse-stream",
        request_headers={"content-type": ["application/json"]},
        request_body=b"{}",
        status=200,
        reason="OK",
        response_headers={"content-type": [wire.CONTENT_TYPE]},
        response_body=body,
    )
    text = jsonl.write(Cassette(jsonl.new_header("test"), [item]))
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[2]["body"] == {"stream": "eventstream"}
    events = [line for line in lines if line.get("type") == "event"]
    assert len(events) == 3
    assert events[0]["headers"][":event-type"] == "contentBlockDelta"
    assert events[0]["data"]["delta"] == {"text": "Hi"}
    assert events[1]["data"]["bytes"] == {"type": "message_stop"}
    assert events[2] == {"type": "event", "base64": base64.b64encode(cut).decode()}
    assert lines[-1]["events"] == 3
    back = jsonl.read(text.encode(), "c.jsonl").interactions[0]
    assert back.stream == "eventstream"
    assert back.response_body == body


def test_bad_records_fail_the_load() -> None:
    head = jsonl.new_header("test")
    request = {"type": "request", "method": "POST", "uri": "http://h/", "headers": {}, "body": None}
    response = {"type": "response", "status": 200, "headers": {}, "body": {"stream": "eventstream"}}
    for event, problem in [
        ({"type": "event", "data": {}}, "needs 'headers'"),
        ({"type": "event", "headers": {"n": {"float": 1}}}, "unknown type 'float'"),
        ({"type": "event", "headers": {}, "chunk": "json", "data": {}}, "field 'chunk'"),
    ]:
        text = "\n".join(json.dumps(r) for r in (head, request, response, event))
        text += '\n{"type": "end", "events": 1}\n'
        with pytest.raises(jsonl.CassetteFormatError, match=problem):
            jsonl.read(text.encode(), "c.jsonl")


def test_a_key_inside_an_invoke_chunk_is_redacted_and_the_scan_sees_it() -> None:
    from llmcassette.config import resolve_redaction
    from llmcassette.errors import SecretLeakError
    from llmcassette.redact import Redactor
    from llmcassette.redact.scan import check_text

    key = "ASIA" + "LOCALPROVIDERKEY"
    # A long answer: its base64 is a run of 256+ characters, which the shapes skip as
    # encoded data; decoded, the key is plain text for the redactor and the scan.
    inner = json.dumps({"type": "content_block_delta", "delta": {"text": f"{'x' * 300} {key}"}})
    item = Interaction(
        method="POST",
        uri="http://127.0.0.1:9/model/m/invoke-with-response-stream",
        request_headers={},
        request_body=None,
        status=200,
        reason="OK",
        response_headers={"content-type": [wire.CONTENT_TYPE]},
        response_body=_chunk(inner.encode()),
    )
    redactor = Redactor(resolve_redaction(None))
    redacted = jsonl.write(Cassette(jsonl.new_header("t"), [item]), redaction=redactor)
    assert key not in redacted
    assert "<REDACTED:aws-access-key-id>" in redacted
    check_text(redactor.rules, redacted, "c.jsonl")  # clean
    leaked = jsonl.write(Cassette(jsonl.new_header("t"), [item]))  # written without redaction
    with pytest.raises(SecretLeakError):
        check_text(redactor.rules, leaked, "c.jsonl")


def test_a_body_stored_whole_as_base64_by_earlier_releases_still_reads() -> None:
    body = wire.encode_frame(EVENT, b'{"delta":{"text":"Hi"}}') * 2
    head = jsonl.new_header("llmcassette 0.0.9")
    request = {"type": "request", "method": "POST", "uri": "http://h/", "headers": {}, "body": None}
    response = {
        "type": "response",
        "status": 200,
        "headers": {"content-type": wire.CONTENT_TYPE},
        "body": {"base64": base64.b64encode(body).decode()},
    }
    text = "\n".join(json.dumps(r) for r in (head, request, response))
    item = jsonl.read((text + '\n{"type": "end", "events": 0}\n').encode(), "c").interactions[0]
    assert (item.stream, item.response_body) == (None, body)
    # Written again (re-recorded, or converted), it becomes one line per frame.
    again = jsonl.write(Cassette(head, [item]))
    assert again.count('"type":"event"') == 2
    assert jsonl.read(again.encode(), "c").interactions[0].response_body == body
