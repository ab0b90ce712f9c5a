#!/usr/bin/env python3
"""Recording cost against live calls, with live and recorded runs interleaved.

    python benchmarks/record_ratio.py                  # 7 pairs of N=1000
    python benchmarks/record_ratio.py --pairs 11 --n 500

The shared benchmark (``run.py``) times each contender's record runs back to back. On a
busy 2-core machine the speed drifts by up to 2x within minutes, so the ratio of one such
run swings between about 1.3x and 1.8x for the same code. Here each pair is one live run
and one recording run, started one right after the other (which goes first alternates),
so drift hits both halves of a pair alike. The median of the pair ratios is the figure.

It uses the shared harness's server and workload (``../shared/bench``, read-only) and
times what its worker times for the record phase: open the cassette, the N requests
(streamed, read with ``iter_lines``), close (which writes the file). Each run is a fresh
process of this interpreter, with llmcassette as installed in it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_HARNESS = Path(__file__).resolve().parent.parent.parent / "shared" / "bench"


def child(mode: str, n: int, url: str, path: str, harness: str) -> None:
    """One timed run in this process; prints its timings as JSON."""
    sys.path.insert(0, harness)
    import httpx2
    import workload

    llmcassette = None
    if mode == "record":
        # Imported before the clock, as the harness's worker imports the tool (both).
        import vcr  # noqa: F401

        import llmcassette

    clock = time.perf_counter
    started = clock()
    cassette = None
    if llmcassette is not None:
        cassette = llmcassette.use_cassette(path, record_mode="once")
        cassette.__enter__()
    opened = clock()
    with httpx2.Client(timeout=60) as client:
        requests_started = clock()
        for i in range(n):
            with client.stream(
                "POST",
                url + workload.PATH,
                json=workload.request_payload(i),
                headers=workload.REQUEST_HEADERS,
            ) as response:
                lines = list(response.iter_lines())
            problem = workload.check(i, response.status_code, lines)
            if problem:
                sys.exit(f"response {i} is wrong: {problem}")
        requests_s = clock() - requests_started
    closing = clock()
    if cassette is not None:
        cassette.__exit__(None, None, None)
    done = clock()
    total = (opened - started) + requests_s + (done - closing)
    timings = {"open_s": opened - started, "requests_s": requests_s, "save_s": done - closing}
    print(json.dumps({"total_s": total, **timings}))


def run_one(mode: str, n: int, url: str, harness: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "cassette.jsonl")
        command = [sys.executable, __file__, "--child", mode, "--n", str(n), "--url", url]
        command += ["--path", path, "--harness", harness]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"the {mode} run failed:\n{result.stderr[-2000:]}")
    timings: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=7, help="live/record pairs (default 7)")
    parser.add_argument("--n", type=int, default=1000, help="requests per run (default 1000)")
    parser.add_argument("--harness", default=str(DEFAULT_HARNESS), help="shared/bench folder")
    parser.add_argument("--child", choices=["live", "record"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.url, args.path, args.harness)
        return
    if not (Path(args.harness) / "server.py").is_file():
        sys.exit(f"no benchmark harness at {args.harness} (pass --harness DIR)")
    sys.path.insert(0, args.harness)
    from server import Server

    server = Server().start()
    try:
        ratios, live, recorded = [], [], []
        for pair in range(args.pairs):
            order = ("live", "record") if pair % 2 == 0 else ("record", "live")
            timings = {mode: run_one(mode, args.n, server.base_url, args.harness) for mode in order}
            live.append(timings["live"]["total_s"])
            recorded.append(timings["record"]["total_s"])
            ratios.append(recorded[-1] / live[-1])
            print(
                f"pair {pair + 1}: live {live[-1]:.3f} s, recorded {recorded[-1]:.3f} s "
                f"(open {timings['record']['open_s']:.3f} s, save {timings['record']['save_s']:.3f} s)"
                f": {ratios[-1]:.2f}x",
                flush=True,
            )
    finally:
        server.stop()
    print(
        f"N={args.n}, {args.pairs} pairs: median live {statistics.median(live):.3f} s, "
        f"median recorded {statistics.median(recorded):.3f} s, "
        f"median pair ratio {statistics.median(ratios):.2f}x "
        f"(range {min(ratios):.2f}x to {max(ratios):.2f}x)"
    )


if __name__ == "__main__":
    main()
