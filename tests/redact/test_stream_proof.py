"""The writer's quick way with streams (no parse, one check) writes what the long way writes.

``format.event_lines`` writes the events of a known shape without parsing them, when the
redactor proves in one search that nothing in the stream needs redacting, and tells the
fail-closed scan to skip those lines. These tests compare it with the long way (every event
parsed, redacted, scanned) on generated streams full of near-secrets: the same text must
come out, and skipping the checked lines must hide no finding of the scan.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from llmcassette.cassette import events
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.event_lines import StreamWriter
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.redact import Redactor
from llmcassette.redact.scan import find_in_jsonl

from .test_rules import ANTHROPIC, OPENAI, SHAPES

SETTINGS = settings(max_examples=150, derandomize=True, deadline=None, database=None)
LITERAL = "plainEnvSecret0123"  # an environment value without a recognisable shape
SSE_TYPE = "text/event-stream"
SSE = {"content-type": [SSE_TYPE]}


def _chat(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }


# Event shapes a provider streams, each with one slot for a piece of text.
SHAPES_OF_EVENTS = {
    "openai": _chat,
    "anthropic": lambda text: {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    },
    "responses": lambda text: {"type": "response.output_text.delta", "delta": text, "n": 3},
    "secret key": lambda text: {"session": {"api_key": text}},
    # Checked by header name: a credential header that no key rule names.
    "headers": lambda text: {"headers": {"x-session-token": text}},
    "uri": lambda text: {"uri": "https://example.test/v1?q=" + text},
    "list": lambda text: [text, 1, None],
}

CLEAN_SHAPES = ["anthropic", "list", "openai", "responses"]

# Pieces of text: prose, and what a rule looks for, whole, cut, escaped or encoded.
SECRETS = [values[0] for values in SHAPES.values()] + [LITERAL]
prose = st.sampled_from(["Hello", " world", "", "\n", 'a "quote"', "é😀", "\\", "1.5", "/"])
pieces = st.one_of(
    prose,
    st.sampled_from(["basic idea", "token=1", "Bearer x", "AKIA", "eyJ", "\u2028", " s", "k-"]),
    st.sampled_from(["https://example.test/a", "sk-", "ya29", ".", "%2D", "\\u0073k", "="]),
    st.sampled_from(SECRETS),
    st.sampled_from(SECRETS).map(lambda s: quote(s, safe="")),
    st.sampled_from(SECRETS).map(lambda s: json.dumps(s)[1:-1].replace("s", "\\u0073")),
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, str]:
    """An SSE or NDJSON body and its content type: events of one to three shapes,
    near-secrets in half of them."""
    tricky = draw(st.booleans())
    shapes = sorted(SHAPES_OF_EVENTS) if draw(st.booleans()) else CLEAN_SHAPES
    names = draw(st.lists(st.sampled_from(shapes), min_size=1, max_size=3))
    texts = draw(st.lists(pieces if tricky else prose, min_size=1, max_size=8))
    if tricky and draw(st.booleans()):  # a secret streamed in pieces, at one path
        secret = draw(st.sampled_from([OPENAI, ANTHROPIC, LITERAL]))
        cut = draw(st.integers(1, len(secret) - 1))
        at = draw(st.integers(0, len(texts)))
        texts[at:at] = [secret[:cut], secret[cut:]]
    spaced = draw(st.booleans())
    ndjson = draw(st.booleans())
    event_names = ["", "event: delta\n", "event: sk-proj-\n"] if tricky else ["", "event: e\n"]
    out = []
    for index, text in enumerate(texts):
        value = SHAPES_OF_EVENTS[names[index % len(names) if draw(st.booleans()) else 0]](text)
        separators = (", ", ": ") if spaced else (",", ":")
        payload = json.dumps(value, separators=separators, ensure_ascii=False)
        if ndjson:
            out.append(payload + "\n")
        else:
            out.append(f"{draw(st.sampled_from(event_names))}data: {payload}\n\n")
    if draw(st.booleans()):
        out.append('{"done":true}\n' if ndjson else "data: [DONE]\n\n")
    return "".join(out), "application/x-ndjson" if ndjson else "text/event-stream"


def _write(
    body: str,
    quick: bool,
    monkeypatch: pytest.MonkeyPatch,
    content_type: str = SSE_TYPE,
    times: list[float] | None = None,
) -> tuple[str, set[int]]:
    headers = {"content-type": [content_type]}
    item = Interaction("POST", "http://h/v1", {}, None, 200, "OK", headers, body.encode())
    item.event_times = times
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "tests"}
    checked: set[int] = set()
    redactor = Redactor(environ={"MY_API_KEY": LITERAL})
    with monkeypatch.context() as patch:
        if not quick:
            patch.setattr(StreamWriter, "quick", lambda *args: None)
        text = cassette_file.write(Cassette(header, [item]), redaction=redactor, checked=checked)
    return text, checked


@SETTINGS
@given(stream=streams(), timing=st.sampled_from(["none", "rising", "repeated", "odd"]))
def test_the_quick_way_writes_what_the_long_way_writes(
    stream: tuple[str, str], timing: str
) -> None:
    body, content_type = stream
    # Event times as recorded (rising, or the same time for events of one network chunk),
    # or with values the usual event head does not take (zero, an integer).
    count = len(events.split_events("ndjson" if "ndjson" in content_type else "sse", body))
    times: list[float] | None = {
        "none": None,
        "rising": [round(0.0011 * (i + 1), 4) for i in range(count)],
        "repeated": [0.0021] * count,
        "odd": [[0.0, 0.5, -0.0, 2][i % 4] for i in range(count)],
    }[timing]
    with pytest.MonkeyPatch.context() as monkeypatch:
        quick, checked = _write(body, True, monkeypatch, content_type, times)
        long, none_checked = _write(body, False, monkeypatch, content_type, times)
    event("quick" if checked - {2, 3} else "long way")
    assert quick == long
    assert none_checked <= {2, 3}  # the long way checks the request and response records only
    redactor = Redactor(environ={"MY_API_KEY": LITERAL})
    # Skipping the checked lines hides nothing from the fail-closed scan.
    assert find_in_jsonl(redactor, quick, "c.jsonl", checked) == find_in_jsonl(
        redactor, quick, "c.jsonl"
    )
    lines = quick.split("\n")
    assert all(lines[number - 1].startswith('{"type": "event"') for number in checked - {2, 3})


@SETTINGS
@given(
    texts=st.lists(st.one_of(prose, pieces), min_size=2, max_size=12),
    timing=st.sampled_from(["rising", "repeated", "odd"]),
)
def test_a_stream_of_text_deltas_is_written_alike_both_ways(texts: list[str], timing: str) -> None:
    # The usual stream: one event repeated with another text delta, which the quick way
    # writes in runs (one value apart from the event before), secrets or not.
    body = "".join(
        f"data: {json.dumps(_chat(t), separators=(',', ':'), ensure_ascii=False)}\n\n"
        for t in ["", *texts]
    )
    count = len(texts) + 1
    times = {
        "rising": [round(0.0011 * (i + 1), 4) for i in range(count)],
        "repeated": [0.0021] * count,
        "odd": [[0.0, 0.5, -0.0, 2][i % 4] for i in range(count)],
    }[timing]
    with pytest.MonkeyPatch.context() as monkeypatch:
        quick, checked = _write(body, True, monkeypatch, times=times)
        long, _ = _write(body, False, monkeypatch, times=times)
    event("quick" if checked - {2, 3} else "long way")
    assert quick == long
    redactor = Redactor(environ={"MY_API_KEY": LITERAL})
    assert find_in_jsonl(redactor, quick, "c.jsonl", checked) == find_in_jsonl(
        redactor, quick, "c.jsonl"
    )


def test_the_events_after_a_one_value_change_are_written_in_a_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from llmcassette.cassette import event_lines

    written = []
    run = event_lines._template_run

    def counted(*args: Any) -> int:
        end = run(*args)
        written.append(end - args[2])
        return end

    monkeypatch.setattr(event_lines, "_template_run", counted)
    texts = ["", "Hello", " wor", "ld", ", and", " more", "."]
    body = "".join(f"data: {json.dumps(_chat(t), separators=(',', ':'))}\n\n" for t in texts)
    times = [0.001 * (i + 1) for i in range(len(texts))]
    text, checked = _write(body + "data: [DONE]\n\n", True, monkeypatch, times=[*times, 0.009])
    # The second event is the first one apart but for its text: the template, whose run
    # writes the five after it.
    assert written == [5]
    assert checked == set(range(2, 4 + len(texts)))  # request, response, every event
    assert '"t": 0.004, "data": {"id":"chatcmpl-1"' in text


def test_a_clean_stream_is_checked_once_and_its_lines_are_skipped_by_the_scan() -> None:
    body = "".join(f"data: {json.dumps(_chat(t), separators=(',', ':'))}\n\n" for t in "abc")
    with pytest.MonkeyPatch.context() as monkeypatch:
        text, checked = _write(body + "data: [DONE]\n\n", True, monkeypatch)
    # The request, the response and the three data events; [DONE] is left to the scan.
    assert checked == {2, 3, 4, 5, 6}
    assert text.split("\n")[4].endswith(
        ', "data": ' + json.dumps(_chat("b"), separators=(",", ":")) + "}"
    )


@pytest.mark.parametrize(
    "contents",
    [
        ["Your key: ", OPENAI[:10], OPENAI[10:]],  # a shape, cut across two events
        ["Here: ", LITERAL[:5], LITERAL[5:], "."],  # an environment value, cut
        [quote(OPENAI, safe="")],  # URL-encoded
    ],
)
def test_a_secret_in_a_quick_looking_stream_is_still_redacted(contents: list[str]) -> None:
    body = "".join(f"data: {json.dumps(_chat(t), separators=(',', ':'))}\n\n" for t in contents)
    with pytest.MonkeyPatch.context() as monkeypatch:
        text, checked = _write(body, True, monkeypatch)
    assert checked == {2, 3}  # the request and the response, not the events
    assert "<REDACTED:" in text
    assert OPENAI[10:] not in text
    assert LITERAL[5:] not in text


@pytest.mark.parametrize(
    "body",
    [
        # A "headers" object is checked by header name, which only the scan does.
        'data: {"headers":{"x-session-token":"plain"}}\n\n',
        # A field the redactor does not walk (retry), holding an environment value.
        "retry: 40961234\ndata: {}\n\n",
    ],
)
def test_what_only_the_scan_would_find_is_left_to_the_scan(body: str) -> None:
    item = Interaction("POST", "http://h/v1", {}, None, 200, "OK", SSE, body.encode())
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "tests"}
    redactor = Redactor(environ={"MY_TOKEN": "40961234"})
    checked: set[int] = set()
    text = cassette_file.write(Cassette(header, [item]), redaction=redactor, checked=checked)
    assert checked == {2, 3}
    assert find_in_jsonl(redactor, text, "c.jsonl")  # the scan refuses to write it


def test_a_request_the_scan_would_refuse_is_left_to_the_scan() -> None:
    # Redaction reads a "uri" key in a JSON body as text; the scan reads it as a URL, with a
    # secret parameter. The writer checks the records with the scan's own walk, so the
    # request line is not marked checked, and the scan reports it by its line.
    body = json.dumps({"uri": "https://h/cb?token=abc123"}).encode()
    item = Interaction(
        "POST",
        "http://h/v1",
        {"content-type": ["application/json"]},
        body,
        200,
        "OK",
        SSE,
        b'data: {"a":"b"}\n\n',
    )
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "tests"}
    redactor = Redactor(environ={})
    checked: set[int] = set()
    text = cassette_file.write(Cassette(header, [item]), redaction=redactor, checked=checked)
    assert checked == {3, 4}  # the response and the event, not the request
    findings = find_in_jsonl(redactor, text, "c.jsonl", checked)
    assert [(f.line, f.json_path) for f in findings] == [(2, "body.json.uri")]
