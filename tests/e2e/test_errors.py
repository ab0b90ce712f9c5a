"""Error answers and replay mismatches, through the openai SDK (max_retries=0)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from vcr.errors import CannotOverwriteExistingCassetteException

from llmcassette.cassette import bodies

from ._support import (
    API_KEY,
    Recorder,
    assert_header_line,
    header_value,
    run_action,
    stream_interactions,
)

MODEL = "gpt-4o-mini"


def _messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def _client(recorder: Recorder, mode: str) -> Any:
    cls = openai.OpenAI if mode == "sync" else openai.AsyncOpenAI
    return cls(base_url=recorder.provider.openai_base_url, api_key=API_KEY, max_retries=0)


def _chain(error: BaseException) -> list[BaseException]:
    """The exception and everything it was raised from or during, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _call(recorder: Recorder, mode: str, prompt: str, **extra: Any) -> Any:
    """A zero-argument callable making one chat completion with a fresh client.

    A stream is read to its end while its client is open: like without llmcassette,
    closing the client first would close the connection under the stream.
    """
    if mode == "sync":

        def run_sync() -> Any:
            with _client(recorder, mode) as client:
                result = client.chat.completions.create(
                    model=MODEL, messages=_messages(prompt), **extra
                )
                return list(result) if extra.get("stream") else result

        return run_sync

    async def run_async() -> Any:
        async with _client(recorder, mode) as client:
            result = await client.chat.completions.create(
                model=MODEL, messages=_messages(prompt), **extra
            )
            return [chunk async for chunk in result] if extra.get("stream") else result

    return run_async


def _expect_rate_limit(action: Any) -> Any:
    async def run() -> dict[str, Any]:
        with pytest.raises(openai.RateLimitError) as caught:
            await run_action(action)
        error = caught.value
        return {
            "status": error.status_code,
            "body": error.body,
            "message": error.message,
            "retry_after": error.response.headers.get("retry-after"),
            "request_id": error.request_id,
        }

    return run


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_rate_limit_recorded_and_replayed(recorder: Recorder, mode: str) -> None:
    recorder.provider.queue_error(429, retry_after=0)
    # Error responses are kept only on request.
    trip = await recorder.roundtrip(
        _expect_rate_limit(_call(recorder, mode, "hello")), record_errors=True
    )

    assert trip.replayed == trip.recorded
    assert trip.recorded["status"] == 429
    assert trip.recorded["retry_after"] == "0"
    assert trip.recorded["body"]["code"] == "rate_limit_exceeded"
    assert len(recorder.provider.requests) == 1  # max_retries=0: no retry while recording
    assert_header_line(trip.path)
    ((_, response, end),) = stream_interactions(trip.path)
    assert response["status"] == 429
    assert header_value(response["headers"], "retry-after") == "0"
    stored = bodies.decode(response["body"])
    assert stored is not None
    assert json.loads(stored)["error"] == trip.recorded["body"] | {"type": "requests"}
    assert end["events"] == 0


async def test_openai_error_body_is_stored_as_json(recorder: Recorder) -> None:
    recorder.provider.queue_error(429, retry_after=0)
    await recorder.record(_expect_rate_limit(_call(recorder, "sync", "hello")), record_errors=True)

    ((_, response, _),) = stream_interactions(recorder.path)
    assert response["body"]["json"]["error"]["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_changed_prompt_on_replay_is_refused(
    recorder: Recorder, mode: str, stream: bool
) -> None:
    extra = {"stream": True} if stream else {}

    async def consume(action: Any) -> Any:
        return await run_action(action)

    await recorder.record(lambda: consume(_call(recorder, mode, "the recorded prompt", **extra)))

    async def replay_other_prompt() -> BaseException:
        with pytest.raises(Exception) as caught:  # noqa: PT011 - inspected below
            await consume(_call(recorder, mode, "an incoming prompt", **extra))
        return caught.value

    error = await recorder.replay(replay_other_prompt)

    # openai 3.x re-raises only httpx2 transport errors as APIConnectionError; vcrpy's
    # exception is a plain Exception, so it reaches the caller unwrapped.
    assert isinstance(error, CannotOverwriteExistingCassetteException), _chain(error)
    assert not isinstance(error, openai.APIConnectionError)
    message = str(error)
    assert (
        "body.messages[0].content: recorded 'the recorded prompt', incoming 'an incoming prompt'"
        in message
    ), message
