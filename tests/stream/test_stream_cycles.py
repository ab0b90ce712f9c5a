"""Recording a response leaves no reference cycle behind: refcounting frees it all.

A cycle per recorded response (the stream holding a callback that holds the response)
kept every response, its request and its chunks alive until the garbage collector ran,
and made it run dozens of times per thousand requests.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

import llmcassette


class _Events(httpx2.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        yield b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
        yield b"data: [DONE]\n\n"


def _answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_Events())


@pytest.mark.parametrize(
    "read",
    [
        "all",
        pytest.param(
            "closed early",
            marks=pytest.mark.skipif(
                sys.version_info < (3, 11),
                # httpx2 alone leaves one there, without llmcassette: its iter_lines' nested
                # generators, closed, keep their frames in GeneratorExit tracebacks.
                reason="on Python 3.10 httpx2's early-closed stream is a cycle of its own",
            ),
        ),
    ],
)
def test_recording_a_stream_leaves_no_cycle(tmp_path: Path, read: str) -> None:
    with (
        httpx2.Client(transport=httpx2.MockTransport(_answer)) as client,
        llmcassette.use_cassette(tmp_path / "c.jsonl", record_mode="all"),
    ):
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for index in range(20):
                with client.stream("POST", "http://127.0.0.1:9/v1", json={"n": index}) as r:
                    if read == "all":
                        list(r.iter_lines())
                    else:
                        next(r.iter_lines())
            gc.collect()
            left = [type(item).__name__ for item in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if was_enabled:
                gc.enable()
    assert left == []
