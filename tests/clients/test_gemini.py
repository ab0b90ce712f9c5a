"""google-genai records against the local provider and replays with the provider stopped.

Runs in the ``tests(clients="providers")`` nox session. Each test records into a fresh
cassette (record mode ``all``) through llmcassette, stops the provider, then replays the same
calls (record mode ``none``): nothing can reach a socket, so the answers come from the
cassette. Streams are counted chunk by chunk as the SDK's own iterator yields them.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import llmcassette
from llmcassette.testing import LocalProvider

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")

MODEL = "gemini-2.0-flash"
PROMPT = "Which clients can replay Gemini?"
ANSWER = f"You said: {PROMPT}"
API_KEY = "AIzaSyD-local-provider-key-000000000000"

T = TypeVar("T")


def _client(base_url: str) -> Any:
    return genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=base_url))


def _record_then_replay(
    tmp_path: Path, call: Callable[[Any], T], *, record_errors: bool = False
) -> tuple[T, T, Path]:
    """Run ``call(client)`` recording against a live provider, then again offline."""
    cassette = tmp_path / "gemini.jsonl"
    with LocalProvider() as provider:
        base_url = provider.gemini_base_url
        with llmcassette.use_cassette(
            str(cassette), record_mode="all", record_errors=record_errors
        ):
            recorded = call(_client(base_url))
        sent = len(provider.requests)
    assert sent >= 1, "recording sent nothing to the provider"
    # The provider is stopped: a request the cassette does not answer fails to connect.
    with llmcassette.use_cassette(str(cassette), record_mode="none") as replay:
        replayed = call(_client(base_url))
    assert replay.all_played, "the replay left recorded interactions unplayed"
    return recorded, replayed, cassette


def _stored_events(cassette: Path) -> int:
    """How many stream events the cassette holds (its lines of kind ``event``)."""
    lines = [json.loads(line) for line in cassette.read_text().splitlines() if line.strip()]
    return sum(1 for line in lines if line.get("type") == "event")


def test_generate_content(tmp_path: Path) -> None:
    recorded, replayed, cassette = _record_then_replay(
        tmp_path, lambda c: c.models.generate_content(model=MODEL, contents=PROMPT).text
    )
    assert recorded == replayed == ANSWER
    assert API_KEY not in cassette.read_text()


def test_generate_content_stream(tmp_path: Path) -> None:
    def call(client: Any) -> list[str]:
        return [
            chunk.text
            for chunk in client.models.generate_content_stream(model=MODEL, contents=PROMPT)
        ]

    recorded, replayed, cassette = _record_then_replay(tmp_path, call)
    assert "".join(replayed) == ANSWER
    assert replayed == recorded, "the replayed chunks differ from the recorded ones"
    # One SDK chunk per recorded event: the replay was not merged into fewer reads.
    assert len(replayed) == _stored_events(cassette) == len(recorded) > 1
    assert API_KEY not in cassette.read_text()


def test_the_sdk_streams_as_sse_never_as_a_json_array(tmp_path: Path) -> None:
    # google-genai writes `:streamGenerateContent?alt=sse` for every streamed call, so its
    # streams are SSE cassettes; the JSON array Gemini sends without alt=sse (stream kind
    # json-array) is read by REST clients, tested with raw httpx in tests/stream.
    def call(client: Any) -> list[str]:
        return [c.text for c in client.models.generate_content_stream(model=MODEL, contents=PROMPT)]

    _, _, cassette = _record_then_replay(tmp_path, call)
    lines = [json.loads(line) for line in cassette.read_text().splitlines() if line.strip()]
    request, response = lines[1], lines[2]
    assert request["uri"].endswith(":streamGenerateContent?alt=sse")
    assert response["body"] == {"stream": "sse"}


def test_async_generate_content_and_stream(tmp_path: Path) -> None:
    async def both(client: Any) -> tuple[str, list[str]]:
        whole = await client.aio.models.generate_content(model=MODEL, contents=PROMPT)
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents=PROMPT)
        return whole.text, [chunk.text async for chunk in stream]

    recorded, replayed, cassette = _record_then_replay(tmp_path, lambda c: asyncio.run(both(c)))
    assert replayed == recorded
    assert replayed[0] == ANSWER
    assert "".join(replayed[1]) == ANSWER
    assert len(replayed[1]) == _stored_events(cassette) > 1
    assert API_KEY not in cassette.read_text()


def test_function_call(tmp_path: Path) -> None:
    weather = types.FunctionDeclaration(
        name="get_weather",
        description="Weather in a city",
        parameters=types.Schema(
            type="OBJECT", properties={"city": types.Schema(type="STRING")}, required=["city"]
        ),
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[weather])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )

    def call(client: Any) -> tuple[str, dict[str, Any]]:
        response = client.models.generate_content(model=MODEL, contents="Paris", config=config)
        function_call = response.function_calls[0]
        return function_call.name, dict(function_call.args)

    recorded, replayed, _ = _record_then_replay(tmp_path, call)
    assert recorded == replayed == ("get_weather", {"city": "Paris"})


def test_embeddings(tmp_path: Path) -> None:
    def call(client: Any) -> list[list[float]]:
        result = client.models.embed_content(model="text-embedding-004", contents=["a", "b"])
        return [list(e.values) for e in result.embeddings]

    recorded, replayed, _ = _record_then_replay(tmp_path, call)
    assert recorded == replayed
    assert len(replayed) == 2
    assert replayed[0] != replayed[1]


def test_error_status_replays_as_the_sdk_error(tmp_path: Path) -> None:
    errors = pytest.importorskip("google.genai.errors")

    def call(client: Any) -> tuple[int, str]:
        with pytest.raises(errors.APIError) as raised:
            client.models.generate_content(model="error-429", contents=PROMPT)
        return raised.value.code, raised.value.status

    # Error responses are kept only when asked (record_errors=True).
    recorded, replayed, _ = _record_then_replay(tmp_path, call, record_errors=True)
    assert recorded == replayed == (429, "RESOURCE_EXHAUSTED")


@pytest.mark.skipif(
    int(importlib.metadata.version("google-genai").split(".")[0]) < 3,
    reason="google-genai 3 moved the Gemini API from /v1beta/ to /v1/",
)
def test_cassettes_of_google_genai_2_replay_under_3_once_told_the_api_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "gemini.jsonl"

    def ask(base_url: str, **options: Any) -> str:
        http_options = types.HttpOptions(base_url=base_url, **options)
        client = genai.Client(api_key=API_KEY, http_options=http_options)
        return str(client.models.generate_content(model=MODEL, contents=PROMPT).text)

    with LocalProvider() as provider:
        base_url = provider.gemini_base_url
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            ask(base_url, api_version="v1beta")  # as google-genai 2.x recorded it
    assert "/v1beta/models/" in cassette.read_text()

    with (
        llmcassette.use_cassette(str(cassette), record_mode="none"),
        pytest.raises(llmcassette.CassetteMismatch) as caught,
    ):
        ask(base_url)
    message = str(caught.value)
    assert "url.path: recorded '/v1beta/models/" in message
    assert "likely cause: google-genai 3 calls the Gemini API's /v1/" in message
    assert "GOOGLE_GENAI_API_VERSION=beta" in message

    monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "beta")  # what the message says to do
    with llmcassette.use_cassette(str(cassette), record_mode="none") as replay:
        assert ask(base_url) == ANSWER
    assert replay.all_played


VERTEX_KEY = "AQ.Ab8RN6L" + "VertexExpressKey" * 3
ACCESS_TOKEN = "ya29.a0AfB_byVertex" + "AccessToken" * 6


def test_vertex_ai_express_mode_and_with_a_project(tmp_path: Path) -> None:
    from google.oauth2.credentials import Credentials

    def ask(client: Any) -> tuple[str, list[str]]:
        whole = client.models.generate_content(model=MODEL, contents=PROMPT).text
        chunks = client.models.generate_content_stream(model=MODEL, contents=PROMPT)
        return str(whole), [chunk.text for chunk in chunks]

    def call(base_url: str) -> list[tuple[str, list[str]]]:
        options = types.HttpOptions(base_url=base_url)
        express = genai.Client(vertexai=True, api_key=VERTEX_KEY, http_options=options)
        # A token that needs no exchange: the OAuth refresh would be a request of its own.
        project = genai.Client(
            vertexai=True,
            project="llmcassette-test",
            location="us-central1",
            credentials=Credentials(token=ACCESS_TOKEN),
            http_options=options,
        )
        return [ask(express), ask(project)]

    cassette = tmp_path / "vertex.jsonl"
    with LocalProvider() as provider:
        with llmcassette.use_cassette(str(cassette), record_mode="all"):
            recorded = call(provider.gemini_base_url)
        paths = [request.path for request in provider.requests]
    with llmcassette.use_cassette(str(cassette), record_mode="none") as replay:
        replayed = call(provider.gemini_base_url)
    assert replay.all_played
    assert replayed == recorded
    assert [whole for whole, _ in replayed] == [ANSWER, ANSWER]
    assert ["".join(chunks) for _, chunks in replayed] == [ANSWER, ANSWER]
    assert paths[0] == f"/v1beta1/publishers/google/models/{MODEL}:generateContent"
    assert paths[2].startswith("/v1beta1/projects/llmcassette-test/locations/us-central1/")
    stored = cassette.read_text()
    assert VERTEX_KEY not in stored
    assert ACCESS_TOKEN not in stored
    assert _stored_events(cassette) > 2
