"""``scan``, ``redact`` and ``check --secrets`` over the files ``cli.paths`` opened: each
file is read once and parsed once, and was classified before anything looks inside it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.paths import JSONL, VCRPY, Opened
from llmcassette.redact.redactor import Redactor, _content_type
from llmcassette.redact.scan import Finding, find_in_jsonl, find_in_vcrpy


def scan_opened(redactor: Redactor, opened: Opened) -> list[Finding]:
    """Findings in a file ``cli.paths`` opened (read once, parsed once)."""
    name = os.fspath(opened.path)
    if opened.kind == JSONL:
        return find_in_jsonl(redactor.rules, opened.text, name)
    if opened.kind != VCRPY or opened.vcrpy is None:
        return []
    return find_in_vcrpy(redactor.rules, opened.vcrpy, opened.text, name)


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


def _redact_vcrpy(redactor: Redactor, path: Path, text: str) -> str:
    from llmcassette._vcr.files import vcrpy_text  # imports vcrpy: only when writing
    from llmcassette.cassette import vcrpy_files

    json_file = path.name.removesuffix(".gz").endswith(".json")
    loaded = vcrpy_files.parse(text, json_file=json_file)
    # Changed in place, so that either layout (interactions, or requests and responses) is
    # written back as it was read.
    for entry in vcrpy_files.interactions_of(loaded):
        request = entry.get("request")
        if isinstance(request, dict):
            if isinstance(request.get("uri"), str):
                request["uri"] = redactor.uri(request["uri"])
            request["headers"] = redactor.headers(request.get("headers") or {})
            content_type = _content_type(request["headers"])
            body = request.get("body")
            if isinstance(body, str):
                request["body"] = redactor.body_text(body, content_type)
            elif isinstance(body, bytes):
                request["body"] = redactor.body_bytes(body, content_type)
            _replace_contents(request, redactor.known_in(request))
        response = entry.get("response")
        if isinstance(response, dict):
            _replace_contents(response, redactor.vcr_response(response))
    return vcrpy_text(loaded, json_file=json_file)


def _replace_contents(mapping: dict[str, Any], new: dict[str, Any]) -> None:
    if new is not mapping:
        mapping.clear()
        mapping.update(new)
