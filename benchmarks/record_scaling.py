#!/usr/bin/env python3
"""Recording cost per call as a cassette grows: it must stay flat.

    python benchmarks/record_scaling.py                  # N = 100 and 1000, 3 runs each
    python benchmarks/record_scaling.py --n 100,2000 --runs 1

Records N streamed chat completions from the bundled local provider into one cassette,
each run in a fresh process of this interpreter (with llmcassette as installed in it),
and times the N calls and the save apart. Like OpenAI behind Cloudflare, the provider sets
a new cookie on every response, so the redactor learns one more credential value per call
and looks for every one it knows in every other part of the cassette: a search whose cost
grew with what it knew made recording quadratic (1,000 calls took 22 s instead of 1.4).

It prints the per-call times (the lowest of the runs) and their growth from the smallest N
to the largest: 1.0x is flat, 10x for 10 times the calls is quadratic.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child(n: int) -> None:
    """One run in this process; prints its timings as JSON."""
    import warnings

    import httpx

    import llmcassette
    from llmcassette.testing import LocalProvider

    warnings.simplefilter("ignore")  # the local provider's answers are not the point here
    with LocalProvider() as provider, tempfile.TemporaryDirectory() as folder:
        url = provider.openai_base_url + "/chat/completions"
        cassette = llmcassette.use_cassette(os.path.join(folder, "calls.jsonl"))
        cassette.__enter__()
        started = time.perf_counter()
        with httpx.Client() as client:
            for number in range(n):
                body = {
                    "model": "m",
                    "stream": True,
                    "messages": [{"role": "user", "content": f"call {number}"}],
                }
                with client.stream(
                    "POST", url, json=body, headers={"authorization": "Bearer sk-local"}
                ) as response:
                    for _ in response.iter_lines():
                        pass
        calls = time.perf_counter() - started
        cassette.__exit__(None, None, None)
        save = time.perf_counter() - started - calls
    print(json.dumps({"n": n, "calls_s": calls, "save_s": save}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="100,1000", help="comma-separated call counts")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per N")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    best: dict[int, dict[str, float]] = {}
    for n in sorted(int(part) for part in args.n.split(",")):
        for _ in range(args.runs):
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(n)],
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(done.stdout.strip().splitlines()[-1])
            kept = best.setdefault(n, run)
            for key in ("calls_s", "save_s"):
                kept[key] = min(kept[key], run[key])
    print("| calls | per call (ms) | save per call (ms) |")
    print("|---:|---:|---:|")
    for n, run in best.items():
        print(f"| {n} | {run['calls_s'] / n * 1e3:.2f} | {run['save_s'] / n * 1e3:.2f} |")
    first, last = best[min(best)], best[max(best)]
    growth = (last["calls_s"] / max(best)) / (first["calls_s"] / min(best))
    save_growth = (last["save_s"] / max(best)) / (first["save_s"] / min(best))
    print(
        f"\nper-call growth from {min(best)} to {max(best)} calls: {growth:.2f}x (record), "
        f"{save_growth:.2f}x (save); 1.0x is flat"
    )


if __name__ == "__main__":
    main()
