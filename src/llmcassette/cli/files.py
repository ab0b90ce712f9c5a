"""``llmcassette scan`` / ``llmcassette redact`` over cassette files and folders."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.paths import files_under
from llmcassette.redact.redactor import Redactor, _content_type
from llmcassette.redact.scan import Finding, find_in_file, load_vcrpy


def cassette_paths(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """The cassette files named, and those under the folders named (``cli.paths``)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from (found for found in files_under(path) if isinstance(found, Path))
        else:
            yield path


def scan(redactor: Redactor, path: Path) -> list[Finding]:
    """Findings in one file (JSON files that are not cassettes give none)."""
    if path.suffix == ".json" and not _looks_like_vcrpy_json(path):
        return []
    return find_in_file(redactor.rules, path)


def _looks_like_vcrpy_json(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return b'"interactions"' in handle.read(65536)
    except OSError:
        return False


def redact_file(redactor: Redactor, path: Path) -> tuple[str | None, int]:
    """The new text of a cassette with the current rules, and how many values changed."""
    data = path.read_bytes()
    before = redactor.changes
    if path.suffix == ".jsonl":
        cassette = cassette_file.read(data, path)
        header = dict(cassette.header)
        header["redaction"] = redactor.header_field()
        text = cassette_file.write(
            cassette_file.Cassette(header, cassette.interactions),
            cassette,
            redaction=redactor,
        )
    else:
        if path.suffix == ".json" and not _looks_like_vcrpy_json(path):
            return None, 0
        text = _redact_vcrpy(redactor, path, data.decode("utf-8"))
    changed = redactor.changes - before
    return (text if text != data.decode("utf-8", errors="replace") else None), changed


def _redact_vcrpy(redactor: Redactor, path: Path, text: str) -> str:
    from llmcassette._vcr.files import vcrpy_text  # imports vcrpy: only when writing

    loaded = load_vcrpy(path, text)
    for entry in loaded.get("interactions") or []:
        request = entry.get("request") or {}
        if isinstance(request.get("uri"), str):
            request["uri"] = redactor.uri(request["uri"])
        request["headers"] = redactor.headers(request.get("headers") or {})
        request["body"] = _body(redactor, request.get("body"), request["headers"])
        response = entry.get("response") or {}
        response["headers"] = redactor.headers(response.get("headers") or {})
        body = response.get("body")
        if isinstance(body, dict):
            new = _response_body(redactor, body.get("string"), response["headers"])
            if new is not None:
                body["string"], response["headers"] = new
    return vcrpy_text(loaded, json_file=path.suffix == ".json")


def _body(redactor: Redactor, body: Any, headers: dict[str, Any]) -> Any:
    content_type = _content_type(headers)
    if isinstance(body, str):
        return redactor.body_text(body, content_type)
    if isinstance(body, bytes):
        return redactor.body_bytes(body, content_type)
    return body


def _response_body(
    redactor: Redactor, body: Any, headers: dict[str, Any]
) -> tuple[Any, dict[str, Any]] | None:
    if isinstance(body, str):
        return redactor.body_text(body, _content_type(headers)), headers
    if not isinstance(body, bytes):
        return None
    from llmcassette.cassette.compression import decode_content

    listed = {k: v if isinstance(v, list) else [v] for k, v in headers.items()}
    decoded, new_headers = decode_content(body, listed)
    redacted = redactor.body_bytes(decoded, _content_type(headers))
    if redacted == decoded:
        return None
    return redacted, dict(new_headers)  # stored decoded: the compressed copy held a secret
