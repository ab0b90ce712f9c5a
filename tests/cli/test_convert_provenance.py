"""A cassette ``convert`` made says so in its header: it was recorded by vcrpy, without body
verification, from the file named (issue 19: legacy cassettes are adopted, not failed)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import vcr

from llmcassette.cli.main import main
from llmcassette.testing import LocalProvider


def test_the_converted_header_names_the_vcrpy_source(tmp_path: Path) -> None:
    with LocalProvider() as provider, vcr.VCR().use_cassette(str(tmp_path / "old.yaml")):
        httpx2.post(
            f"{provider.url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": "Bearer sk-test"},
        )
    assert main(["convert", str(tmp_path / "old.yaml")]) == 0
    header, *others = map(json.loads, (tmp_path / "old.jsonl").read_text().splitlines())
    assert header["converted_from"] == {"format": "vcrpy"}
    # vcrpy does not say when it recorded: no conversion time passes for a recording time.
    assert [line for line in others if line["type"] == "end"] == [{"type": "end", "events": 0}]
