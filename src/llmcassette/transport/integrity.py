"""Tell a stream that ended properly from one that was cut off.

A provider ends each kind of stream with a terminator: ``data: [DONE]`` for OpenAI Chat
Completions, ``message_stop`` for Anthropic Messages, ``response.completed`` (or
``.failed`` / ``.incomplete``) for the Responses API, ``message-end`` for Cohere v2 chat,
a last chunk with a ``finishReason`` for Gemini (whose streamed JSON array, without
``alt=sse``, must also end with its ``]``), an object with ``"done": true`` for NDJSON
streams; a Bedrock ConverseStream (AWS event-stream frames) ends with ``messageStop`` then
``metadata``, an InvokeModelWithResponseStream with the chunk holding ``message_stop``, and
either with an exception frame. OpenAI-style providers (Azure, Mistral, Groq, DeepSeek,
OpenRouter) end as OpenAI; Writer's ends with the chunk that holds the usage. A stream
that failed may end with an error event instead (``_is_error``). A stream of a known kind
without either was cut short, even if the connection closed cleanly; streams of unknown
kinds are not judged.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from llmcassette import _eventstream as wire
from llmcassette.cassette import events, eventstream, jsonarray

RESPONSES_ENDINGS = frozenset({"response.completed", "response.failed", "response.incomplete"})


def stopped_reading(end: Any) -> bool:
    """Whether an interaction's end-line fields (``end_extra``) say the code stopped reading
    its stream while it was recorded: cut short, with no error and nothing missing from
    what it read. Such a stream is whole for that code, not cut off."""
    return (
        isinstance(end, dict)
        and bool(end.get("cut_short"))
        and not end.get("error")
        and "incomplete" not in end
    )


def missing_terminator(kind: str | None, body: bytes, uri: str | None = None) -> str | None:
    """Why a recorded stream looks cut off, or None when it ended properly (or is unknown);
    ``uri``, the request's, tells providers that end alike apart."""
    if kind == eventstream.KIND:
        return bedrock_verdict(body)
    verdict = judge(kind, events.split_body(kind, body), uri)
    return verdict if isinstance(verdict, str) else None


def judge(kind: str | None, pieces: list[str] | None, uri: str | None = None) -> bool | str | None:
    """The verdict on a stream cut into its event texts (``events.split_events``), sent to
    ``uri`` (when known).

    True: it ended properly; a string: what is missing; None: a kind that is not judged,
    or a body that is not text (``pieces`` None).
    """
    if kind is None or pieces is None:
        return None
    if kind == events.JSON_ARRAY and not jsonarray.is_closed(pieces):
        return "a streamed JSON array (Gemini without `alt=sse`) that ended without its `]`"
    # Only the events a verdict needs are read and parsed: for most streams, two.
    ends = _outer_events(kind, pieces)
    if ends is None:
        return None
    (first_name, first_data), (_, last_data) = ends
    parse = events.parse_data
    if kind == events.NDJSON:
        return _ndjson(parse(first_data), parse(last_data))
    first = parse(first_data)
    if isinstance(first, dict) and (
        first.get("object") == "chat.completion.chunk"
        or "prompt_filter_results" in first  # Azure OpenAI's opening chunk, ``object: ""``
    ):
        if last_data == "[DONE]":
            return True
        last = parse(last_data)
        if last == "[DONE]" or _is_error(last) or events.ends_at_usage_chunk(uri, last):
            return True
        return "an OpenAI chat stream that ended without `data: [DONE]`"
    if isinstance(first, dict) and isinstance(first.get("candidates"), list):
        last = parse(last_data)
        candidates = last.get("candidates") if isinstance(last, dict) else None
        if _is_error(last) or (
            isinstance(candidates, list)
            and any(isinstance(c, dict) and c.get("finishReason") for c in candidates)
        ):
            return True
        return "a Gemini stream whose last chunk has no `finishReason`"
    if first_name == "message-start" or (
        isinstance(first, dict) and first.get("type") == "message-start"
    ):
        if _has_event(kind, pieces, {"message-end"}, {"message-end"}):
            return True
        return "a Cohere stream that ended without `message-end`"
    if first_name == "message_start" or (
        isinstance(first, dict) and first.get("type") == "message_start"
    ):
        if _has_event(kind, pieces, {"message_stop", "error"}, set()):
            return True
        return "an Anthropic stream that ended without `message_stop`"
    if isinstance(first, dict) and str(first.get("type", "")).startswith("response."):
        # OpenRouter, for one, still sends `data: [DONE]` after the final event.
        if _has_event(kind, pieces, {"error"}, RESPONSES_ENDINGS):
            return True
        return "a Responses API stream that ended without `response.completed`"
    return None


