"""Gemini's wire format from the local provider, read over raw HTTP (no SDK needed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from llmcassette.testing import LocalProvider

KEY = {"x-goog-api-key": "AIza-local"}
BODY = {"contents": [{"role": "user", "parts": [{"text": "Hello Gemini"}]}]}


def _url(provider: LocalProvider, method: str, model: str = "gemini-2.0-flash") -> str:
    return f"{provider.gemini_base_url}/v1beta/models/{model}:{method}"


def _sse_events(text: str) -> list[dict[str, object]]:
    assert "\r\n\r\n" in text, "Gemini separates its events with CRLF pairs"
    return [json.loads(e.removeprefix("data: ")) for e in text.split("\r\n\r\n") if e.strip()]


def _text(chunk: dict[str, object]) -> str:
    candidate = chunk["candidates"][0]  # type: ignore[index]
    return "".join(part.get("text", "") for part in candidate["content"]["parts"])


def test_generate_content(provider: LocalProvider) -> None:
    reply = httpx.post(_url(provider, "generateContent"), json=BODY, headers=KEY)
    assert reply.status_code == 200
    body = reply.json()
    assert _text(body) == "You said: Hello Gemini"
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert body["usageMetadata"]["candidatesTokenCount"] == 5
    again = httpx.post(_url(provider, "generateContent"), json=BODY, headers=KEY)
    assert again.content == reply.content, "the same request must get the same bytes"


def test_stream_sse_ends_with_finish_reason(provider: LocalProvider) -> None:
    reply = httpx.post(_url(provider, "streamGenerateContent") + "?alt=sse", json=BODY, headers=KEY)
    events = _sse_events(reply.text)
    assert reply.headers["content-type"] == "text/event-stream"
    assert "".join(_text(e) for e in events) == "You said: Hello Gemini"
    assert [e["candidates"][0].get("finishReason") for e in events][-1] == "STOP"  # type: ignore[index]
    assert all("finishReason" not in e["candidates"][0] for e in events[:-1])  # type: ignore[index]


def test_stream_json_array_is_one_array(provider: LocalProvider) -> None:
    provider.behaviour.events = 4
    with httpx.stream("POST", _url(provider, "streamGenerateContent"), json=BODY, headers=KEY) as r:
        chunks = list(r.iter_raw())
    whole = json.loads(b"".join(chunks))
    assert isinstance(whole, list)
    assert len(whole) == 4
    assert "".join(_text(c) for c in whole) == "You said: Hello Gemini"


def test_key_in_query_is_accepted_and_missing_key_is_403(provider: LocalProvider) -> None:
    with_query = httpx.post(_url(provider, "generateContent") + "?key=AIza-local", json=BODY)
    assert with_query.status_code == 200
    missing = httpx.post(_url(provider, "generateContent"), json=BODY)
    assert missing.status_code == 403
    assert missing.json()["error"]["status"] == "PERMISSION_DENIED"


@pytest.mark.parametrize(("status", "kind"), [(429, "RESOURCE_EXHAUSTED"), (500, "INTERNAL")])
def test_error_models_and_queued_errors(provider: LocalProvider, status: int, kind: str) -> None:
    reply = httpx.post(_url(provider, "generateContent", f"error-{status}"), json=BODY, headers=KEY)
    assert reply.status_code == status
    assert reply.json()["error"] == {
        "code": status,
        "message": f"Error {status} (local provider).",
        "status": kind,
    }
    provider.queue_error(503)
    queued = httpx.post(_url(provider, "generateContent"), json=BODY, headers=KEY)
    assert queued.status_code == 503
    assert queued.json()["error"]["status"] == "UNAVAILABLE"


def test_cut_stream_drops_the_connection(provider: LocalProvider) -> None:
    provider.behaviour.cut_after = 2
    url = _url(provider, "streamGenerateContent") + "?alt=sse"
    received: list[bytes] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", url, json=BODY, headers=KEY) as reply,
    ):
        received.extend(reply.iter_raw())
    assert len(_sse_events(b"".join(received).decode())) == 2


def test_endless_stream_and_delay(provider: LocalProvider) -> None:
    provider.behaviour.endless = True
    provider.behaviour.event_delay = 0.02
    url = _url(provider, "streamGenerateContent") + "?alt=sse"
    started = time.monotonic()
    events = 0
    with httpx.stream("POST", url, json=BODY, headers=KEY) as reply:
        for line in reply.iter_lines():
            events += line.startswith("data: ")
            if events == 12:
                break
    assert events == 12, "an endless stream keeps going past the answer's 5 events"
    assert time.monotonic() - started >= 11 * 0.02


def test_function_call_and_tool_result(provider: LocalProvider) -> None:
    tools = [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
                }
            ]
        }
    ]
    ask = {"contents": [{"role": "user", "parts": [{"text": "Paris"}]}], "tools": tools}
    body = httpx.post(_url(provider, "generateContent"), json=ask, headers=KEY).json()
    call = body["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call == {"name": "get_weather", "args": {"city": "Paris"}}
    result = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 21}}}],
    }
    follow = {
        "contents": [*ask["contents"], {"role": "model", "parts": [{"functionCall": call}]}, result]
    }
    answer = httpx.post(
        _url(provider, "generateContent"), json={**follow, "tools": tools}, headers=KEY
    )
    assert _text(answer.json()) == 'The tool returned: {"temp":21}'


def test_embeddings_are_deterministic(provider: LocalProvider) -> None:
    one = httpx.post(
        _url(provider, "embedContent", "text-embedding-004"),
        json={"content": {"parts": [{"text": "a"}]}},
        headers=KEY,
    ).json()
    batch = httpx.post(
        _url(provider, "batchEmbedContents", "text-embedding-004"),
        json={"requests": [{"content": {"parts": [{"text": t}]}} for t in ("a", "b")]},
        headers=KEY,
    ).json()
    assert batch["embeddings"][0]["values"] == one["embedding"]["values"]
    assert batch["embeddings"][0] != batch["embeddings"][1]
    assert len(one["embedding"]["values"]) == 8


def _record_and_replay_array_stream(tmp_path: Path) -> tuple[list[bytes], list[bytes]]:
    import llmcassette

    cassette = tmp_path / "array.jsonl"

    def read(url: str) -> list[bytes]:
        with httpx.stream("POST", url, json=BODY, headers=KEY) as reply:
            return list(reply.iter_raw())

    with LocalProvider() as live:
        live.behaviour.events = 4
        url = _url(live, "streamGenerateContent")
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            recorded = read(url)
    # The provider is stopped: only the cassette answers.
    with llmcassette.use_cassette(str(cassette), record_mode="none"):
        replayed = read(url)
    return recorded, replayed


def test_json_array_stream_records_and_replays_losslessly(tmp_path: Path) -> None:
    recorded, replayed = _record_and_replay_array_stream(tmp_path)
    assert len(recorded) == 4, "the provider sends one chunk per array element"
    assert b"".join(replayed) == b"".join(recorded)
    assert len(json.loads(b"".join(replayed))) == 4


def test_json_array_stream_replays_chunk_by_chunk(tmp_path: Path) -> None:
    recorded, replayed = _record_and_replay_array_stream(tmp_path)
    assert replayed == recorded
