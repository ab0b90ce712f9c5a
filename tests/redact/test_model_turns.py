"""A tool call's chosen secret (``{"password": "speak friend"}``) is the model's words, in
the answer and in the next request that sends the turn back in its history.

Found by a red-team pass: redacted in the request's history, the value became a known
secret and was taken out of the recorded answer too, so replay handed the code
``<REDACTED:password>`` instead of what the model said.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

import llmcassette

from ._server import serving

ARGUMENTS = json.dumps({"user": "frodo", "password": "speak friend"})
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "login", "arguments": ARGUMENTS},
}


class Model(BaseHTTPRequestHandler):
    """Answers a conversation's first turn with a login tool call, the next with text."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["content-length"])))
        message: dict[str, Any] = {"role": "assistant", "content": "Logged in."}
        if len(sent["messages"]) == 1:
            message = {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
        body = json.dumps({"object": "chat.completion", "choices": [{"message": message}]})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())


def agent(base: str, client_password: str | None) -> str:
    """Two turns of a tool loop; the arguments of the tool call the model made."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Log in as frodo"}]
    extra = {} if client_password is None else {"password": client_password}
    first = httpx.post(f"{base}/v1/chat/completions", json={"messages": messages, **extra})
    said = first.json()["choices"][0]["message"]
    messages += [said, {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    httpx.post(f"{base}/v1/chat/completions", json={"messages": messages, **extra})
    return str(said["tool_calls"][0]["function"]["arguments"])


@pytest.mark.parametrize("client_password", [None, "hunter2-the-clients-own"])
def test_a_tool_calls_password_is_the_models_words_in_both_turns(
    tmp_path: Path, client_password: str | None
) -> None:
    path = tmp_path / "loop.jsonl"
    with serving(Model) as base:
        with llmcassette.use_cassette(path, record_mode="all"):
            assert agent(base, client_password) == ARGUMENTS
        with llmcassette.use_cassette(path, record_mode="none"):
            assert agent(base, client_password) == ARGUMENTS
    text = path.read_text()
    assert text.count("speak friend") == 2  # the answer, and the turn sent back
    if client_password is not None:  # what the client itself sends stays a secret
        assert client_password not in text
        assert text.count("<REDACTED:password>") == 2
