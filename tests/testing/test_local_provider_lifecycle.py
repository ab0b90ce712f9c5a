"""Start/stop, broken and endless streams, and the command-line entry point."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

import llmcassette.testing
from llmcassette.testing import LocalProvider, StreamBehaviour

AUTH = {"Authorization": "Bearer sk-test"}
CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hello"}]}


def wait_for(condition: Callable[[], bool], timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def drain(items: Iterator[Any], into: list[Any]) -> None:
    """Collect items one by one, so that those before an error are kept."""
    for item in items:
        into.append(item)


def test_urls_and_restart() -> None:
    provider = LocalProvider()
    with pytest.raises(RuntimeError):
        _ = provider.url
    with provider:
        assert provider.url == f"http://127.0.0.1:{provider.port}"
        assert provider.openai_base_url == provider.url + "/v1"
        assert provider.anthropic_base_url == provider.url
        assert provider.start() is provider  # already running: no-op
        port = provider.port
    provider.stop()  # idempotent
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"http://127.0.0.1:{port}/v1/models")
    provider.start()  # the same port again
    try:
        assert provider.port == port
        assert httpx2.get(provider.openai_base_url + "/models", headers=AUTH).status_code == 200
    finally:
        provider.stop()


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_cut_after_breaks_the_body(provider: LocalProvider, module: Any) -> None:
    provider.behaviour.cut_after = 3
    received = []
    url = provider.openai_base_url + "/chat/completions"
    with module.Client() as client, client.stream("POST", url, json=CHAT, headers=AUTH) as response:
        assert response.status_code == 200
        with pytest.raises(module.RemoteProtocolError, match="incomplete chunked read"):
            drain(response.iter_raw(), received)
    assert len(received) == 3
    assert b"[DONE]" not in b"".join(received)


def test_cut_after_applies_to_ndjson(provider: LocalProvider) -> None:
    provider.behaviour = StreamBehaviour(cut_after=2)
    body = {"model": "llama", "prompt": "one two three"}
    lines = []
    with (
        httpx2.Client() as client,
        client.stream("POST", provider.url + "/api/generate", json=body) as response,
        pytest.raises(httpx2.RemoteProtocolError),
    ):
        drain(response.iter_lines(), lines)
    assert [json.loads(line)["done"] for line in lines] == [False, False]


def test_endless_stream_ends_quietly_when_the_client_leaves(
    provider: LocalProvider, capfd: pytest.CaptureFixture[str]
) -> None:
    provider.behaviour.endless = True
    with httpx2.Client() as client:
        for route, body in [
            ("/v1/chat/completions", CHAT),
            ("/v1/responses", {"model": "m", "input": "hi", "stream": True}),
            ("/api/chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        ]:
            url = provider.url + route
            with client.stream("POST", url, json=body, headers=AUTH) as response:
                events = response.iter_raw()
                first = [next(events) for _ in range(5)]
                assert provider.active_streams == 1
            assert all(b"[DONE]" not in chunk for chunk in first)
            assert wait_for(lambda: provider.active_streams == 0)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_endless_stream_with_delay_keeps_going(provider: LocalProvider) -> None:
    provider.behaviour = StreamBehaviour(endless=True, event_delay=0.005, events=2)
    with (
        httpx2.Client() as client,
        client.stream(
            "POST", provider.openai_base_url + "/chat/completions", json=CHAT, headers=AUTH
        ) as response,
    ):
        lines = (line for line in response.iter_lines() if line)
        data = [json.loads(line[6:]) for line in itertools.islice(lines, 40)]
    contents = [d["choices"][0]["delta"].get("content") for d in data[1:]]
    assert len(contents) == 39
    assert all(isinstance(c, str) and c for c in contents)


@pytest.mark.parametrize("reading", [True, False], ids=["reading", "stalled"])
def test_stop_cuts_endless_streams_promptly(reading: bool) -> None:
    provider = LocalProvider().start()
    provider.behaviour.endless = True
    client = httpx2.Client()
    try:
        request = client.build_request(
            "POST", provider.openai_base_url + "/chat/completions", json=CHAT, headers=AUTH
        )
        response = client.send(request, stream=True)
        chunks = response.iter_raw()
        next(chunks)
        if not reading:
            # Let the server fill the socket buffers and block in send().
            time.sleep(0.2)
        started = time.monotonic()
        provider.stop()
        assert time.monotonic() - started < 1.0
        assert provider.active_streams == 0
        with pytest.raises(httpx2.RemoteProtocolError):
            for _ in chunks:
                pass
        response.close()
    finally:
        client.close()
        provider.stop()


def test_stop_with_idle_keep_alive_connection() -> None:
    provider = LocalProvider().start()
    with httpx2.Client() as client:
        client.get(provider.openai_base_url + "/models", headers=AUTH)
        started = time.monotonic()
        provider.stop()
        assert time.monotonic() - started < 1.0


def test_slow_start_then_stop_during_first_event_delay() -> None:
    provider = LocalProvider().start()
    provider.behaviour.first_event_delay = 30
    with httpx2.Client() as client:
        request = client.build_request(
            "POST", provider.openai_base_url + "/chat/completions", json=CHAT, headers=AUTH
        )
        response = client.send(request, stream=True)
        assert response.status_code == 200
        started = time.monotonic()
        provider.stop()
        assert time.monotonic() - started < 1.0
        with pytest.raises(httpx2.RemoteProtocolError):
            response.read()
        response.close()


def test_reset(provider: LocalProvider) -> None:
    provider.queue_error(500)
    provider.behaviour.endless = True
    httpx2.get(provider.url + "/nowhere")
    provider.queue_error(500)
    provider.reset()
    assert provider.requests == []
    assert provider.behaviour == StreamBehaviour()
    assert httpx2.get(provider.openai_base_url + "/models", headers=AUTH).status_code == 200


def test_requests_list_is_the_same_object(provider: LocalProvider) -> None:
    requests = provider.requests
    httpx2.get(provider.openai_base_url + "/models", headers=AUTH)
    provider.reset()
    httpx2.get(provider.openai_base_url + "/models")
    assert requests is provider.requests
    assert [r.headers.get("authorization") for r in requests] == [None]


def test_invalid_json_is_400(provider: LocalProvider) -> None:
    response = httpx2.post(
        provider.openai_base_url + "/chat/completions", content=b"{nope", headers=AUTH
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_chunked_request_body(provider: LocalProvider) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "chunky"}]})
    response = httpx2.post(
        provider.openai_base_url + "/chat/completions",
        content=iter([body[:10].encode(), body[10:].encode()]),
        headers=AUTH,
    )
    assert response.json()["choices"][0]["message"]["content"] == "You said: chunky"


def test_module_entry_point(tmp_path: Path) -> None:
    src = Path(llmcassette.testing.__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    # Ctrl-C as a terminal sends it: a process started with SIGINT ignored keeps it ignored
    # (the pytest-xdist worker running this had it ignored in some full runs), and then
    # Python never raises KeyboardInterrupt. The entry point is run as `-m` runs it.
    entry = (
        "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "runpy.run_module('llmcassette.testing', run_name='__main__', alter_sys=True)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", entry, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        # --port 0: the provider picks a free port and prints it (no race with other tests).
        port = int(first.rsplit(":", 1)[1])
        assert first.startswith(f"llmcassette local provider on http://127.0.0.1:{port}")
        assert f"base_url=http://127.0.0.1:{port}/v1" in process.stdout.readline()
        # One line per wire format it speaks, each with the option its SDK takes.
        rest = [process.stdout.readline() for _ in range(8)]
        assert [line.split(":")[0].strip() for line in rest] == [
            "Azure OpenAI",
            "Anthropic",
            "Gemini",
            "Bedrock",
            "Groq",
            "Cohere",
            "Mistral",
            "Ollama",
        ]
        assert rest[0].split()[-1] == f"azure_endpoint=http://127.0.0.1:{port}"
        response = httpx2.get(f"http://127.0.0.1:{port}/v1/models", headers=AUTH)
        assert response.status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_module_entry_point_on_a_port_in_use_says_so_in_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        src = Path(llmcassette.testing.__file__).resolve().parents[2]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
        }
        result = subprocess.run(
            [sys.executable, "-m", "llmcassette.testing", "--port", str(port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in lines[0]
    assert "choose another --port" in lines[0]
