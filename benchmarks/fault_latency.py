"""How fast a ``hang`` fault lets go: cancel (async) and close (sync) to return, in ms.

The faults issue asks for a hang to be cancelled within 100 ms of the cancellation. This
records one stream from the local provider, then hangs it ``--runs`` times and reports the
median, p95 and worst time from ``task.cancel()`` (or ``response.close()`` from another
thread) until the reading code has returned.

    python benchmarks/fault_latency.py --runs 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx2

import llmcassette
from llmcassette import faults
from llmcassette.testing import LocalProvider

BODY = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
HEADERS = {"authorization": "Bearer sk-test"}


def async_cancel_ms(path: Path, url: str, marker: Path) -> float:
    async def consume() -> None:
        async with (
            httpx2.AsyncClient(timeout=None) as client,
            client.stream("POST", url, json=BODY, headers=HEADERS) as response,
        ):
            async for _ in response.aiter_lines():
                pass

    async def main() -> float:
        task = asyncio.create_task(consume())
        while not marker.exists():
            await asyncio.sleep(0.001)
        started = time.perf_counter()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return (time.perf_counter() - started) * 1000

    marker.unlink(missing_ok=True)
    with llmcassette.use_cassette(path, record_mode="none") as cassette:
        faults.schedule(cassette, faults.hang(after=2, marker=str(marker)))
        return asyncio.run(main())


def sync_close_ms(path: Path, url: str, marker: Path) -> float:
    marker.unlink(missing_ok=True)
    closed_at: list[float] = []
    with llmcassette.use_cassette(path, record_mode="none") as cassette, httpx2.Client() as client:
        faults.schedule(cassette, faults.hang(after=2, marker=str(marker)))
        with client.stream("POST", url, json=BODY, headers=HEADERS) as response:

            def close() -> None:
                while not marker.exists():
                    time.sleep(0.001)
                closed_at.append(time.perf_counter())
                response.close()

            closer = threading.Thread(target=close)
            closer.start()
            for _ in response.iter_lines():
                pass
            returned = time.perf_counter()
            closer.join()
    return (returned - closed_at[0]) * 1000


def summary(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return (
        f"{name}: median {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms, "
        f"worst {ordered[-1]:.2f} ms over {len(ordered)} runs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    runs = parser.parse_args().runs
    folder = Path(tempfile.mkdtemp())
    path, marker = folder / "hang.jsonl", folder / "hung.flag"
    with LocalProvider() as provider:
        url = provider.openai_base_url + "/chat/completions"
        with llmcassette.use_cassette(path), httpx2.Client() as client:
            client.post(url, json=BODY, headers=HEADERS).read()
        print(summary("async cancel", [async_cancel_ms(path, url, marker) for _ in range(runs)]))
        print(summary("sync close", [sync_close_ms(path, url, marker) for _ in range(runs)]))


if __name__ == "__main__":
    main()