def _has_event(kind: str, pieces: list[str], names: Set[str | None], types: Set[str]) -> bool:
    """Whether an event of the stream has one of ``names``, or JSON data whose ``type`` is
    one of ``types``. Read from the end, where the terminator is: a stream that ended
    properly has its data parsed once or twice, not event by event (a Responses stream's
    events each carry the response so far)."""
    for piece in reversed(pieces):
        name, data = events.read_event(kind, piece)
        if name in names:
            return True
        if types and data is not None:
            parsed = events.parse_data(data)
            # A hand-edited ``"type": []`` is no type, and no crash (a list is unhashable).
            found = parsed.get("type") if isinstance(parsed, dict) else None
            if isinstance(found, str) and found in types:
                return True
    return False


_NONE = (None, None)  # a blank line or a comment: neither a name nor data


def _outer_events(
    kind: str, pieces: list[str]
) -> tuple[tuple[str | None, str | None], tuple[str | None, str | None]] | None:
    """The first and the last event that has a name or data, or None if none has."""
    read = events.read_event
    for piece in pieces:
        first = read(kind, piece)
        if first != _NONE:
            break
    else:
        return None
    for piece in reversed(pieces):  # stops at the first one at the latest
        last = read(kind, piece)
        if last != _NONE:
            break
    return first, last


def _is_error(data: Any) -> bool:
    """Whether a stream's last event is an error object (``{"error": ...}``): a stream that
    fails ends with one instead of its terminator (Groq's ``tool_use_failed``, Ollama,
    Gemini), and the SDKs raise it. Such a stream ended as its provider meant it to."""
    return isinstance(data, dict) and bool(data.get("error"))


def _ndjson(first: Any, last: Any) -> bool | str | None:
    if not (isinstance(first, dict) and "done" in first):
        return None
    if (isinstance(last, dict) and last.get("done") is True) or _is_error(last):
        return True
    return 'an NDJSON stream whose last object is not `"done": true`'


def bedrock_verdict(body: bytes) -> str | None:
    """Why a Bedrock event stream looks cut off, or None when it ended properly (or is not
    a Converse or InvokeModel stream)."""
    verdict = judge_eventstream(body)
    return verdict if isinstance(verdict, str) else None


def judge_eventstream(body: bytes) -> bool | str | None:
    """``judge`` for a Bedrock event stream: True when it ended properly, what is missing
    when it did not, None for no frames or a stream other than Converse and InvokeModel."""
    pieces = wire.split_frames(body)
    if not pieces:
        return None
    try:
        last = wire.decode_frame(pieces[-1])
    except wire.EventStreamError:
        return "a Bedrock event stream whose last frame is cut off"
    if last.header(":message-type") == "exception":
        return True  # the service ended the stream with an error: it is complete
    names = [eventstream.payload_of(eventstream.encode_frame(piece))[0] for piece in pieces]
    if "messageStart" in names:
        if names[-2:] == ["messageStop", "metadata"]:
            return True
        return "a Bedrock ConverseStream that ended without `messageStop` and `metadata`"
    if "message_start" in names:  # InvokeModel chunks holding Anthropic events
        if "message_stop" in names or "error" in names:
            return True
        return "a Bedrock InvokeModel stream that ended without `message_stop`"
    return None
