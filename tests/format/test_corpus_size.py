"""Each provider's cassettes in the shared corpus (pydantic-ai's vcrpy YAML), converted to
JSONL, take no more bytes than the YAML they came from (issue 20's size bar), and each
converted file reads back as the current format version. Skips without ``../shared/corpus``."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from llmcassette.cassette import FORMAT_VERSION, jsonl
from llmcassette.cli.main import main

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "pydantic-ai"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")


def test_no_provider_grows_when_converted(tmp_path: Path) -> None:
    sources = [p for p in sorted(CORPUS.rglob("*.yaml")) if "- request:" in p.read_text()]
    sizes: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for number, source in enumerate(sources):
        relative = source.relative_to(CORPUS)
        assert main(["convert", "--out", str(tmp_path / str(number)), str(source)]) == 0
        converted = tmp_path / str(number) / source.with_suffix(".jsonl").name
        cassette = jsonl.read(converted.read_bytes(), converted)
        assert cassette.header["format_version"] == FORMAT_VERSION
        sizes[relative.parts[0]][0] += source.stat().st_size
        sizes[relative.parts[0]][1] += converted.stat().st_size
    grown = {name: f"{new / old:.3f}" for name, (old, new) in sizes.items() if new > old}
    assert grown == {}, f"JSONL larger than YAML (ratio): {grown}"
    assert len(sizes) >= 10  # every provider folder was counted
