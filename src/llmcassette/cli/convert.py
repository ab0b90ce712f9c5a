"""Move cassettes between vcrpy's formats and llmcassette's JSONL, in both directions.

Reads what vcrpy's YAML and JSON serializers and pytest-recording write, gzip-compressed
YAML files, and the variant large LLM projects use (``parsed_body`` instead of ``body``,
JSON kept as YAML structures). Writes JSONL through the same writer, redaction and
fail-closed check as recording does; and writes vcrpy JSON for users who leave.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmcassette._vcr import serializer
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import vcrpy_files
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.cli import output
from llmcassette.cli.output import Call, Recorded
from llmcassette.cli.paths import JSONL, VCRPY, Found, Opened, open_found
from llmcassette.errors import CassetteFormatError, LlmCassetteError, record
from llmcassette.faults.placeholders import escape_body


class UnreadableInteractionError(CassetteFormatError):
    """An interaction of a vcrpy cassette whose method, URI, status or body is in no shape
    that vcrpy or its forks wrote: converting it would lose data, so nothing is written."""

    code = "LC110 unreadable-interaction"


class NotJsonRepresentableError(CassetteFormatError):
    """A body that vcrpy's JSON serializer cannot hold (bytes that are not UTF-8)."""

    code = "LC111 binary-body-in-json"


# botocore's stub records header values it was given as bytes by their Python repr.
_BYTES_REPR = re.compile(r"""\Ab(?:'[^'\\]*(?:\\.[^'\\]*)*'|"[^"\\]*(?:\\.[^"\\]*)*")\Z""", re.S)


def _header_text(value: Any) -> str:
    """A header name or value as text: bytes (YAML ``!!binary``) and the Python repr of
    bytes (``"b'application/json'"``, botocore) decoded, numbers written out."""
    if isinstance(value, str) and _BYTES_REPR.match(value):
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).decode("latin-1")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _headers(raw: Any) -> dict[str, list[str]]:
    """vcrpy headers (``{name: [values]}``, ``{name: value}`` or ``[[name, value], ...]``)."""
    if isinstance(raw, list):  # pairs, as some stubs store them
        pairs = [item for item in raw if isinstance(item, (list, tuple)) and len(item) == 2]
        out: dict[str, list[str]] = {}
        for name, value in pairs:
            out.setdefault(_header_text(name), []).append(_header_text(value))
        return out
    if not isinstance(raw, dict):
        return {}
    return {
        _header_text(name): [_header_text(v) for v in value]
        if isinstance(value, list)
        else [_header_text(value)]
        for name, value in raw.items()
    }


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, (dict, list)):  # JSON kept as YAML structures
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return str(value).encode("utf-8")


def _parsed_body(value: Any) -> bytes:
    """A ``parsed_body`` (pydantic-ai's serializer keeps JSON bodies as YAML structures) as
    the bytes that serializer hands vcrpy, so a test sees what it saw before conversion."""
    if isinstance(value, (str, bytes, bytearray)):
        return _as_bytes(value)
    return json.dumps(value).encode("utf-8")


# Where the stubs of vcrpy and its forks keep a response body, in the order they are tried.
RESPONSE_BODY_FIELDS = ("body.string", "body.base64_string", "parsed_body", "content", "text")
_MISSING = object()


def _response_body(response: dict[str, Any]) -> bytes | None:
    """A vcrpy response's body in any stub generation's shape, or None when there is none."""
    if "parsed_body" in response:
        return _parsed_body(response["parsed_body"])
    body = response.get("body", _MISSING)
    if isinstance(body, dict):
        if "string" in body:
            return _as_bytes(body["string"]) if body["string"] is not None else b""
        if isinstance(body.get("base64_string"), str):
            return base64.b64decode(body["base64_string"])
        if body:  # a YAML mapping that is the JSON body itself
            return _as_bytes(body)
    elif isinstance(body, (str, bytes, bytearray, list)):
        return _as_bytes(body)
    for field in ("content", "text"):  # vcrpy's early httpx stubs, and forks
        if isinstance(response.get(field), (str, bytes, bytearray)):
            return _as_bytes(response[field])
    return None


def _request_body(request: dict[str, Any]) -> bytes | None:
    if "parsed_body" in request:
        return _parsed_body(request["parsed_body"])
    body = request.get("body")
    if isinstance(body, dict) and set(body) <= {"string", "encoding"} and "string" in body:
        body = body["string"]
    if body is None:
        return None
    return _as_bytes(body)


