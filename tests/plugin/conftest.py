"""A tiny echo server for the whole-pytest-run tests of the plugin."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest


class EchoServer:
    """Answers every POST with ``{"echo": <request JSON>, "version": <version>}``."""

    def __init__(self) -> None:
        self.version = 1
        self.hits = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                server.hits += 1
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length) or b"null")
                body = json.dumps({"echo": request, "version": server.version}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/echo"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[EchoServer]:
    server = EchoServer()
    monkeypatch.setenv("ECHO_URL", server.url)
    yield server
    server.stop()
