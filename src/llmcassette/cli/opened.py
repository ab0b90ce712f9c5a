"""``scan``, ``redact`` and ``check --secrets`` over the files ``cli.paths`` opened: each
file is read once and parsed once, and was classified before anything looks inside it."""

from __future__ import annotations

import os

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.files import _redact_vcrpy
from llmcassette.cli.paths import JSONL, VCRPY, Opened
from llmcassette.redact.redactor import Redactor
from llmcassette.redact.scan import (
    Finding,
    _decoded_response,
    _line_of,
    find_in_jsonl,
    find_in_value,
)


def scan_opened(redactor: Redactor, opened: Opened) -> list[Finding]:
    """Findings in a file ``cli.paths`` opened (read once, parsed once)."""
    name = os.fspath(opened.path)
    if opened.kind == JSONL:
        return find_in_jsonl(redactor.rules, opened.text, name)
    if opened.kind != VCRPY or opened.vcrpy is None:
        return []
    findings: list[Finding] = []
    for index, entry in enumerate(opened.vcrpy["interactions"]):
        if not isinstance(entry, dict):
            continue
        line = _line_of(opened.text, index)
        response = _decoded_response(entry.get("response") or {})
        for json_path, rule in find_in_value(
            redactor.rules, {"request": entry.get("request"), "response": response}
        ):
            findings.append(Finding(name, line, f"interactions[{index}].{json_path}", rule))
    return findings


def redact_opened(redactor: Redactor, opened: Opened) -> tuple[str | None, int]:
    """``redact_file`` for a file ``cli.paths`` opened."""
    before = redactor.changes
    if opened.kind == JSONL and opened.cassette is not None:
        cassette = opened.cassette
        header = dict(cassette.header)
        header["redaction"] = redactor.header_field()
        text = cassette_file.write(
            cassette_file.Cassette(header, cassette.interactions),
            cassette,
            redaction=redactor,
        )
    elif opened.kind == VCRPY:
        text = _redact_vcrpy(redactor, opened.path, opened.text)
    else:
        return None, 0
    changed = redactor.changes - before
    return (text if text != opened.text else None), changed
