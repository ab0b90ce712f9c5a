"""A request that fails before any response while recording is not in the cassette: the
cassette says so at its exit, unless a later recorded call (an SDK's retry) answers it."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

import llmcassette


def serve(port: int) -> http.server.ThreadingHTTPServer:
    class Answer(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def held() -> Iterator[socket.socket]:
    """A socket bound to a port of 127.0.0.1 and not listening: a connection to the port
    is refused, and no other test can take it meanwhile (as one could a port found free
    and let go, which made these tests fail now and then under pytest-xdist)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound


def port_of(held: socket.socket) -> int:
    return int(held.getsockname()[1])


def failed_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, llmcassette.FailedRequestNotRecordedWarning)
    ]


def test_a_request_refused_while_recording_is_named_at_exit(
    tmp_path: Path, held: socket.socket
) -> None:
    url = f"http://127.0.0.1:{port_of(held)}/v1/chat/completions"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with (
            llmcassette.use_cassette(tmp_path / "c", record_mode="once"),
            pytest.raises(httpx2.ConnectError),
        ):
            httpx2.post(url, json={"q": "slow"})
    (message,) = failed_warnings(caught)
    assert f"POST {url}: ConnectError after " in message
    assert "transport_error or hang fault" in message


def test_a_cancelled_request_is_named_too(tmp_path: Path, held: socket.socket) -> None:
    # A task cancelled while it waits for the answer (asyncio.wait_for, a hedged call).
    held.listen()  # accepts, never answers
    url = f"http://127.0.0.1:{port_of(held)}/v1/chat/completions"

    async def ask() -> None:
        async with httpx2.AsyncClient() as client:
            # asyncio's own TimeoutError: the builtin one only from Python 3.11
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(client.post(url, json={"q": "slow"}), 0.2)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            asyncio.run(ask())
    (message,) = failed_warnings(caught)
    assert f"POST {url}: cancelled after " in message


def test_a_failure_a_retry_got_an_answer_for_is_not_named(
    tmp_path: Path, held: socket.socket
) -> None:
    port = port_of(held)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
            with pytest.raises(httpx2.ConnectError):
                httpx2.post(url, json={"q": "again"})
            held.close()
            server = serve(port)  # the retry finds the provider up
            try:
                assert httpx2.post(url, json={"q": "again"}).status_code == 200
            finally:
                server.shutdown()
                server.server_close()
    assert failed_warnings(caught) == []