def _status(response: dict[str, Any]) -> tuple[int, str] | None:
    """The status code and reason of a vcrpy response (``status: {code, message}``,
    ``status_code``, or a bare ``status`` number), None when it has none."""
    status = response.get("status")
    code: Any = None
    reason: Any = response.get("reason") or ""
    if isinstance(status, dict):
        code, reason = status.get("code"), status.get("message") or reason
    elif status is not None:
        code = status
    if code is None:
        code = response.get("status_code")
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)
    if isinstance(code, bool) or not isinstance(code, int):
        return None
    return code, str(reason)


def _not_http(entry: dict[str, Any]) -> str | None:
    """What other traffic a recorded entry without a ``request`` holds, if it is one that
    pydantic-ai-style suites record beside HTTP: a gRPC call (``request_sample``, or one
    nested under its client's method, as xAI's collections client does) or a WebSocket frame
    (``kind`` and ``direction``). None for anything else."""
    if any(str(key).startswith("request_") for key in entry):
        return f"a gRPC recording ({sorted(entry)[0]})"
    if len(entry) == 1:
        ((name, nested),) = entry.items()
        if isinstance(nested, dict) and any(str(key).startswith("request_") for key in nested):
            return f"a gRPC recording ({name})"
    kind = entry.get("kind")
    if isinstance(kind, str) and ("direction" in entry or kind == "close"):
        direction = entry.get("direction")
        return f"a WebSocket {kind}" + (f" ({direction})" if isinstance(direction, str) else "")
    return None


def read_vcrpy(path: Path, loaded: dict[str, Any]) -> list[Interaction]:
    """The interactions of vcrpy cassette ``path`` (YAML, JSON, gzip-compressed YAML; the
    ``interactions`` layout or parallel ``requests``/``responses`` lists), as ``cli.paths``
    read and parsed it (``loaded``). An interaction whose method, URI, status or response
    body cannot be found is an ``UnreadableInteractionError`` naming it and what it has."""
    items: list[Interaction] = []
    # Numbered from 1 in what is said, as every message numbers interactions (#1).
    for number, entry in enumerate(vcrpy_files.interactions_of(loaded), start=1):
        if not isinstance(entry, dict):
            raise UnreadableInteractionError(
                path, None, f"interaction #{number} is a {type(entry).__name__}, not a mapping"
            )
        other = None if "request" in entry else _not_http(entry)
        if other is not None:
            raise CassetteFormatError(
                path,
                None,
                f"interaction #{number} is {other}, not an HTTP exchange; llmcassette records "
                "HTTP traffic only",
            )
        request, response = entry.get("request"), entry.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict):
            missing = "request" if not isinstance(request, dict) else "response"
            raise UnreadableInteractionError(
                path, None, f"interaction #{number} has no {missing} mapping"
            )
        if "method" not in request or "uri" not in request:
            raise UnreadableInteractionError(
                path, None, f"interaction #{number} has no method or uri"
            )
        status = _status(response)
        if status is None:
            raise UnreadableInteractionError(
                path,
                None,
                f"interaction #{number}: the response has no status code this reader knows "
                f"(it has {_keys(response)}); expected status.code or status_code",
            )
        response_body = _response_body(response)
        if response_body is None:  # never an empty body in place of one not found
            raise UnreadableInteractionError(
                path,
                None,
                f"interaction #{number}: the response has no body this reader knows (it has "
                f"{_keys(response)}); expected one of {', '.join(RESPONSE_BODY_FIELDS)}",
                "convert reads the shapes of vcrpy and its forks; open an issue with the "
                "shape of this file",
            )
        # vcrpy recordings hold literal text: keep any "{{fromRequest" in it from becoming a
        # placeholder (llmcassette.faults).
        response_body, response_headers = escape_body(
            response_body, _headers(response.get("headers"))
        )
        items.append(
            Interaction(
                method=_header_text(request["method"]).upper(),  # recorded "post" is POST
                uri=_header_text(request["uri"]),
                request_headers=_headers(request.get("headers")),
                request_body=_request_body(request),
                status=status[0],
                reason=status[1],
                response_headers=response_headers,
                response_body=response_body,
            )
        )
    return items


def _keys(mapping: dict[str, Any]) -> str:
    return ", ".join(sorted(map(str, mapping))) or "no fields"


def target_folder(source: Path, folders: list[Path], out: str | None) -> Path:
    """Where the converted ``source`` goes: beside it, or under ``out`` at the place it has
    under the folder it was found in (the source tree mirrored: two ``test_a.yaml`` in two
    folders stay two files)."""
    if out is None:
        return source.parent
    for folder in folders:
        try:
            relative = source.parent.relative_to(folder)
        except ValueError:
            continue
        return Path(out) / relative
    return Path(out)


