"""Find values that a redaction rule still matches, without ever exposing them.

Used by the fail-closed check before a cassette is written and by ``llmcassette scan``.
A finding names the file, the line, the JSON path and the rule, never the value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmcassette.cassette import vcrpy_files
from llmcassette.errors import SecretLeakError
from llmcassette.redact import rules
from llmcassette.redact.redactor import _JSON_OPENINGS, Redactor


@dataclass(frozen=True)
class Finding:
    """A value that a rule still matches: where, and which rule (never the value)."""

    path: str
    line: int | None
    json_path: str
    rule: str

    def render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.json_path}: {self.rule}"


def _new_kinds(old: str, new: str) -> list[str]:
    before = set(rules.PLACEHOLDER_RE.findall(old))
    kinds = []
    for placeholder in rules.PLACEHOLDER_RE.findall(new):
        if placeholder not in before:
            kinds.append(placeholder[len("<REDACTED:") : -1].split(":", 1)[0])
    return kinds or ["dropped"]


# Where a value sits: the keys and indexes from the record's root. Spelled out as a JSON
# path only for a finding; most values have none. ``_PARSED`` marks a string read as JSON.
Where = tuple[Any, ...]
_PARSED = object()


def _spelled(prefix: str, where: Where) -> str:
    path = prefix
    for part in where:
        if part is _PARSED:
            path += "<json>"
        elif isinstance(part, int):
            path = f"{path}[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def find_in_value(redactor: Redactor, value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(json_path, rule)`` for every value in a cassette record that redaction would change."""
    for where, rule in _findings(redactor, value):
        yield _spelled(path, where), rule


def finds_anything(redactor: Redactor, value: Any) -> bool:
    """Whether ``find_in_value`` would find anything (without spelling out where)."""
    return bool(_findings(redactor, value))


def _findings(redactor: Redactor, value: Any) -> list[tuple[Where, str]]:
    found: list[tuple[Where, str]] = []
    _walk(redactor, value, (), found)
    return found


