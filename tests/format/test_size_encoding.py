"""Anthropic pads its stream events with spaces before the closing brace: such an event is
stored as JSON (``+pad<N>`` layout), rebuilt byte for byte, and its line is written compact."""

from __future__ import annotations

import json

import pytest

from llmcassette.cassette import events, jsontext, lines


@pytest.mark.parametrize(
    "text",
    [
        '{"type":"ping"       }',
        '{"a": {"b": [1, 2]}   }',
        "[1,2 ]\n",
        '{"a":"\\u00e9"  }',
    ],
)
def test_padded_json_is_structured_and_exact(text: str) -> None:
    parsed = jsontext.parse_exact(text)
    assert parsed is not None
    value, layout = parsed
    assert "+pad" in layout
    assert jsontext.render(value, layout) == text


def test_an_indented_body_with_padding_keeps_its_text() -> None:
    assert jsontext.parse_exact('{\n  "a": 1\n  }') is None


def test_a_padded_event_line_is_no_larger_than_it_streamed_plus_its_fields() -> None:
    data = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}   }'
    piece = f"event: content_block_delta\ndata: {data}\n\n"
    fields = events.encode_event(events.SSE, piece)
    assert fields == {"pad": 3, "data": json.loads(data)}  # compact, named by its type
    line = lines.event_line(None, fields, None)
    assert events.render_event(events.SSE, json.loads(line)) == piece
    assert data.replace("   }", "}") in line  # the value written as compactly as it streamed
