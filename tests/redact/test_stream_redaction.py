"""Streams are redacted event by event, secrets cut across events included, and the
fail-closed scan refuses what redaction leaves in an event line.

Generated streams full of near-secrets: what comes out holds no secret the scan finds,
and writing is deterministic.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcassette.cassette import jsonl as cassette_file
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


def _write(body: str, content_type: str = SSE_TYPE, times: list[float] | None = None) -> str:
    headers = {"content-type": [content_type]}
    item = Interaction("POST", "http://h/v1", {}, None, 200, "OK", headers, body.encode())
    item.event_times = times
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "tests"}
    redactor = Redactor(environ={"MY_API_KEY": LITERAL})
    return cassette_file.write(Cassette(header, [item]), redaction=redactor)


@SETTINGS
@given(stream=streams())
def test_a_redacted_stream_holds_no_secret_the_scan_finds(stream: tuple[str, str]) -> None:
    body, content_type = stream
    text = _write(body, content_type)
    assert _write(body, content_type) == text  # deterministic
    rules = Redactor(environ={"MY_API_KEY": LITERAL}).rules
    # What only the scan reads as a secret (a credential header name inside an event's
    # data, a secret parameter of a "uri" in it) is refused; nothing else is left.
    left = {f.rule for f in find_in_jsonl(rules, text, "c.jsonl")}
    if not any(shape in body for shape in ('"headers"', '"uri"')):
        assert left == set()
    for secret in (OPENAI, ANTHROPIC, LITERAL):
        if secret in body:
            assert secret not in text


@pytest.mark.parametrize(
    "contents",
    [
        ["Your key: ", OPENAI[:10], OPENAI[10:]],  # a shape, cut across two events
        ["Here: ", LITERAL[:5], LITERAL[5:], "."],  # an environment value, cut
        [quote(OPENAI, safe="")],  # URL-encoded
    ],
)
def test_a_secret_cut_across_events_is_redacted(contents: list[str]) -> None:
    body = "".join(f"data: {json.dumps(_chat(t), separators=(',', ':'))}\n\n" for t in contents)
    text = _write(body)
    assert "<REDACTED:" in text
    assert OPENAI[10:] not in text
    assert LITERAL[5:] not in text


def _choice(index: int, text: str) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": index, "delta": {"content": text}}],
    }


def _response_delta(item: str, output: int, text: str) -> dict[str, Any]:
    kind = "function_call_arguments" if item.startswith("fc") else "output_text"
    return {
        "type": f"response.{kind}.delta",
        "item_id": item,
        "output_index": output,
        "delta": text,
    }


def _texts(text: str, path: tuple[str, ...]) -> dict[Any, str]:
    """The text each part of the answer streamed, from the lines of a written cassette."""
    parts: dict[Any, str] = {}
    for line in text.splitlines():
        data = json.loads(line).get("data")
        if not isinstance(data, dict):
            continue
        value: Any = data
        for key in path:
            value = (value[0] if isinstance(value, list) else value)[key]
        part = data.get("item_id", data.get("choices", [{}])[0].get("index"))
        parts[part] = parts.get(part, "") + value
    return parts


def test_parts_of_an_answer_streamed_in_turns_are_redacted_each_on_its_own() -> None:
    # An n=2 chat stream: choice 1 streams a key in two pieces, choice 0 a word in two.
    # Joined by path alone, choice 0's piece sat inside the key (neither was found), and a
    # key ending a piece of choice 1 took the start of choice 0's next piece with it.
    events = [
        _choice(0, "Hel"),
        _choice(1, "Your key is " + OPENAI[:20]),
        _choice(0, "lo world"),
        _choice(1, OPENAI[20:] + " ok, and " + ANTHROPIC),
        _choice(0, "!"),
    ]
    text = _write("".join(f"data: {json.dumps(e)}\n\n" for e in events))
    assert OPENAI[:20] not in text
    assert OPENAI[20:] not in text
    assert _texts(text, ("choices", "delta", "content")) == {
        0: "Hello world!",
        1: "Your key is <REDACTED:openai-api-key> ok, and <REDACTED:anthropic-api-key>",
    }


def test_items_of_a_responses_stream_are_redacted_each_on_its_own() -> None:
    events = [
        _response_delta("fc_1", 0, '{"q": "' + OPENAI[:30]),
        _response_delta("msg_1", 1, "calling"),
        _response_delta("fc_1", 0, OPENAI[30:] + '"}'),
        _response_delta("msg_1", 1, " the tool"),
    ]
    text = _write("".join(f"data: {json.dumps(e)}\n\n" for e in events))
    assert OPENAI[30:] not in text
    assert _texts(text, ("delta",)) == {
        "fc_1": '{"q": "<REDACTED:openai-api-key>"}',
        "msg_1": "calling the tool",
    }


class HeadersLeftAlone(Redactor):
    """A redactor with a bug: the values of a "headers" object inside a body left as
    they are (they are redacted by header name, as a request's own headers are)."""

    def _header_in_body(self, name: str, value: str, path: Any, response: bool) -> str:
        return value


@pytest.mark.parametrize(
    ("body", "redactor_type"),
    [
        # A "headers" object is checked by header name: a redactor that missed it.
        ('data: {"headers":{"x-session-token":"plain"}}\n\n', HeadersLeftAlone),
        # A field the redactor does not walk (retry), holding an environment value.
        ("retry: 40961234\ndata: {}\n\n", Redactor),
    ],
)
def test_what_only_the_scan_finds_is_refused(body: str, redactor_type: type[Redactor]) -> None:
    item = Interaction("POST", "http://h/v1", {}, None, 200, "OK", SSE, body.encode())
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "tests"}
    redactor = redactor_type(environ={"MY_TOKEN": "40961234"})
    text = cassette_file.write(Cassette(header, [item]), redaction=redactor)
    assert find_in_jsonl(redactor.rules, text, "c.jsonl")  # the scan refuses to write it


