"""``scan``, ``redact`` and ``check --secrets`` over the files ``cli.paths`` opened: each
file is read once and parsed once, and was classified before anything looks inside it."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cli.paths import JSONL, SIDECAR, VCRPY, Opened
from llmcassette.errors import TOO_DEEP_JSON, UNSCANNABLE_BODY, SecretLeakError
from llmcassette.redact.redactor import Redactor, _content_type
from llmcassette.redact.scan import (
    Finding,
    check_text,
    check_vcrpy_text,
    find_in_jsonl,
    find_in_value,
    find_in_vcrpy,
)


def project_redactor() -> Redactor:
    """A redactor of the current rules with the project's settings, as ``scan`` uses."""
    from llmcassette.config import project_redaction

    return Redactor(project_redaction())


def current_rules(
    cassette: cassette_file.Cassette, redactor: Redactor | None = None, *, force: bool = False
) -> cassette_file.Cassette | None:
    """``cassette`` redacted again by the current rules when its header says other rules
    redacted it (an older rules version, other settings, or none named), as loading and
    saving it through the library would; None when that replaces nothing, or redaction is
    off. What a command writes or shows of an old cassette goes through this first: rules
    version 1 left RS256 JWTs and camelCase keys (``accessToken``) in clear. ``force``:
    whatever the header says (a cassette in which the scan found a secret)."""
    text = redacted_again(cassette, redactor or project_redactor(), force=force)
    return None if text is None else cassette_file.read(text.encode("utf-8"), "<redacted>")


def redacted_again(
    cassette: cassette_file.Cassette, redactor: Redactor, *, force: bool = False
) -> str | None:
    """The text of ``current_rules``' cassette; None when it replaces nothing."""
    if not redactor.config.enabled:
        return None
    if not force and redactor.already_applied(cassette.header):
        return None
    header = {**cassette.header, "redaction": redactor.header_field()}
    again = cassette_file.Cassette(header, cassette.interactions)
    text = cassette_file.write(again, redaction=redactor)
    if not force and text == cassette_file.write(again):
        return None  # nothing these rules redact: the lines stay as they are
    return text


def refused(error: SecretLeakError, command: str, path: str | os.PathLike[str]) -> str:
    """What a command prints when the fail-closed scan refused what it was about to write
    (``error.hint`` becomes the same advice, for ``--json``); never the value."""
    if error.rule not in (UNSCANNABLE_BODY, TOO_DEEP_JSON):  # redact cannot help those
        error.hint = f"run `llmcassette redact {path}`, then {command} it again"
    problem = str(error).split("\n  how to fix:", 1)[0]
    return f"{problem}\n  how to fix: {error.hint}\n  not changed"


def safe_text(
    text: str,
    path: str | os.PathLike[str],
    redactor: Redactor | None = None,
    cassette: cassette_file.Cassette | None = None,
    rewritten: Callable[[str], str] | None = None,
) -> str:
    """The JSONL text a command is about to write at ``path``, as a recording writes it:
    redacted again by the current rules when the header says other rules redacted it
    (``cassette``: the text already read; ``rewritten`` adjusts the text so written again),
    then read by the fail-closed scan, which raises ``SecretLeakError`` when a rule still
    matches; the caller then writes nothing."""
    redactor = redactor or project_redactor()
    if not redactor.config.enabled:
        return text
    if cassette is None:
        cassette = cassette_file.read(text.encode("utf-8"), path)
    again = redacted_again(cassette, redactor)
    if again is not None:
        text = again if rewritten is None else rewritten(again)
    if redactor.config.fail_closed:
        check_text(redactor.rules, text, path)
    return text


def scan_opened(redactor: Redactor, opened: Opened) -> list[Finding]:
    """Findings in a file ``cli.paths`` opened (read once, parsed once)."""
    name = os.fspath(opened.path)
    if opened.kind == JSONL:
        return find_in_jsonl(redactor.rules, opened.text, name)
    if opened.kind == SIDECAR:
        return _in_sidecar(redactor, opened.text, name)
    if opened.kind != VCRPY or opened.vcrpy is None:
        return []
    return find_in_vcrpy(redactor.rules, opened.vcrpy, opened.text, name)


def _in_sidecar(redactor: Redactor, text: str, name: str) -> list[Finding]:
    """Findings in an overrides sidecar: its scripted responses (status, headers, body,
    events) are read as a recorded response is, headers by name. A sidecar that is not
    JSON is read as text (``check`` reports why it does not validate)."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    return [
        Finding(name, None, json_path, rule)
        for json_path, rule in find_in_value(redactor.rules, data, response=True)
    ]


def redact_opened(redactor: Redactor, opened: Opened) -> tuple[str | None, dict[str, int]]:
    """``redact_file`` for a file ``cli.paths`` opened: the new text (None: unchanged) and
    how many values of each kind were replaced."""
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
        return None, {}
    if text == opened.text:
        return None, {}
    return text, replaced(opened.text, text)


def check_left(redactor: Redactor, opened: Opened, text: str | None) -> None:
    """The fail-closed scan of what ``redact`` leaves in a file: ``text`` about to be
    written, or the file as it is (None: unchanged). ``SecretLeakError`` when a rule still
    matches (a compressed request body, a value of vcrpy's ``metadata``, which no rule of
    ``redact`` rewrites): nothing is written, and the file is not said to be clean."""
    left = opened.text if text is None else text
    if opened.kind == JSONL:
        check_text(redactor.rules, left, opened.path)
    elif opened.kind == VCRPY:
        check_vcrpy_text(redactor.rules, left, opened.path)


#: What ``redact`` advises for a value it has no rule to replace.
LEFT_HINT = (
    "no rule of redact replaces this value (a compressed request body, a value of the "
    "cassette's metadata): edit it out of the file, or record the cassette again"
)


_PLACEHOLDER_KIND = re.compile(r"<REDACTED:([A-Za-z0-9_.\-]+?)(?::[0-9]+)?>")


def replaced(before: str, after: str) -> dict[str, int]:
    """How many values of each kind redaction replaced between two texts of a file: the
    placeholders ``after`` holds that ``before`` did not. (The redactor's own tallies count
    each secret once however often it occurs, and each time a part is redacted, which writing
    a cassette does more than once.)"""
    added = Counter(_PLACEHOLDER_KIND.findall(after))
    added.subtract(Counter(_PLACEHOLDER_KIND.findall(before)))
    return {kind: count for kind, count in sorted(added.items()) if count > 0}


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
            uri = request.get("uri") if isinstance(request, dict) else None
            redacted = redactor.vcr_response(response, uri if isinstance(uri, str) else None)
            _replace_contents(response, redacted)
    return vcrpy_text(loaded, json_file=json_file)


def _replace_contents(mapping: dict[str, Any], new: dict[str, Any]) -> None:
    if new is not mapping:
        mapping.clear()
        mapping.update(new)
