"""A request from another thread, made while one of vcrpy's own stubs (requests, urllib3,
boto3) is sending, is recorded and replayed like any other.

vcrpy's stubs send through a real connection inside a ``force_reset()`` window, which puts
the unpatched classes and transports back for the whole process until the request is out.
An agent that fans out over threads had requests escape the cassette in that window (and a
pooled connection made then stayed unrecorded). These tests open the window on purpose: the
first real request sent through urllib3 runs another thread's whole call, and waits for it,
before it goes out.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
import urllib3.connection

import llmcassette
from llmcassette.testing import LocalProvider


@pytest.fixture
def provider() -> Iterator[LocalProvider]:
    with LocalProvider() as running:
        yield running


def chat(base_url: str, prompt: str) -> dict[str, Any]:
    return {
        "url": f"{base_url}/chat/completions",
        "json": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]},
        "headers": {"authorization": "Bearer sk-not-a-real-key-000000000000"},
    }


def answer(response: Any) -> str:
    return str(response.json()["choices"][0]["message"]["content"])


def with_requests(base_url: str, prompt: str) -> str:
    with requests.Session() as session:  # a pool of its own: a new connection
        return answer(session.post(**chat(base_url, prompt), timeout=10))


def with_httpx2(base_url: str, prompt: str) -> str:
    with httpx2.Client(timeout=10) as client:
        return answer(client.post(**chat(base_url, prompt)))


def with_urllib3(base_url: str, prompt: str) -> str:
    call = chat(base_url, prompt)
    with urllib3.PoolManager() as pool:
        response = pool.request(
            "POST", call["url"], body=json.dumps(call["json"]), headers=call["headers"]
        )
        return str(json.loads(response.data)["choices"][0]["message"]["content"])


class DuringFirstSend:
    """Runs ``call`` in another thread, to its end, while the first real urllib3
    connection sends its request (inside vcrpy's window)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, call: Callable[[], str]) -> None:
        self.call = call
        self.results: list[str] = []
        self.errors: list[BaseException] = []
        self.started = False
        real_request = urllib3.connection.HTTPConnection.request

        def request(connection: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.started:  # the other thread's own request goes straight out
                self.started = True
                other = threading.Thread(target=self._run)
                other.start()
                other.join(timeout=30)
            return real_request(connection, *args, **kwargs)

        monkeypatch.setattr(urllib3.connection.HTTPConnection, "request", request)

    def _run(self) -> None:
        try:
            self.results.append(self.call())
        except BaseException as error:  # raised again in the test's thread (``result``)
            self.errors.append(error)

    def result(self) -> str:
        if self.errors:
            raise self.errors[0]
        assert self.results, "the first request was never sent through urllib3"
        return self.results[0]


def prompts_in(cassette: Path) -> list[str]:
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    return sorted(
        line["body"]["json"]["messages"][0]["content"]
        for line in lines
        if line.get("type") == "request"
    )


SENDERS = {"requests": with_requests, "urllib3": with_urllib3, "httpx2": with_httpx2}


@pytest.mark.parametrize("other", sorted(SENDERS))
def test_a_thread_sending_while_requests_sends_is_recorded(
    tmp_path: Path, provider: LocalProvider, monkeypatch: pytest.MonkeyPatch, other: str
) -> None:
    cassette = tmp_path / "fan_out.jsonl"
    base_url = provider.openai_base_url
    with monkeypatch.context() as patched:
        side = DuringFirstSend(patched, lambda: SENDERS[other](base_url, "from the other thread"))
        with llmcassette.use_cassette(cassette, record_mode="once"):
            first = with_requests(base_url, "from the first thread")
        recorded = (first, side.result())

    assert prompts_in(cassette) == ["from the first thread", "from the other thread"]
    assert "sk-not-a-real-key" not in cassette.read_text()

    provider.stop()  # the replay answers from the cassette, or fails
    with llmcassette.use_cassette(cassette, record_mode="none"):
        replayed = (
            with_requests(base_url, "from the first thread"),
            SENDERS[other](base_url, "from the other thread"),
        )
    assert replayed == recorded


def test_threads_through_vcrpy_stubs_are_all_recorded(
    tmp_path: Path, provider: LocalProvider
) -> None:
    cassette = tmp_path / "threads.jsonl"
    base_url = provider.openai_base_url
    prompts = [f"agent {n}" for n in range(8)]
    start = threading.Barrier(len(prompts))

    def agent(prompt: str) -> str:
        start.wait(timeout=10)
        return with_requests(base_url, prompt)

    def run_all() -> dict[str, str]:
        found: dict[str, str] = {}
        threads = [
            threading.Thread(target=lambda p=p: found.__setitem__(p, agent(p))) for p in prompts
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        return found

    with llmcassette.use_cassette(cassette, record_mode="once"):
        recorded = run_all()
    assert prompts_in(cassette) == sorted(prompts)

    provider.stop()
    with llmcassette.use_cassette(cassette, record_mode="none"):
        assert run_all() == recorded


HTTPS_CASSETTE = """\
interactions:
- request:
    body: null
    headers: {}
    method: GET
    uri: https://api.example.com/v1/models
  response:
    body:
      string: '{"data": []}'
    headers:
      Content-Type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""


def test_https_through_http_client_still_replays(tmp_path: Path) -> None:
    # The window still puts module names back: CPython's HTTPSConnection.__init__ reaches
    # its base through ``super(HTTPSConnection, self)``, by the name vcrpy patches.
    cassette = tmp_path / "https.yaml"
    cassette.write_text(HTTPS_CASSETTE)
    with llmcassette.use_cassette(cassette, record_mode="none", allow_playback_repeats=True):
        with urllib.request.urlopen("https://api.example.com/v1/models") as response:
            assert json.loads(response.read()) == {"data": []}
        connection = http.client.HTTPSConnection("api.example.com")
        connection.request("GET", "/v1/models")
        assert json.loads(connection.getresponse().read()) == {"data": []}
