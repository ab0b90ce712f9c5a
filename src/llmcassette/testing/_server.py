"""The HTTP layer: routing, framing, stream pacing and connection bookkeeping."""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import logging
import re
import selectors
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from llmcassette.testing import (
    _anthropic,
    _azure,
    _bedrock,
    _cohere,
    _gemini,
    _groq,
    _ollama,
    _openai,
)
from llmcassette.testing._state import ProviderState, QueuedError, ReceivedRequest, StreamBehaviour
from llmcassette.testing._wire import (
    HTTP_DATE,
    Incoming,
    JsonReply,
    Reply,
    StreamReply,
    compact,
    request_digest,
)

logger = logging.getLogger("llmcassette.testing")

_MODEL_ERROR = re.compile(r"error-(\d{3})")


@dataclass(frozen=True)
class _Family:
    """What differs between providers outside the happy path."""

    error: Callable[..., JsonReply]
    check_auth: Callable[[Incoming], JsonReply | None]


_OPENAI = _Family(_openai.error, _openai.check_auth)
_ANTHROPIC = _Family(_anthropic.error, _anthropic.check_auth)
_OLLAMA = _Family(_ollama.error, _ollama.check_auth)
_GEMINI = _Family(_gemini.error, _gemini.check_auth)
_GROQ = _Family(_groq.error, _openai.check_auth)
_COHERE = _Family(_cohere.error, _cohere.check_auth)
_BEDROCK = _Family(_bedrock.error, _bedrock.check_auth)
_AZURE = _Family(_azure.error, _azure.check_auth)

_ROUTES: dict[tuple[str, str], tuple[_Family, Callable[[Incoming], Reply]]] = {
    ("POST", "/v1/chat/completions"): (_OPENAI, _openai.chat_completions),
    ("POST", "/v1/responses"): (_OPENAI, _openai.responses),
    ("GET", "/v1/models"): (_OPENAI, _openai.models),
    ("POST", "/v1/messages"): (_ANTHROPIC, _anthropic.messages),
    ("POST", "/api/chat"): (_OLLAMA, _ollama.chat),
    ("POST", "/api/generate"): (_OLLAMA, _ollama.generate),
    ("POST", "/openai/v1/chat/completions"): (_GROQ, _groq.chat_completions),
    ("POST", "/v2/chat"): (_COHERE, _cohere.chat),
}