def jsonl_of(opened: Opened, redaction: Any = None) -> tuple[str, dict[str, int]]:
    """The llmcassette JSONL text of a vcrpy cassette ``cli.paths`` opened, redacted and
    checked, and how many values redaction replaced, per rule: outside those
    spans, converting back (``to_vcrpy_json``) gives every byte of the original."""
    from llmcassette.config import resolve_redaction
    from llmcassette.redact import Redactor
    from llmcassette.redact.scan import check_text

    assert opened.vcrpy is not None
    source = opened.path
    # No ``recorded_at`` per interaction: vcrpy keeps no recording time. The servers' Date
    # headers tell how old the traffic is, which is what ``max_age`` and ``report`` judge.
    items = read_vcrpy(source, opened.vcrpy)
    recorded = vcrpy_files.recorded_on(item.response_headers for item in items)
    header = cassette_file.new_header(serializer.RECORDED_BY, recorded)
    # Provenance: vcrpy recorded this without checking bodies, so replay may treat a body
    # that changed since as drift to report rather than as a mismatch (issue 19).
    header["converted_from"] = {"format": "vcrpy"}
    metadata = opened.vcrpy.get("metadata") if isinstance(opened.vcrpy, dict) else None
    if isinstance(metadata, dict) and metadata:  # vcrpy's cassette.get_metadata values
        header["metadata"] = metadata
    config = resolve_redaction(redaction)
    if not config.enabled:
        return cassette_file.write(Cassette(header, items)), {}
    redactor = Redactor(config)
    header["redaction"] = redactor.header_field()
    text = cassette_file.write(Cassette(header, items), redaction=redactor)
    if config.fail_closed:
        check_text(redactor.rules, text, source)
    return text, dict(sorted(redactor.counts.items()))


# An escaped marker as ``escape_body`` stored it: ``{{!fromRequest`` is ``{{fromRequest``.
_ESCAPED_MARKER = re.compile(r"\{\{!(!*)fromRequest")


def _vcrpy_text(body: bytes | None, path: Path, where: str) -> str | None:
    if body is None:
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotJsonRepresentableError(
            path,
            None,
            f"{where} is binary (not UTF-8 text); vcrpy's JSON serializer cannot hold it",
            "keep the JSONL cassette, or record this interaction again with vcrpy's YAML "
            "serializer",
        ) from None


def to_vcrpy_json(opened: Opened, target: Path | None = None) -> tuple[str, dict[str, int]]:
    """The vcrpy JSON-serializer text of an llmcassette cassette ``cli.paths`` opened (for
    users who leave): every header value, status, reason and body as the cassette has it,
    and how many values redaction replaced, per rule. A cassette that older rules redacted
    is redacted again by the current ones first, and the text is read by the fail-closed
    scan (``SecretLeakError``: nothing is written), as a recording would write it."""
    from llmcassette.cli.opened import project_redactor, redacted_again, replaced
    from llmcassette.redact.scan import check_vcrpy_text

    cassette = opened.cassette
    assert cassette is not None
    redactor = project_redactor()
    again = redacted_again(cassette, redactor)
    redacted: dict[str, int] = {}
    if again is not None:
        redacted = replaced(opened.text, again)
        cassette = cassette_file.read(again.encode("utf-8"), opened.path)
    interactions = []
    for number, item in enumerate(cassette.interactions, start=1):
        where = f"interaction #{number} ({item.method} {item.uri})"
        body = _vcrpy_text(item.response_body, opened.path, f"{where}: the response body")
        if body is not None and "fromRequest" in body:
            body = _ESCAPED_MARKER.sub(lambda m: "{{" + m.group(1) + "fromRequest", body)
        interactions.append(
            {
                "request": {
                    "body": _vcrpy_text(
                        item.request_body, opened.path, f"{where}: the request body"
                    ),
                    "headers": {
                        name: list(values) for name, values in item.request_headers.items()
                    },
                    "method": item.method,
                    "uri": item.uri,
                },
                "response": {
                    "status": {"code": item.status, "message": item.reason},
                    "headers": {
                        name: list(values) for name, values in item.response_headers.items()
                    },
                    "body": {"string": body if body is not None else ""},
                },
            }
        )
    # What vcrpy's JSON serializer writes (vcr.serializers.jsonserializer).
    data: dict[str, Any] = {"interactions": interactions, "version": 1}
    metadata = cassette.header.get("metadata")
    if isinstance(metadata, dict) and metadata:
        data["metadata"] = metadata
    text = json.dumps(data, indent=4) + "\n"
    if redactor.config.enabled and redactor.config.fail_closed:
        check_vcrpy_text(redactor.rules, text, target or opened.path.with_suffix(".json"))
    return text, redacted


