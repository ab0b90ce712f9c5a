"""Move cassettes between vcrpy's formats and llmcassette's JSONL, in both directions.

Reads what vcrpy's YAML and JSON serializers and pytest-recording write, gzip-compressed
YAML files, and the variant large LLM projects use (``parsed_body`` instead of ``body``,
JSON kept as YAML structures). Writes JSONL through the same writer, redaction and
fail-closed check as recording does; and writes vcrpy JSON for users who leave.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from llmcassette._vcr import bridge as vcr_bridge
from llmcassette._vcr import serializer
from llmcassette._vcr.files import vcrpy_json
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import vcrpy_files
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.errors import CassetteFormatError
from llmcassette.faults.placeholders import escape_body


def _load_text(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":  # gzip-compressed cassettes (pydantic-ai, large suites)
        data = gzip.decompress(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CassetteFormatError(path, None, f"not UTF-8 text ({error})") from None


def _load(path: Path) -> dict[str, Any]:
    text = _load_text(path)
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    try:
        loaded = vcrpy_files.parse(text, json_file=name.endswith(".json"))
    except Exception as error:
        raise CassetteFormatError(
            path,
            vcrpy_files.error_line(error),
            f"cannot read this vcrpy cassette: {type(error).__name__}: {error}",
        ) from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("interactions"), list):
        raise CassetteFormatError(path, None, "not a vcrpy cassette (no 'interactions' list)")
    return loaded


def _headers(raw: Any) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        return {}
    return {
        str(name): [str(v) for v in value] if isinstance(value, list) else [str(value)]
        for name, value in raw.items()
    }


def _body(part: dict[str, Any], response: bool) -> bytes | None:
    if "parsed_body" in part:  # JSON kept as a structure: write it back as compact JSON
        return json.dumps(part["parsed_body"], separators=(",", ":"), ensure_ascii=False).encode()
    body = part.get("body")
    if response and isinstance(body, dict):
        body = body.get("string")
    if body is None:
        return None if not response else b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, (dict, list)):
        return json.dumps(body).encode()
    return str(body).encode("utf-8")


def read_vcrpy(path: Path) -> list[Interaction]:
    """The interactions of a vcrpy cassette file (YAML, JSON, gzip-compressed YAML)."""
    items: list[Interaction] = []
    for index, entry in enumerate(_load(path)["interactions"]):
        request = entry.get("request") or {}
        response = entry.get("response") or {}
        status = response.get("status") or {}
        if "request" not in entry and any(key.startswith("request_") for key in entry):
            raise CassetteFormatError(
                path,
                None,
                f"interaction {index} is a gRPC recording ({sorted(entry)[0]}), not an HTTP "
                "one; llmcassette records HTTP traffic only",
            )
        if "method" not in request or "uri" not in request:
            raise CassetteFormatError(path, None, f"interaction {index} has no method or uri")
        response_headers, response_body = (
            _headers(response.get("headers")),
            _body(response, response=True),
        )
        # vcrpy recordings hold literal text: keep any "{{fromRequest" in it from becoming a
        # placeholder (llmcassette.faults).
        response_body, response_headers = escape_body(response_body or b"", response_headers)
        items.append(
            Interaction(
                method=str(request["method"]),
                uri=str(request["uri"]),
                request_headers=_headers(request.get("headers")),
                request_body=_body(request, response=False),
                status=int(status.get("code", response.get("status_code", 200))),
                reason=str(status.get("message") or ""),
                response_headers=response_headers,
                response_body=response_body,
            )
        )
    return items


def to_jsonl(source: Path, redaction: Any = None) -> str:
    """The llmcassette JSONL text of a vcrpy cassette, redacted and checked."""
    from llmcassette.config import resolve_redaction
    from llmcassette.redact import Redactor
    from llmcassette.redact.scan import check_text

    items = serializer.stamp(read_vcrpy(source))
    header = cassette_file.new_header(serializer.RECORDED_BY)
    config = resolve_redaction(redaction)
    if not config.enabled:
        return cassette_file.write(Cassette(header, items))
    redactor = Redactor(config)
    header["redaction"] = redactor.header_field()
    text = cassette_file.write(Cassette(header, items), redaction=redactor)
    if config.fail_closed:
        check_text(redactor.rules, text, source)
    return text


def to_vcrpy_json(source: Path) -> str:
    """The vcrpy JSON-serializer text of an llmcassette cassette (for users who leave)."""
    cassette = cassette_file.read(source.read_bytes(), source)
    requests = []
    responses = []
    for item in cassette.interactions:
        request, response = vcr_bridge.to_vcr(item)
        requests.append(request)
        responses.append(
            {
                "status": response["status"],
                "headers": response["headers"],
                "body": {"string": item.response_body},
            }
        )
    return vcrpy_json(requests, responses)
