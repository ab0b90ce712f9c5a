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


def _vcrpy_cassette(path: Path, request_body: object, metadata: object = None) -> Path:
    import yaml

    data: dict[str, object] = {
        "interactions": [
            {
                "request": {
                    "body": request_body,
                    "headers": {"content-encoding": ["gzip"]} if request_body else {},
                    "method": "POST",
                    "uri": "https://api.example.test/v1/chat",
                },
                "response": {
                    "body": {"string": "{}"},
                    "headers": {},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    if metadata is not None:
        data["metadata"] = metadata
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("where", ["gzip request body", "metadata"])
def test_a_value_redact_cannot_replace_is_said_not_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """Found by a red-team pass: ``scan`` found these and advised ``redact``, which said
    "unchanged" (or "redacted N values" of the others) and exited 0, the key still there."""
    import gzip

    if where == "metadata":
        cassette = _vcrpy_cassette(tmp_path / "x.yaml", None, {"token": KEY})
    else:
        body = gzip.compress(json.dumps({"note": KEY}).encode())
        cassette = _vcrpy_cassette(tmp_path / "x.yaml", body)
    before = cassette.read_bytes()
    assert main(["redact", str(cassette)]) == 2
    err = capsys.readouterr().err
    assert "still matches redaction rule 'openai-api-key'" in err
    assert "no rule of redact replaces this value" in err
    assert err.rstrip().endswith("not changed")
    assert KEY not in err
    assert cassette.read_bytes() == before
