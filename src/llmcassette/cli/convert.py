"""Move cassettes between vcrpy's formats and llmcassette's JSONL, in both directions.

Reads what vcrpy's YAML and JSON serializers and pytest-recording write, gzip-compressed
YAML files, and the variant large LLM projects use (``parsed_body`` instead of ``body``,
JSON kept as YAML structures). Writes JSONL through the same writer, redaction and
fail-closed check as recording does; and writes vcrpy JSON for users who leave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmcassette._vcr import bridge as vcr_bridge
from llmcassette._vcr import serializer
from llmcassette._vcr.files import vcrpy_json
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.cli.paths import Opened
from llmcassette.errors import CassetteFormatError
from llmcassette.faults.placeholders import escape_body


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


def read_vcrpy(path: Path, loaded: dict[str, Any]) -> list[Interaction]:
    """The interactions of vcrpy cassette ``path`` (YAML, JSON, gzip-compressed YAML), as
    ``cli.paths`` read and parsed it (``loaded``)."""
    items: list[Interaction] = []
    for index, entry in enumerate(loaded["interactions"]):
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


def to_jsonl(opened: Opened, redaction: Any = None) -> str:
    """The llmcassette JSONL text of a vcrpy cassette ``cli.paths`` opened, redacted and checked."""
    from llmcassette.config import resolve_redaction
    from llmcassette.redact import Redactor
    from llmcassette.redact.scan import check_text

    assert opened.vcrpy is not None
    source = opened.path
    items = serializer.stamp(read_vcrpy(source, opened.vcrpy))
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


def to_vcrpy_json(opened: Opened) -> str:
    """The vcrpy JSON-serializer text of an llmcassette cassette ``cli.paths`` opened (for
    users who leave)."""
    cassette = opened.cassette
    assert cassette is not None
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