def _walk(redactor: Redactor, value: Any, where: Where, found: list[tuple[Where, str]]) -> None:
    # A plain recursion filling one list: the walk runs over every line the scan reads, and
    # over each request and response line as it is written. A string the redactor already
    # left unchanged is passed over without a call (a string that may be JSON is still
    # read: the keys in it may be secret ones); a path is built only for a finding.
    clean = redactor._clean_texts
    if isinstance(value, dict):
        secret_key = redactor._secret_key
        for key, item in value.items():
            if isinstance(item, str):
                name = key if isinstance(key, str) else str(key)
                if secret_key(name, ()):
                    new = redactor.secret(item, name)
                elif key == "uri":
                    new = redactor.uri(item)
                elif item in clean and not item.startswith(_JSON_OPENINGS):
                    continue
                else:
                    _in_string(redactor, item, where, key, found)
                    continue
                if new != item:
                    found.append(((*where, key), _new_kinds(item, new)[0]))
            elif key == "headers" and isinstance(item, dict):
                _headers(redactor, item, (*where, key), found)
            elif isinstance(item, (dict, list, bytes, bytearray)):
                _walk(redactor, item, (*where, key), found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                if item not in clean or item.startswith(_JSON_OPENINGS):
                    _in_string(redactor, item, where, index, found)
            elif isinstance(item, (dict, list, bytes, bytearray)):
                _walk(redactor, item, (*where, index), found)
    elif isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            text = bytes(value).decode("latin-1")
        _in_string(redactor, text, where, _HERE, found)
    elif isinstance(value, str):
        _in_string(redactor, value, where, _HERE, found)


_HERE = object()  # the ``step`` of a string that is the value at ``where`` itself


def _in_string(
    redactor: Redactor,
    value: str,
    where: Where,
    step: Any,
    found: list[tuple[Where, str]],
) -> None:
    # ``step``: the key or index of ``value`` in the container at ``where``, or ``_HERE``.
    if value.startswith(_JSON_OPENINGS) and redactor.might_contain(value):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            at = where if step is _HERE else (*where, step)
            _walk(redactor, parsed, (*at, _PARSED), found)
            return
    new = redactor.text(value)
    if new != value:
        found.append((where if step is _HERE else (*where, step), _new_kinds(value, new)[0]))


def _headers(
    redactor: Redactor, headers: dict[str, Any], where: Where, found: list[tuple[Where, str]]
) -> None:
    clean = redactor._clean_headers  # (name, value) pairs ``header_value`` leaves as they are
    for name, value in headers.items():
        if type(value) is str and (name, value) in clean:
            continue
        action = redactor.header_action(name)
        if action in ("keep", "drop"):
            continue  # identifiers: not secret, ``redact`` drops them
        values = [value] if isinstance(value, str) else value
        for index, item in enumerate(values if isinstance(values, list) else []):
            if not isinstance(item, str):
                continue
            new = redactor.header_value(name, item, action)
            if new != item:
                at = (*where, name) if isinstance(value, str) else (*where, name, index)
                found.append((at, _new_kinds(item, new)[0]))


def find_in_jsonl(
    redactor: Redactor, text: str, path: str, checked: Collection[int] = ()
) -> list[Finding]:
    """Findings in the text of an llmcassette JSONL cassette.

    ``checked``: numbers of lines whose bytes the writer has had this redactor check
    already (``Redactor.proves_clean``, ``Redactor.finds_nothing``); they are not read again.
    """
    redactor = redactor.scratch()
    findings: list[Finding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if number in checked or not line or line.isspace():  # no copy of each line
            continue
        if '"headers"' not in line and not redactor.might_contain(line):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if redactor.text(line) != line:
                findings.append(Finding(path, number, "<line>", "unparsed-line"))
            continue
        for json_path, rule in find_in_value(redactor, record):
            findings.append(Finding(path, number, json_path, rule))
    return findings


def check_text(
    redactor: Redactor, text: str, path: str | os.PathLike[str], checked: Collection[int] = ()
) -> None:
    """Fail closed: raise ``SecretLeakError`` if a rule still matches ``text``.

    ``checked``: see ``find_in_jsonl``.
    """
    findings = find_in_jsonl(redactor, text, os.fspath(path), checked)
    if findings:
        first = findings[0]
        raise SecretLeakError(
            path,
            first.line,
            first.json_path,
            first.rule,
            [(f.line, f.json_path, f.rule) for f in findings],
        )


def _line_of(text: str, interaction: int) -> int | None:
    """Best-effort line of the n-th interaction in a YAML/JSON vcrpy cassette."""
    needle = "- request:" if "- request:" in text else '"request"'
    position = -1
    for _ in range(interaction + 1):
        position = text.find(needle, position + 1)
        if position < 0:
            return None
    return text.count("\n", 0, position) + 1


def find_in_file(redactor: Redactor, path: Path) -> list[Finding]:
    """Findings in one cassette file: llmcassette JSONL, or vcrpy YAML / JSON."""
    text = path.read_text(encoding="utf-8", errors="replace")
    name = os.fspath(path)
    if path.suffix == ".jsonl":
        return find_in_jsonl(redactor, text, name)
    data = load_vcrpy(path, text)
    redactor = redactor.scratch()
    findings: list[Finding] = []
    for index, entry in enumerate(data.get("interactions") or []):
        line = _line_of(text, index)
        response = _decoded_response(entry.get("response") or {})
        for json_path, rule in find_in_value(
            redactor, {"request": entry.get("request"), "response": response}
        ):
            findings.append(Finding(name, line, f"interactions[{index}].{json_path}", rule))
    return findings


def load_vcrpy(path: Path, text: str) -> dict[str, Any]:
    """A vcrpy cassette file as its dict (YAML, or JSON for ``.json``)."""
    loaded = vcrpy_files.parse(text, json_file=path.suffix == ".json")
    return loaded if isinstance(loaded, dict) else {}


def _decoded_response(response: dict[str, Any]) -> dict[str, Any]:
    body = response.get("body")
    raw = body.get("string") if isinstance(body, dict) else None
    headers = response.get("headers")
    if isinstance(raw, bytes) and isinstance(headers, dict) and isinstance(body, dict):
        from llmcassette.cassette.compression import decode_content

        listed = {k: v if isinstance(v, list) else [v] for k, v in headers.items()}
        try:
            decoded, _ = decode_content(raw, listed)
        except Exception:
            return response
        return {**response, "body": {**body, "string": decoded}}
    return response
