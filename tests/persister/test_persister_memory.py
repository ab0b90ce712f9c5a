"""A cassette is held once while it loads: a large body is not kept as file, text and value.

The file's bytes are dropped once cut into lines, each line's text once parsed, so loading a
cassette whose response is megabytes of base64 (an image) peaks at about three copies of it:
the parsed value, its JSON text and the bytes replay serves. Measured with tracemalloc,
which counts allocations, not time.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import httpx

import llmcassette

# The `local_server` fixture (conftest.py) is a LocalServer.
LocalServer = Any


BODY_BYTES = 4_000_000


def load_peak(path: Path) -> int:
    """The most memory allocated at once while a replay cassette loads."""
    # Warm: the modules a first cassette imports are not part of the figure.
    with llmcassette.use_cassette(path, record_mode="none", allow_unused=True):
        pass
    tracemalloc.start()
    try:
        with llmcassette.use_cassette(path, record_mode="none", allow_unused=True):
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_loading_a_cassette_holds_a_large_body_about_three_times_at_most(
    tmp_path: Path, local_server: LocalServer
) -> None:
    image = base64.b64encode(os.urandom(BODY_BYTES * 3 // 4)).decode()
    local_server.reply("/v1/images", json.dumps({"data": [{"b64_json": image}]}).encode())
    path = tmp_path / "image.jsonl"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(f"{local_server.url}/v1/images", json={"prompt": "a cat"})
    assert path.stat().st_size > BODY_BYTES
    peak = load_peak(path)
    # It used to peak at 4 copies (the file's bytes and its whole text
    # were held while the lines were parsed).
    assert peak < 3.4 * BODY_BYTES, f"peak {peak / BODY_BYTES:.2f}x the body"


def test_a_large_text_body_is_held_about_twice_at_most(
    tmp_path: Path, local_server: LocalServer
) -> None:
    """A body stored as text is never rendered: its line's bytes, its text and the parsed
    string are each dropped once the next is made (the bytes used to stay, through the
    parse, in ``enumerate``'s result tuple)."""
    text = base64.b64encode(os.urandom(BODY_BYTES * 3 // 4)).decode()
    local_server.reply("/v1/speech", text.encode(), content_type="text/plain")
    path = tmp_path / "text.jsonl"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(f"{local_server.url}/v1/speech", json={"input": "hi"})
    assert '"body":{"text":' in path.read_text()
    peak = load_peak(path)
    assert peak < 2.4 * BODY_BYTES, f"peak {peak / BODY_BYTES:.2f}x the body"


def test_a_process_that_only_replays_never_imports_the_file_lock(
    tmp_path: Path, local_server: LocalServer
) -> None:
    # Only a save locks: filelock's modules added 0.6 MB to every replaying process, which
    # the real-corpus benchmark counts in the peak of its largest cassette.
    local_server.reply("/v1/chat", b'{"answer": 42}')
    path = tmp_path / "chat.jsonl"
    with llmcassette.use_cassette(path), httpx.Client() as client:
        client.post(f"{local_server.url}/v1/chat", json={"q": "?"})
    replay = f"""
import sys, httpx, llmcassette
with llmcassette.use_cassette({str(path)!r}, record_mode="none"), httpx.Client() as client:
    assert client.post({local_server.url + "/v1/chat"!r}, json={{"q": "?"}}).json() == {{"answer": 42}}
print(sorted(name for name in sys.modules if name.split(".")[0] == "filelock"))
"""
    done = subprocess.run(
        [sys.executable, "-c", replay], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
