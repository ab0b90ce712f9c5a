"""What every test directory shares: how the whole pytest runs of the suite start, and a
server that answers anything."""

from __future__ import annotations

import http.server
import importlib
import pkgutil
import threading
from collections.abc import Iterator

import pytest

import llmcassette
from _replay_clock import ReplayClock
from llmcassette.transport import clock

# pytester forgets, when a test that uses it ends, every module first imported during that
# test; imported again later, a module makes new classes, and an ``except`` or isinstance
# holding the old one misses (a CassetteMismatch not caught, an SDK error not retried).
# Everything of llmcassette's (vcrpy's layer included) is imported before any test runs.
for _module in pkgutil.walk_packages(llmcassette.__path__, "llmcassette."):
    if not _module.name.endswith(("__main__", ".demo")):
        importlib.import_module(_module.name)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose pytest runs (and the runs they start) leave Hypothesis's plugin out.

    No project a test writes uses Hypothesis, and its plugin imports all of Hypothesis at
    the end of every run, for its summary: a quarter of a second of CPU for each of the
    suite's hundred-odd whole pytest runs. pytester clears PYTEST_ADDOPTS when it starts;
    this sets it afterwards.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester


@pytest.fixture
def any_server() -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 answering every request ``{}`` (a stand-in for an SDK's
    telemetry or metadata endpoint); its origin and the ``"METHOD /path"`` it got."""
    hits: list[str] = []

    class Anything(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self) -> None:
            hits.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = do_PUT = answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Anything)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


@pytest.fixture
def replay_clock(monkeypatch: pytest.MonkeyPatch) -> ReplayClock:
    """Replays in this test wait on a ``ReplayClock``, which returns at once: a test sees the
    waits a pace or a latency fault asks for without timing anything."""
    fake = ReplayClock()
    monkeypatch.setattr(clock, "now", fake.now)
    monkeypatch.setattr(clock, "wait", fake.wait)
    monkeypatch.setattr(clock, "wait_async", fake.wait_async)
    return fake