def _family_for(path: str) -> _Family:
    if _gemini.is_gemini(path):
        return _GEMINI
    if _bedrock.is_bedrock(path):
        return _BEDROCK
    if _azure.is_azure(path):
        return _AZURE
    if path.startswith(_groq.PREFIX + "/"):
        return _GROQ
    if path.startswith("/v2/"):
        return _COHERE
    if path.startswith("/api/"):
        return _OLLAMA
    if path.startswith("/v1/messages"):
        return _ANTHROPIC
    return _OPENAI


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        name, _, params = part.partition(";")
        if name.strip().lower() not in ("gzip", "*"):
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        return quality > 0
    return False


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    # --- plumbing -------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        # Without TCP_NODELAY small event chunks could sit in Nagle's buffer and arrive merged.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except (OSError, ValueError):
            # The client hung up, or stop() shut the socket: nothing useful to report.
            self.close_connection = True

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the default handler prints one line per request to stderr."""

    def version_string(self) -> str:
        """The Server header."""
        return "llmcassette-local"

    def date_time_string(self, timestamp: float | None = None) -> str:
        """A fixed Date header, so re-recording produces identical headers."""
        return HTTP_DATE

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # --- answering ------------------------------------------------------------------------

    def _dispatch(self) -> None:
        state = self.server.state
        target = urlsplit(self.path)
        body = self._read_body()
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        state.record(ReceivedRequest(self.command, target.path, target.query, headers, body))

        behaviour = state.snapshot()
        try:
            payload = json.loads(body) if body.strip() else {}
        except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
            payload = None
        req = Incoming(
            method=self.command,
            path=target.path,
            headers=headers,
            payload=payload if isinstance(payload, dict) else {},
            digest=request_digest(self.command, target.path, body),
            events=behaviour.events,
            query=target.query,
        )
        try:
            reply = self._answer(req, state.take_error(), payload)
        except Exception:
            logger.exception("llmcassette.testing: failed to answer %s %s", req.method, req.path)
            reply = _family_for(req.path).error(req, 500, "local provider bug; see the log")

        if behaviour.latency > 0 and self.server.stopping.wait(behaviour.latency):
            self._drop_connection()  # the provider is stopping
            return
        if isinstance(reply, StreamReply):
            self._send_stream(reply, behaviour)
        else:
            self._send_json(reply, accept_gzip=_accepts_gzip(headers.get("accept-encoding", "")))

    # BaseHTTPRequestHandler looks up do_<METHOD>; every method goes through _dispatch.
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def _answer(self, req: Incoming, queued: QueuedError | None, payload: object) -> Reply:
        route = _ROUTES.get((req.method, req.path))
        if route is None and _gemini.is_gemini(req.path):
            route = (_GEMINI, _gemini.route)
        elif route is None and _bedrock.is_bedrock(req.path):
            route = (_BEDROCK, _bedrock.route)
        elif route is None and _azure.is_azure(req.path):
            route = (_AZURE, _azure.route)
        family = route[0] if route else _family_for(req.path)
        if queued is not None:
            reply = family.error(req, queued.status)
            if queued.body is not None:
                reply.payload = queued.body
            if queued.retry_after is not None:
                reply.headers.append(("retry-after", _seconds(queued.retry_after)))
            return reply
        if route is None:
            return family.error(req, 404, f"Invalid URL ({req.method} {req.path})")
        denied = family.check_auth(req)
        if denied is not None:
            return denied
        if not isinstance(payload, dict):
            return family.error(req, 400, "The request body is not a JSON object.")
        wanted = _MODEL_ERROR.fullmatch(req.model)
        if wanted:
            reply = family.error(req, int(wanted.group(1)))
            if reply.status == 429:
                reply.headers.append(("retry-after", "0"))
            return reply
        return route[1](req)

    def _send_json(self, reply: JsonReply, *, accept_gzip: bool) -> None:
        if reply.indent is None:
            data = compact(reply.payload).encode()
        else:
            data = json.dumps(reply.payload, indent=reply.indent, ensure_ascii=False).encode()
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        if reply.compressible and accept_gzip:
            # mtime=0 keeps the compressed bytes identical between runs.
            data = gzip.compress(data, mtime=0)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, reply: StreamReply, behaviour: StreamBehaviour) -> None:
        self.send_response(200)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stopping = self.server.stopping
        self.server.state.stream_delta(+1)
        try:
            for index, event in enumerate(_events(reply, behaviour.endless)):
                if behaviour.cut_after is not None and index >= behaviour.cut_after:
                    self._drop_connection()
                    return
                delay = behaviour.first_event_delay if index == 0 else behaviour.event_delay
                if (delay > 0 and stopping.wait(delay)) or stopping.is_set():
                    self._drop_connection()
                    return
                # One write per event = one HTTP chunk, sent at once (the wfile is unbuffered).
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")
        finally:
            self.server.state.stream_delta(-1)

    def _drop_connection(self) -> None:
        """End the response mid-body: no terminator, no zero-length chunk."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _events(reply: StreamReply, endless: bool) -> Iterator[bytes]:
    yield from reply.head
    yield from reply.content
    if endless:
        for i in itertools.count():
            yield reply.more(i)
    yield from reply.tail


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], state: ProviderState) -> None:
        self.state = state
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._changed = threading.Condition()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        # Made before binding: a failed bind calls server_close(), which closes these too.
        self._wake_reader, self._wake_writer = socket.socketpair()
        super().__init__(address, _Handler)
        # handle_request() only runs once the socket is readable; the timeout is a safety net.
        self.timeout = 0.1

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), which can stall for seconds without DNS.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def serve(self) -> None:
        """Accept connections until stop() is called."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            while not self.stopping.is_set():
                ready = selector.select()
                if not self.stopping.is_set() and any(
                    key.fileobj is self.socket for key, _ in ready
                ):
                    self.handle_request()

    def stop_serving(self) -> None:
        """Make serve() return promptly."""
        self.stopping.set()
        # Wake the selector at once instead of polling the flag.
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"x")

    def server_close(self) -> None:
        """Close the listening socket and the wake-up pair."""
        super().server_close()
        self._wake_reader.close()
        self._wake_writer.close()

    def track(self, connection: socket.socket) -> None:
        """Remember a live connection so stop() can cut it."""
        with self._changed:
            self._connections.add(connection)
            if self.stopping.is_set():
                # Accepted just before stop() took its snapshot of live connections.
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def untrack(self, connection: socket.socket) -> None:
        """Forget a finished connection."""
        with self._changed:
            self._connections.discard(connection)
            self._changed.notify_all()

    def close_connections(self, timeout: float) -> None:
        """Shut every live connection down and wait (bounded) for their handlers to finish."""
        with self._changed:
            live = list(self._connections)
        for connection in live:
            # shutdown() (unlike close()) also wakes a handler blocked in send or recv.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._connections and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
