#!/usr/bin/env python3
"""Count the CPU instructions llmcassette adds to each recorded streamed interaction.

    python benchmarks/record_instructions.py            # N=200, needs valgrind
    python benchmarks/record_instructions.py --n 500
    python benchmarks/record_instructions.py --no-redaction   # what redaction adds
    python benchmarks/record_instructions.py --vcrpy          # vcrpy alone, for comparison

Wall-clock timings of recording vary by up to 2x between runs on a shared 2-core
machine, which hides any change smaller than that. Instruction counts under valgrind's
callgrind do not: two runs of the same code agree to a few parts per thousand (with
``PYTHONHASHSEED`` fixed, which this script does).

Each measurement is a fresh process that sends N streamed chat completions through
``httpx2`` to an in-process ``MockTransport`` (no server, no sockets), without and with
``llmcassette.use_cassette`` recording them, the save included. The same is done with
one request, and the difference divided by N - 1, so imports and start-up cancel out.
Reported: instructions per interaction without llmcassette, with it, and the overhead.

The shared benchmark (``benchmarks/run.py``) gives the wall-clock ratio against live
calls; this script tells which change moved the overhead, and by how much.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The workload, run in the measured process: OpenAI-style chunks like shared/bench's.
CHILD = r"""
import json, sys, tempfile, os
import httpx2

mode, n, redaction = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "on"

def chunk(i, k, delta, finish=None):
    return {"id": f"chatcmpl-{i:08d}", "object": "chat.completion.chunk", "created": 1764547200,
            "model": "gpt-4o-mini", "system_fingerprint": "fp_b1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

WORDS = "Replayed answers arrive as small deltas until the final chunk says stop".split()

def events(i):
    chunks = [chunk(i, 0, {"role": "assistant", "content": ""})]
    chunks.append(chunk(i, 1, {"content": f"Echo: question {i}."}))
    chunks += [chunk(i, k, {"content": " " + WORDS[k % len(WORDS)]}) for k in range(2, 11)]
    chunks.append(chunk(i, 11, {}, "stop"))
    out = [b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\n\n" for c in chunks]
    return out + [b"data: [DONE]\n\n"]

class Stream(httpx2.SyncByteStream):
    def __init__(self, parts):
        self.parts = parts
    def __iter__(self):
        yield from self.parts

def handler(request):
    i = int(json.loads(request.content)["messages"][-1]["content"].split()[-1])
    headers = {"content-type": "text/event-stream; charset=utf-8", "x-request-id": f"req_{i}"}
    return httpx2.Response(200, headers=headers, stream=Stream(events(i)))

if mode == "record":
    import llmcassette
elif mode == "vcrpy":
    import vcr
folder = tempfile.mkdtemp()
path = os.path.join(folder, "c.jsonl")
with httpx2.Client(transport=httpx2.MockTransport(handler)) as client:
    cassette = None
    if mode == "record":
        redaction_option = {} if redaction else {"redaction": False}
        cassette = llmcassette.use_cassette(path, record_mode="once", **redaction_option)
    elif mode == "vcrpy":  # vcrpy alone: its yaml serializer and default match_on
        cassette = vcr.VCR(record_mode="once").use_cassette(path[: -len(".jsonl")] + ".yaml")
    if cassette is not None:
        cassette.__enter__()
    for i in range(n):
        body = {"model": "gpt-4o-mini", "stream": True, "temperature": 0,
                "messages": [{"role": "system", "content": "You are a terse assistant."},
                             {"role": "user", "content": f"question {i}"}]}
        headers = {"authorization": "Bearer sk-not-a-secret"}
        with client.stream("POST", "http://127.0.0.1:9/v1/chat/completions", json=body,
                           headers=headers) as response:
            lines = list(response.iter_lines())
        assert len(lines) == 26, lines
    if cassette is not None:
        cassette.__exit__(None, None, None)
"""

_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(mode: str, n: int, redaction: bool = True) -> int:
    """Instructions executed by one child process (``base`` or ``record``, N requests)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                CHILD,
                mode,
                str(n),
                "on" if redaction else "off",
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    found = _COLLECTED.search(result.stderr)
    if result.returncode != 0 or found is None:
        sys.exit(f"the {mode} run with N={n} failed:\n{result.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="interactions (default 200)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--no-redaction",
        action="store_true",
        help="record with redaction=False, to tell what redaction adds",
    )
    parser.add_argument(
        "--vcrpy",
        action="store_true",
        help="record with vcrpy alone (yaml serializer, default match_on) instead",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (e.g. apt-get install valgrind)")
    per: dict[str, float] = {}
    for mode in ("base", "vcrpy" if args.vcrpy else "record"):
        redaction = not args.no_redaction
        one, many = instructions(mode, 1, redaction), instructions(mode, args.n, redaction)
        per["record" if mode == "vcrpy" else mode] = (many - one) / (args.n - 1)
    figures = {
        "n": args.n,
        "base_per_interaction": round(per["base"]),
        "record_per_interaction": round(per["record"]),
        "overhead_per_interaction": round(per["record"] - per["base"]),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"N={args.n}: without {'vcrpy' if args.vcrpy else 'llmcassette'} "
        f"{per['base'] / 1e6:.3f} M instructions per "
        f"interaction, recording {per['record'] / 1e6:.3f} M, "
        f"overhead {(per['record'] - per['base']) / 1e6:.3f} M"
        + (" (redaction off)" if args.no_redaction else "")
    )


if __name__ == "__main__":
    main()
