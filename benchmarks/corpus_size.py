#!/usr/bin/env python3
"""Cassette size per provider: the shared corpus's vcrpy YAML against its converted JSONL.

    python benchmarks/corpus_size.py                 # the table, Markdown
    python benchmarks/corpus_size.py --corpus DIR    # another folder of vcrpy YAML

Converts every HTTP cassette of ``../shared/corpus/pydantic-ai`` (read-only; gRPC
recordings are left out, llmcassette records HTTP only) with ``llmcassette convert`` into
a scratch folder and sums the bytes per provider (the corpus's first folder level).
Exit status 1 when a provider's JSONL is larger than its YAML (the #20 size bar).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

from llmcassette.cli.main import main as llmcassette

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pydantic-ai"


def sizes(corpus: Path) -> dict[str, tuple[int, int]]:
    """Per provider folder: (YAML bytes, converted JSONL bytes)."""
    sources = [p for p in sorted(corpus.rglob("*.yaml")) if "- request:" in p.read_text()]
    totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    with tempfile.TemporaryDirectory() as scratch:
        for number, source in enumerate(sources):
            out = Path(scratch) / str(number)
            if llmcassette(["convert", "--out", str(out), str(source)]) != 0:
                raise SystemExit(f"{source}: convert failed")
            (converted,) = out.glob("*.jsonl")
            provider = source.relative_to(corpus).parts[0]
            totals[provider][0] += source.stat().st_size
            totals[provider][1] += converted.stat().st_size
    return {name: (yaml, jsonl) for name, (yaml, jsonl) in sorted(totals.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"{args.corpus}: not a folder (the shared corpus is not here)", file=sys.stderr)
        return 2
    table = sizes(args.corpus)
    print("| provider | YAML bytes | JSONL bytes | ratio |")
    print("|---|---:|---:|---:|")
    for name, (yaml, jsonl) in table.items():
        print(f"| {name} | {yaml} | {jsonl} | {jsonl / yaml:.2f} |")
    yaml_all = sum(y for y, _ in table.values())
    jsonl_all = sum(j for _, j in table.values())
    print(f"| all | {yaml_all} | {jsonl_all} | {jsonl_all / yaml_all:.2f} |")
    return 1 if any(jsonl > yaml for yaml, jsonl in table.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
