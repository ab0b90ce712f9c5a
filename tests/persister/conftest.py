"""A tiny HTTP server on 127.0.0.1 whose answers the persister tests choose."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    body: bytes = b'{"ok":true}'


@dataclass
class LocalServer:
    """Serves ``replies[path]`` (or a default JSON reply) and counts the requests it got."""

    url: str
    replies: dict[str, Reply] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def reply(
        self, path: str, body: bytes, content_type: str = "application/json", **headers: str
    ) -> None:
        """Answer ``path`` with ``body``; extra headers as keyword arguments (``_`` for ``-``)."""
        named = {"Content-Type": content_type}
        named.update({name.replace("_", "-"): value for name, value in headers.items()})
        self.replies[path] = Reply(headers=named, body=body)


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "TestServer/1.0"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def date_time_string(self, timestamp: float | None = None) -> str:
        # A fixed Date header, so re-recording the same reply gives the same cassette line.
        return "Mon, 01 Jan 2024 00:00:00 GMT"

    def _reply(self) -> None:
        state: LocalServer = self.server.state  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        state.hits.append(self.path)
        reply = state.replies.get(self.path, Reply())
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    do_GET = do_POST = _reply

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    state = LocalServer(url=f"http://127.0.0.1:{server.server_address[1]}")
    server.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(autouse=True)
def _no_http_patch_left_behind() -> Iterator[None]:
    """Fail a test that leaves vcrpy's httpx2 patch installed once it is over.

    When a cassette's save raises inside vcrpy's ``__exit__`` (llmcassette refuses to
    overwrite an unreadable file there), vcrpy skips undoing its patches; they are undone
    only when the garbage collector frees the context manager, which pytest's exception
    info keeps alive in a reference cycle. Collect it here so later tests start clean.
    """
    import gc

    import httpx2

    original = httpx2.HTTPTransport.handle_request
    yield
    if httpx2.HTTPTransport.handle_request is not original:
        gc.collect()
    assert httpx2.HTTPTransport.handle_request is original, "vcrpy's patch was left installed"
