"""AWS event-stream frames: the codec (llmcassette._eventstream) and the record of one frame
(llmcassette.cassette.eventstream), rebuilt byte for byte."""

from __future__ import annotations

import base64
import json
import zlib

import pytest
from _eventstream_frames import EVENT
from _eventstream_frames import chunk as _chunk

from llmcassette import _eventstream as wire
from llmcassette.cassette import eventstream


def test_frame_layout_and_crcs() -> None:
    payload = b'{"delta":{"text":"Hi"}}'
    frame = wire.encode_frame(EVENT, payload)
    total, headers_length, prelude_crc = (
        int.from_bytes(frame[i : i + 4], "big") for i in (0, 4, 8)
    )
    assert total == len(frame)
    assert prelude_crc == zlib.crc32(frame[:8])
    assert int.from_bytes(frame[-4:], "big") == zlib.crc32(frame[:-4])
    assert frame[12 + headers_length : -4] == payload
    # The first header: name length, name, type 7 (string), value length, value.
    assert frame[12:25] == b"\x0b:event-type\x07"
    decoded = wire.decode_frame(frame)
    assert decoded.payload == payload
    assert decoded.header(":event-type") == "contentBlockDelta"


def test_every_header_type_round_trips() -> None:
    headers = (
        wire.Header("t", wire.BOOL_TRUE, True),
        wire.Header("f", wire.BOOL_FALSE, False),
        wire.Header("b", wire.BYTE, -3),
        wire.Header("s", wire.SHORT, 300),
        wire.Header("i", wire.INTEGER, -70000),
        wire.Header("l", wire.LONG, 2**40),
        wire.Header("y", wire.BYTES, b"\x00\xff"),
        wire.Header("w", wire.STRING, "żółw"),
        wire.Header("ts", wire.TIMESTAMP, 1_700_000_000_000),
        wire.Header("u", wire.UUID, bytes(range(16))),
    )
    frame = wire.encode_frame(headers, b"\x00binary\xff")
    assert wire.decode_frame(frame).headers == headers
    record = eventstream.encode_frame(frame)
    assert "base64" not in record
    assert record["headers"]["i"] == {"integer": -70000}
    assert record["headers"]["u"] == {"uuid": "00010203-0405-0607-0809-0a0b0c0d0e0f"}
    assert record["payload_base64"] == base64.b64encode(b"\x00binary\xff").decode()
    assert eventstream.render_frame(record) == frame


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: f[:8] + b"\x00\x00\x00\x00" + f[12:],  # prelude CRC
        lambda f: f[:-1] + bytes([f[-1] ^ 1]),  # message CRC
        lambda f: f[:-3],  # cut off
    ],
)
def test_a_damaged_frame_is_refused_and_stored_whole(damage: object) -> None:
    frame = damage(wire.encode_frame(EVENT, b"{}"))  # type: ignore[operator]
    with pytest.raises(wire.EventStreamError):
        wire.decode_frame(frame)
    assert eventstream.encode_frame(frame) == {"base64": base64.b64encode(frame).decode()}


def test_invoke_chunks_are_decoded_twice_and_rebuilt() -> None:
    inner = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}'
    frames = [_chunk(inner), _chunk(inner, spaced=True), _chunk(b"not json"), _chunk(b"\xff")]
    records = eventstream.encode_records(b"".join(frames))
    assert records[0]["chunk"] == "json"
    assert records[0]["data"]["bytes"]["delta"]["text"] == "Hi"
    assert records[0]["data"]["p"] == "abc"
    assert records[1]["layout"] == "spaced"
    assert records[2]["chunk"] == "text"
    assert records[2]["data"]["bytes"] == "not json"
    assert "chunk" not in records[3]  # bytes that are not UTF-8 stay base64 inside data
    assert [eventstream.render_frame(r) for r in records] == frames
    assert eventstream.payloads(b"".join(frames))[0] == ("content_block_delta", json.loads(inner))


def test_a_hand_edited_frame_gets_new_crcs() -> None:
    record = eventstream.encode_frame(wire.encode_frame(EVENT, b'{"delta":{"text":"Hi"}}'))
    record["data"]["delta"]["text"] = "Ho"
    rebuilt = wire.decode_frame(eventstream.render_frame(record))  # CRCs checked
    assert rebuilt.payload == b'{"delta":{"text":"Ho"}}'


def _converse(*kinds: str) -> bytes:
    return b"".join(
        wire.encode_frame(
            wire.string_headers([(":event-type", k), (":message-type", "event")]), b"{}"
        )
        for k in kinds
    )


def test_integrity_of_bedrock_streams() -> None:
    from llmcassette.transport.integrity import missing_terminator

    whole = _converse("messageStart", "contentBlockDelta", "messageStop", "metadata")
    assert missing_terminator("eventstream", whole) is None
    assert missing_terminator("eventstream", _converse("messageStart", "messageStop")) == (
        "a Bedrock ConverseStream that ended without `messageStop` and `metadata`"
    )
    assert missing_terminator("eventstream", whole[:-5]) == (
        "a Bedrock event stream whose last frame is cut off"
    )
    error = wire.encode_frame(
        wire.string_headers([(":message-type", "exception"), (":exception-type", "x")]), b"{}"
    )
    assert missing_terminator("eventstream", _converse("messageStart") + error) is None
    start, stop = _chunk(b'{"type":"message_start"}'), _chunk(b'{"type":"message_stop"}')
    assert missing_terminator("eventstream", start + stop) is None
    assert missing_terminator("eventstream", start) == (
        "a Bedrock InvokeModel stream that ended without `message_stop`"
    )


def test_replay_cuts_a_bedrock_body_into_its_frames() -> None:
    from llmcassette.transport.recorded import META_KEY
    from llmcassette.transport.replay import event_pieces

    body = _converse("messageStart", "messageStop", "metadata")
    pieces, times = event_pieces({"body": {"string": body}, META_KEY: {"stream": "eventstream"}})
    assert [wire.decode_frame(p).header(":event-type") for p in pieces] == [
        "messageStart",
        "messageStop",
        "metadata",
    ]
    assert times is None
