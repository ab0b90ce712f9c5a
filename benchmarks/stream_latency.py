"""Streaming bars of issue 5, measured in one run: time to first event while recording
(vs live without llmcassette and vs vcrpy's own stubs), paced replay accuracy, and instant
replay of a 1000-event stream."""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

import openai
import vcr

import llmcassette
from llmcassette.testing import LocalProvider


def first_and_total(client: openai.OpenAI, prompt: str) -> tuple[float, float, int]:
    started = time.monotonic()
    first = None
    count = 0
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=True
    )
    for _ in stream:
        count += 1
        if first is None:
            first = time.monotonic() - started
    return first or 0.0, time.monotonic() - started, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    provider = LocalProvider().start()
    provider.behaviour.events = 20
    provider.behaviour.event_delay = 0.05
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-x", max_retries=0)
    live, ours, theirs = [], [], []
    for rep in range(args.reps):
        live.append(first_and_total(client, f"p{rep}"))
        with llmcassette.use_cassette(work / f"ours{rep}", record_mode="once"):
            ours.append(first_and_total(client, f"p{rep}"))
        with vcr.VCR().use_cassette(str(work / f"vcr{rep}.yaml"), record_mode="once"):
            theirs.append(first_and_total(client, f"p{rep}"))
    med = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
    print("time to first event while recording (20 events, 50 ms apart), median of", args.reps)
    print(
        f"  live, no tool:          first {med(live, 0) * 1000:7.1f} ms  total {med(live, 1) * 1000:7.1f} ms"
    )
    print(
        f"  llmcassette recording:  first {med(ours, 0) * 1000:7.1f} ms  total {med(ours, 1) * 1000:7.1f} ms  ratio {med(ours, 0) / med(live, 0):.2f}"
    )
    print(
        f"  vcrpy 9 recording:      first {med(theirs, 0) * 1000:7.1f} ms  total {med(theirs, 1) * 1000:7.1f} ms  ratio {med(theirs, 0) / med(live, 0):.2f}"
    )

    # Paced replay accuracy against the recorded event times.
    import json

    recorded = [
        json.loads(line)["t"]
        for line in (work / "ours0.jsonl").read_text().splitlines()
        if '"type": "event"' in line
    ]
    gaps_recorded = [b - a for a, b in itertools.pairwise(recorded)]
    provider.stop()
    if True:
        with llmcassette.use_cassette(work / "ours0", record_mode="none", pace="recorded"):
            started = time.monotonic()
            stamps = []
            for _ in client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "p0"}], stream=True
            ):
                stamps.append(time.monotonic() - started)
    gaps_replayed = [b - a for a, b in itertools.pairwise(stamps)]
    total_rec = recorded[-2] - recorded[0]
    total_rep = stamps[-1] - stamps[0]
    errors = [
        abs(r - p) / r
        for r, p in zip(gaps_recorded[:-1], gaps_replayed[: len(gaps_recorded) - 1], strict=True)
        if r > 0.01
    ]
    print(
        f"pace='recorded': recorded span {total_rec * 1000:.1f} ms, replayed span {total_rep * 1000:.1f} ms "
        f"({total_rep / total_rec * 100:.1f}%); per-gap error median {statistics.median(errors) * 100:.1f}%, max {max(errors) * 100:.1f}%"
    )

    # 1000 events, instant replay vs the recorded duration.
    provider = LocalProvider().start()
    provider.behaviour.events = 1000
    provider.behaviour.event_delay = 0.001
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-x", max_retries=0)
    with llmcassette.use_cassette(work / "big", record_mode="once"):
        _, rec_total, n = first_and_total(client, "big")
    provider.stop()
    with llmcassette.use_cassette(work / "big", record_mode="none"):
        _, rep_total, n2 = first_and_total(client, "big")
    print(
        f"1000-event stream: recorded in {rec_total * 1000:.0f} ms, instant replay {rep_total * 1000:.0f} ms "
        f"({rep_total / rec_total * 100:.1f}% of recorded), {n} vs {n2} chunks"
    )


if __name__ == "__main__":
    main()