def test_a_request_the_scan_refuses_is_reported_by_its_line() -> None:
    # A redactor that leaves request bodies alone: the scan finds the key in the body and
    # reports it by its line.
    class BodiesLeftAlone(Redactor):
        def body_record(self, body: Any, content_type: str, *, response: bool = False) -> Any:
            return body if not response else super().body_record(body, content_type)

    body = json.dumps({"api_key": "abc123"}).encode()
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
    redactor = BodiesLeftAlone(environ={})
    text = cassette_file.write(Cassette(header, [item]), redaction=redactor)
    findings = find_in_jsonl(redactor.rules, text, "c.jsonl")
    assert [(f.line, f.json_path) for f in findings] == [(2, "body.json.api_key")]


GEMINI_STREAM = "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent"


def _gemini_array(texts: list[str]) -> str:
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": t}], "role": "model"}}]} for t in texts
    ]
    return "[" + ",\r\n".join(json.dumps(c, separators=(",", ":")) for c in chunks) + "]"


def _write_gemini(
    body: str, environ: dict[str, str] | None = None, redactor_type: type[Redactor] = Redactor
) -> tuple[str, Redactor]:
    headers = {"content-type": ["application/json; charset=UTF-8"]}
    item = Interaction("POST", GEMINI_STREAM, {}, None, 200, "OK", headers, body.encode())
    header = {"format": "llmcassette", "format_version": 1, "recorded_by": "tests"}
    redactor = redactor_type(environ=environ or {"MY_API_KEY": LITERAL})
    return cassette_file.write(Cassette(header, [item]), redaction=redactor), redactor


@pytest.mark.parametrize(
    "texts",
    [
        ["Your key: ", OPENAI],  # a key inside one element
        ["Your key: ", OPENAI[:10], OPENAI[10:]],  # cut across two elements
        ["Here: ", LITERAL[:5], LITERAL[5:], "."],  # an environment value, cut
    ],
)
def test_a_key_inside_a_json_array_element_is_redacted(texts: list[str]) -> None:
    text, redactor = _write_gemini(_gemini_array(texts))
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[2]["body"] == {"stream": "json-array"}
    assert len([line for line in lines if line.get("type") == "event"]) == len(texts)
    assert "<REDACTED:" in text
    assert OPENAI[10:] not in text
    assert LITERAL[5:] not in text
    assert find_in_jsonl(redactor.rules, text, "c.jsonl") == []


def test_what_only_the_scan_finds_in_an_array_element_is_refused() -> None:
    from llmcassette.errors import SecretLeakError
    from llmcassette.redact.scan import check_text

    body = '[{"candidates":[]},\r\n{"headers":{"x-session-token":"plain"}}]'
    text, redactor = _write_gemini(body, redactor_type=HeadersLeftAlone)
    (finding,) = find_in_jsonl(redactor.rules, text, "c.jsonl")
    assert finding.line == 5  # the second element's event line
    with pytest.raises(SecretLeakError):
        check_text(redactor.rules, text, "c.jsonl")


def test_an_index_that_holds_an_object_is_no_part_of_an_answer() -> None:
    # "index" names a search index in some APIs: an object, which cannot tell parts apart
    # (nor be a key of the joined pieces)
    events = [{"index": {"name": "docs"}, "delta": "Your key is " + OPENAI[:20]}]
    events.append({"index": {"name": "docs"}, "delta": OPENAI[20:]})
    text = _write("".join(f"data: {json.dumps(e)}\n\n" for e in events))
    assert OPENAI[20:] not in text