def _target_exists(out: Recorded, source: Path, target: Path) -> None:
    problem = f"{target} exists; use --force to replace it"
    fix = "add --force to replace it, or --out DIR to write elsewhere"
    cut_short = _cut_short(target)
    if cut_short:
        problem = (
            f"{target} exists but {cut_short}, as a convert cut short by a crash or a power "
            "cut leaves it; use --force to convert again"
        )
        fix = "add --force to convert it again"
    found_record = record(
        output.TARGET_EXISTS, problem, file=str(source), received=str(target), how_to_fix=fix
    )
    out.finding(found_record, f"{source}: {problem}", stderr=True)


def _cut_short(target: Path) -> str | None:
    """How an existing ``target`` shows that its writing was cut short (empty; a JSONL
    file that does not end with a line end), or None. Only its size and last byte are
    read: a file cut at a line end is found when it is loaded (no end line)."""
    try:
        with target.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return "is empty"
            handle.seek(size - 1)
            if target.suffix == serializer.SUFFIX and handle.read(1) != b"\n":
                return "does not end with a line end (it is cut off)"
    except OSError:
        return None  # not a file one can read: said as it is, "exists"
    return None


@dataclass(frozen=True)
class Converted:
    """What converting one file said (``Recorded`` calls), for the command's output, and
    what it wrote without flushing it to disk (``tempfiles.Flusher``, the caller's): the
    file, and the folders that hold it or a folder created for it."""

    path: Path
    calls: list[Call]
    written: Path | None = None
    folders: tuple[Path, ...] = ()


def convert_found(
    found: Found, *, to_json: bool, folders: list[Path], out_dir: str | None, force: bool
) -> Converted | None:
    """``llmcassette convert`` of one file ``cli.paths`` found: opened, converted and written
    (never over an existing file without ``force``); None for a file of a folder that is
    no vcrpy cassette (JSONL one with ``to_json``). It reports as plain data, so that it
    can run in another process (``cli.paths.each_file``). The file it writes is not yet
    flushed to disk: the caller flushes ``written`` and ``folders`` before it exits."""
    from llmcassette._vcr.tempfiles import atomic_write, make_folders

    opened = open_found(found, "convert", (JSONL,) if to_json else (VCRPY,))
    if opened is None:
        return None
    out = Recorded()
    if isinstance(opened, CassetteFormatError):
        out.failed(opened)
        return Converted(found.path, out.calls)
    source = opened.path
    stem = source.name[:-3] if source.name.endswith(".gz") else source.name
    stem = stem.rsplit(".", 1)[0]
    target = target_folder(source, folders, out_dir) / (stem + (".json" if to_json else ".jsonl"))
    if target.exists() and not force:
        _target_exists(out, source, target)
        return Converted(source, out.calls)
    redacted: dict[str, int] = {}
    created: list[Path] = []
    try:
        if to_json:
            text, redacted = to_vcrpy_json(opened, target)
        else:
            text, redacted = jsonl_of(opened)
        created = make_folders(target.parent)
        # Not over a file written since the check above: another process of this command
        # may have converted x.json to the x.jsonl that x.yaml converts to. Not flushed
        # here: the command flushes every file it wrote at once, at the end.
        atomic_write(target, text.encode("utf-8"), replace=force, durable=False)
    except FileExistsError:
        _target_exists(out, source, target)
    except CassetteFormatError as error:
        out.failed(error)
    except OSError as error:
        out.error(
            record(output.CANNOT_WRITE, f"cannot convert: {error}", file=str(source)),
            f"{source}: cannot convert: {error}",
        )
    except LlmCassetteError as error:
        out.failed(error, f"{source}: cannot convert: {error}")
    else:
        # What redaction replaced, per rule: everything else converts back byte for byte.
        kinds = ", ".join(f"{kind} x{count}" for kind, count in redacted.items())
        out.result(
            {"file": str(source), "target": str(target), "redacted": redacted},
            f"{source} -> {target}" + (f" (redacted {kinds})" if kinds else ""),
        )
        naming = (target.parent, *(folder.parent for folder in created))
        return Converted(source, out.calls, target, naming)
    # A folder created for a file not written may hold one another process writes.
    return Converted(source, out.calls, None, tuple(folder.parent for folder in created))
