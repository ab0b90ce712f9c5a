"""``llmcassette redact``: the count it reports is the number of values it replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_support import Record, read_records, write_records

from llmcassette.cli.main import main

KEY = "sk-proj-" + "Ab3" * 16
OTHER_KEY = "sk-proj-" + "Zq9" * 16


def test_the_count_is_the_values_replaced_and_the_sum_of_the_kinds(
    tmp_path: Path, record: Record, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = record(tmp_path / "leak.jsonl")  # the first call streams
    records = read_records(cassette)
    records[1]["body"]["json"]["messages"][0]["content"] = KEY
    write_records(cassette, records)
    assert main(["redact", "--dry-run", str(cassette)]) == 0
    assert capsys.readouterr().out == (f"{cassette}: would redact 1 value(s) (openai-api-key x1)\n")

    # In a stream event too, and a second key in the second call: three values, two keys.
    event = next(line for line in records if line.get("type") == "event")
    event["data"]["choices"][0]["delta"]["content"] = KEY
    second = [line for line in records if line.get("type") == "request"][1]
    second["body"]["json"]["messages"][0]["content"] = OTHER_KEY
    write_records(cassette, records)
    assert main(["redact", "--json", str(cassette)]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert (result["changed"], result["kinds"], result["written"]) == (
        3,
        {"openai-api-key": 3},
        True,
    )
    text = cassette.read_text()
    assert KEY not in text
    assert OTHER_KEY not in text
    assert main(["redact", str(cassette)]) == 0
    assert capsys.readouterr().out == f"{cassette}: unchanged\n"
