#!/usr/bin/env python3
"""Convert the real corpus in one call, against vcrpy loading it, in the same run.

    python benchmarks/corpus_convert.py --scratch /tmp/bench-corpus            # 3 rounds
    python benchmarks/corpus_convert.py --scratch /tmp/bench-corpus --rounds 5

``../shared/bench-corpus`` (set it up with its ``setup.sh``) times ``llmcassette convert``
as 74 CLI calls, one per cassette folder, because ``--out`` once flattened the tree. It
now mirrors it, so a whole corpus converts in one call, which is how a user converts a
suite. Each round here runs, one after the other in fresh processes: the harness's own
``worker.py load vcrpy`` (vcrpy loading every HTTP cassette: the anchor), then
``llmcassette convert --out OUT <the corpus folder>`` from the harness's project folder
(its settings, default redaction). The figure is the median of the per-round ratios
convert / vcrpy load. Each round's output is checked to hold one JSONL file per HTTP
cassette of the manifest, where the harness expects it.

Stdlib only; it uses the harness's venvs (``venv-vcrpy``, ``venv-llmcassette``), so
install the llmcassette to measure into ``venv-llmcassette`` first, or give ``--src``: the
``src`` folder of a checkout, run with that venv's Python (``python -m llmcassette``) without
installing it. Its modules are compiled first (``compileall``), as installing them would:
with ``PYTHONDONTWRITEBYTECODE`` set, each call would otherwise compile every module again.

    python benchmarks/corpus_convert.py --scratch /tmp/bench-corpus --src src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_HARNESS = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-corpus"


def vcrpy_load_s(harness: Path, scratch: Path) -> float:
    """vcrpy's whole-corpus load time, measured by the harness's worker."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "load.json")
        command = [str(scratch / "venv-vcrpy" / "bin" / "python"), str(harness / "worker.py")]
        command += ["load", "vcrpy", "--scratch", str(scratch), "--out", out]
        subprocess.run(command, cwd=scratch / "project", capture_output=True, check=True)
        with open(out) as handle:
            return float(json.load(handle)["load_s"])


def llmcassette_command(scratch: Path, src: Path | None) -> tuple[list[str], dict[str, str]]:
    """How to run the ``llmcassette`` to measure, and its environment: the one installed in
    ``venv-llmcassette``, or the checkout ``src`` run with that venv's Python."""
    venv = scratch / "venv-llmcassette" / "bin"
    if src is None:
        return [str(venv / "llmcassette")], dict(os.environ)
    python = str(venv / "python")
    subprocess.run([python, "-m", "compileall", "-q", str(src)], check=True)
    return [python, "-m", "llmcassette"], {**os.environ, "PYTHONPATH": str(src)}


def convert_s(scratch: Path, source: Path, out: Path, src: Path | None = None) -> float:
    """Wall time of one ``llmcassette convert`` call over the whole corpus."""
    shutil.rmtree(out, ignore_errors=True)
    command, env = llmcassette_command(scratch, src)
    started = time.perf_counter()
    # Exit status 1: the gRPC and WebSocket recordings are refused, one line each.
    subprocess.run(
        [*command, "convert", "--out", str(out), str(source)],
        cwd=scratch / "project",
        env=env,
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - started


def missing_outputs(manifest: dict[str, list[dict[str, str]]], out: Path) -> list[str]:
    """The HTTP cassettes of the manifest with no JSONL file where the harness reads it."""
    return [
        entry["rel"]
        for entry in manifest["files"]
        if entry["kind"] == "http" and not (out / entry["rel"]).with_suffix(".jsonl").is_file()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scratch", required=True, help="the bench-corpus scratch folder")
    parser.add_argument("--harness", default=str(DEFAULT_HARNESS), help="shared/bench-corpus")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--src", help="a checkout's src folder to measure, instead of the installed llmcassette"
    )
    args = parser.parse_args()
    scratch, harness = Path(args.scratch).resolve(), Path(args.harness).resolve()
    src = Path(args.src).resolve() if args.src else None
    manifest = json.loads((scratch / "manifest.json").read_text())
    source = Path(manifest["src"])
    out = scratch / "jsonl-one-call"
    ratios, loads, converts = [], [], []
    for round_number in range(1, args.rounds + 1):
        loads.append(vcrpy_load_s(harness, scratch))
        converts.append(convert_s(scratch, source, out, src))
        ratios.append(converts[-1] / loads[-1])
        print(
            f"round {round_number}: vcrpy load {loads[-1]:.2f} s, "
            f"convert {converts[-1]:.2f} s: {ratios[-1]:.2f}x",
            flush=True,
        )
    missing = missing_outputs(manifest, out)
    print(
        f"median vcrpy load {statistics.median(loads):.2f} s, median convert "
        f"{statistics.median(converts):.2f} s, median ratio {statistics.median(ratios):.2f}x "
        f"(range {min(ratios):.2f}x to {max(ratios):.2f}x); "
        f"{len(missing)} HTTP cassette(s) without a JSONL file"
    )
    if missing:
        sys.exit("not converted: " + ", ".join(missing[:10]))


if __name__ == "__main__":
    main()
