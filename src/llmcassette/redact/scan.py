"""Find values that a redaction rule still matches, without ever exposing them.

Used by the fail-closed check before a cassette is written and by ``llmcassette scan``.
A finding names the file, the line, the JSON path and the rule, never the value.

The scan is a second look, independent of redaction: it reads the final text of every
line, parses it, and asks the rules (``llmcassette.redact.rules``) about each value. It
shares no cache, state or verdict with the redactor or the writer, so a redactor that
missed something (or redacted nothing at all) cannot make it miss it too.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from llmcassette.cassette import events as stream_events
from llmcassette.cassette import vcrpy_files
from llmcassette.cassette.compression import content_codings, decode_content
from llmcassette.cassette.eventstream import encode_records, is_eventstream
from llmcassette.cassette.jsonl import MAX_DEPTH
from llmcassette.cassette.jsontext import TooDeep, nests_too_deep
from llmcassette.errors import FILE_NAME, TOO_DEEP_JSON, UNSCANNABLE_BODY, SecretLeakError
from llmcassette.redact.rules import (
    JSON_OPENINGS,
    PLACEHOLDER_RE,
    Rules,
    cookie_values,
    is_model_turn,
    is_signature_scheme,
    scheme_kind,
    spaced_runs,
    split_scheme,
)


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


# Where a value sits: the keys and indexes from the record's root. Spelled out as a JSON
# path only for a finding; most values have none. ``_PARSED`` marks a string read as JSON.
Where = tuple[Any, ...]
Found = list[tuple[Where, str]]
_PARSED = object()


@dataclass(frozen=True)
class _SecretName:
    """A key or header name that a rule matches, in a ``Where``: spelled by its rule, so a
    finding's path never shows the secret it names."""

    rule: str


def _named(rules: Rules, name: Any, where: Where, found: Found) -> Where:
    """Where the value of key or header ``name`` (in the object at ``where``) sits; a
    name that a rule matches is itself a finding, and stands in the path by its rule."""
    if type(name) is str and rules.might_match(name):
        kinds = rules.kinds_in(name)
        if kinds:
            at = (*where, _SecretName(kinds[0]))
            found.append((at, kinds[0]))
            return at
    return (*where, name)


def _spelled(prefix: str, where: Where) -> str:
    path = prefix
    for part in where:
        if part is _PARSED:
            path += "<json>"
        elif isinstance(part, _SecretName):
            path = f"{path}.<a key: REDACTED:{part.rule}>"
        elif isinstance(part, int):
            path = f"{path}[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def find_in_value(
    rules: Rules, value: Any, path: str = "", *, response: bool = False
) -> Iterator[tuple[str, str]]:
    """``(json_path, rule)`` for every value in a cassette record that a rule matches;
    ``response``: the record is a response or its events, where a secret key's value is
    one only when it looks like a token (``Rules.is_secret_entry``)."""
    found: Found = []
    _walk(rules, value, (), found, response)
    for where, rule in found:
        yield _spelled(path, where), rule


# How a string under a "uri" key that is no URL starts: JSON text, or markup.
_NO_URL = (*JSON_OPENINGS, "<")
_CONTAINERS = (dict, list, bytes, bytearray)  # what ``_walk`` looks into; numbers have nothing


def _walk(
    rules: Rules,
    value: Any,
    where: Where,
    found: Found,
    response: bool = False,
    list_key: str | None = None,
) -> None:
    """Add the findings in ``value`` (at ``where``) to ``found``; ``list_key``: the JSON key
    a list ``value`` is the value of, whose strings are values of that key."""
    if isinstance(value, dict):
        response = response or is_model_turn(value)
        pairs = value.pairs if isinstance(value, _KeyGivenTwice) else value.items()
        keys_may_match = rules.might_match_a_key(value)
        for key, item in pairs:
            at = _named(rules, key, where, found) if keys_may_match else (*where, key)
            if isinstance(item, str):
                name = key if isinstance(key, str) else str(key)
                if rules.is_secret_entry(name, item, response=response):
                    _add(found, at, rules.secret_kind(item, name))
                elif key == "uri":
                    before = len(found)
                    _in_url(rules, item, at, found)
                    if len(found) == before and item.startswith(_NO_URL):
                        # No URL: JSON text or markup, read as any string's is.
                        _in_string(rules, item, at, found, response)
                else:
                    _in_string(rules, item, at, found, response)
            elif key == "headers" and isinstance(item, dict):
                _in_headers(rules, item, at, found, response=response)
            elif isinstance(item, list):  # its strings are values of the key
                _walk(rules, item, at, found, response, key if isinstance(key, str) else None)
            elif isinstance(item, _CONTAINERS):
                _walk(rules, item, at, found, response)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                if list_key is not None and rules.is_secret_entry(
                    list_key, item, response=response
                ):
                    _add(found, (*where, index), rules.secret_kind(item, list_key))
                else:
                    _in_string(rules, item, (*where, index), found, response)
            elif isinstance(item, list):
                _walk(rules, item, (*where, index), found, response, list_key)
            elif isinstance(item, _CONTAINERS):
                _walk(rules, item, (*where, index), found, response)
    elif isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            text = bytes(value).decode("latin-1")
        _in_string(rules, text, where, found, response)
    elif isinstance(value, str):
        _in_string(rules, value, where, found, response)


class _KeyGivenTwice(dict[str, Any]):
    """A JSON object that gives a key more than once, and ``pairs``, all it gives. A dict
    keeps a key's last value only, but every value is written to the file (and redaction,
    which reads JSON text as it is written, replaces each): ``{"api_key": "<key>",
    "api_key": "<REDACTED:api_key>"}`` would hide the first from a scan of the dict."""

    pairs: list[tuple[str, Any]]


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    parsed = dict(pairs)
    if len(parsed) == len(pairs):
        return parsed
    given_twice = _KeyGivenTwice(parsed)
    given_twice.pairs = pairs
    return given_twice


def _parsed(text: str) -> Any:
    """JSON ``text`` parsed, every value of a key given twice kept (``_KeyGivenTwice``);
    ``TooDeep`` past ``MAX_DEPTH`` levels, as deep as a cassette line may nest: the walk
    recurses, and each level of a body's JSON text held in a string counts again."""
    try:
        value = json.loads(text, object_pairs_hook=_object)
    except RecursionError:
        raise TooDeep from None
    if nests_too_deep(text, value, MAX_DEPTH):
        raise TooDeep
    return value


def _add(found: Found, where: Where, kind: str | None) -> None:
    if kind is not None:
        found.append((where, kind))


def _in_string(
    rules: Rules, value: str, where: Where, found: Found, response: bool = False
) -> None:
    for _, _, narrow in spaced_runs(value):  # UTF-16 or UTF-32 text, read byte by byte
        _in_string(rules, narrow, where, found, response)
    if not rules.might_match(value) and '"headers' not in value:
        return
    if value.startswith(JSON_OPENINGS):  # JSON text held in a string: its keys count too
        try:
            parsed = _parsed(value)
        except TooDeep:  # unread, so refused as a match is
            _add(found, where, TOO_DEEP_JSON)
            return
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            _walk(rules, parsed, (*where, _PARSED), found, response)
            return
    kinds = rules.kinds_in(value)
    if not kinds:  # XML: the text of an element named as a secret key; a form field
        secrets = rules.markup_secrets(value, response=response)
        secrets += rules.form_field_secrets(value)
        kinds = [k for _, _, name, text in secrets if (k := rules.secret_kind(text, name))]
    if not kinds and isinstance(value, _StreamText):
        # A secret key's value in an event's JSON (``data: {"access_token": ...}``), which
        # the text, no JSON itself, does not show: its events, as a JSONL cassette has them.
        for index, record in enumerate(stream_events.encode_events(value.kind, value)):
            _walk(rules, record, (*where, index), found, True)
    for kind in kinds[:1]:
        found.append((where, kind))


class _StreamText(str):
    """The text of a vcrpy response's SSE or NDJSON body (``decoded_response``), and its
    stream ``kind``: where its text shows nothing, it is read as its events."""

    kind: str


def _in_url(rules: Rules, uri: str, where: Where, found: Found) -> None:
    """A URL: userinfo and shapes anywhere in it, and the values of secret parameters."""
    for kind in _url_kinds(rules, uri)[:1]:
        found.append((where, kind))


def _url_kinds(rules: Rules, uri: str) -> list[str]:
    base, _, fragment = uri.partition("#")
    path, question, query = base.partition("?")
    kinds = rules.kinds_in(path) + rules.kinds_in(fragment)
    return kinds + (_query_kinds(rules, query, by_shape=True) if question else [])


def _query_kinds(rules: Rules, query: str, *, by_shape: bool) -> list[str]:
    """The rules that the values of secret parameters in ``query`` (a query string or a
    form body) break; ``by_shape``: the other pieces searched by shape too."""
    kinds: list[str] = []
    for piece in query.split("&"):
        name, sep, value = piece.partition("=")
        if sep and value and rules.is_secret_param(unquote_plus(name), unquote_plus(value)):
            kind = rules.secret_kind(unquote_plus(value), unquote_plus(name))
            kinds += [kind] if kind is not None else []
        elif by_shape:
            kinds += rules.kinds_in(piece)
    return kinds


_FORM_TYPE = "application/x-www-form-urlencoded"


def _in_form(rules: Rules, headers: Any, body: Any, where: Where, found: Found) -> None:
    """A URL-encoded form body (told by its ``content-type``, as redaction tells it): the
    values of its secret parameters, which no shape may show (``api_key=...&q=hi``)."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("latin-1")
    if not isinstance(body, str) or "=" not in body or not rules.params_on:
        return
    media = (_media_type(headers) or "").split(";", 1)[0].strip().lower()
    if media == _FORM_TYPE:
        for kind in _query_kinds(rules, body, by_shape=False)[:1]:
            found.append((where, kind))


def _by_header_name(rules: Rules, value: Any, where: Where, found: Found, response: bool) -> None:
    """``_walk`` for a record whose line ``might_match`` finds nothing in: no shape, literal,
    secret key or parameter occurs in any of its values (neither does one in the JSON text
    a value holds, escaped once more in the line, which the line's text does not tell: such
    a value is read as ``_walk`` reads it). What is left are the header rules that go by a
    header's name, in every headers object."""
    if isinstance(value, dict):
        for key, item in value.items():
            at = (*where, key)
            if isinstance(item, str):
                if item.startswith(JSON_OPENINGS):
                    _in_string(rules, item, at, found, response)
            elif key == "headers" and isinstance(item, dict):
                _in_headers(rules, item, at, found, by_name=True, response=response)
            elif isinstance(item, (dict, list)):
                _by_header_name(rules, item, at, found, response)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                if item.startswith(JSON_OPENINGS):
                    _in_string(rules, item, (*where, index), found, response)
            elif isinstance(item, (dict, list)):
                _by_header_name(rules, item, (*where, index), found, response)


# The header rules that go by a header's name, whatever its value looks like.
_BY_NAME = frozenset({"credential", "cookie", "identifying"})


def _in_headers(
    rules: Rules,
    headers: dict[Any, Any],
    where: Where,
    found: Found,
    *,
    by_name: bool = False,
    response: bool = False,
) -> None:
    keys_may_match = not by_name and rules.might_match_a_key(headers)
    for name, value in headers.items():
        action = rules.header_action(str(name))
        if action == "keep":
            continue  # stored as they are on purpose (``keep_headers``)
        if action == "drop":
            # Redaction leaves these identifiers out; one that is written anyway (a redactor
            # that failed to, a "headers" object in a body) is read as any other header.
            action = "scan"
        # By name, a header searched by shape only is passed over: nothing of the kind is
        # in the line (but a value that is no string is read, below).
        by_shape_only = by_name and action not in _BY_NAME
        if by_shape_only and isinstance(value, str):
            continue
        named = _named(rules, name, where, found) if keys_may_match else (*where, name)
        values = [value] if isinstance(value, (str, bytes, bytearray, dict)) else value
        for index, item in enumerate(values if isinstance(values, list) else []):
            at = named if values is not value else (*named, index)
            if isinstance(item, (bytes, bytearray)):  # a vcrpy value written as !!binary
                item = bytes(item).decode("latin-1")
            if isinstance(item, str):
                if not by_shape_only:
                    _add(found, at, _header_kind(rules, str(name), item, action))
            elif isinstance(item, _CONTAINERS):
                # No header value (an event-stream frame's typed header, ``{"bytes": base64}``;
                # a "headers" object in a body, read by redaction as JSON): read as JSON.
                if by_name:
                    _by_header_name(rules, item, at, found, response)
                else:
                    _walk(rules, item, at, found, response)


def _header_kind(rules: Rules, name: str, value: str, action: str) -> str | None:
    """The rule a header value breaks, if any (see ``Redactor.header_value``)."""
    if action == "credential" and rules.is_no_credential(name, value):
        action = "scan"  # a message or a number in a credential-named header, searched by shape
    if action == "cookie":
        for _, _, cookie in cookie_values(name.lower(), value):
            kind = rules.secret_kind(cookie, "cookie")
            if kind is not None:
                return kind
        return None
    if action == "identifying":
        return rules.secret_kind(value, name)
    if action == "credential":
        parts = split_scheme(value)
        if parts is None:
            return rules.secret_kind(value, name)
        scheme, _, rest = parts
        if not is_signature_scheme(scheme):
            return rules.secret_kind(rest, scheme_kind(scheme, name))
        kinds = rules.kinds_in(rest)
        if kinds:
            return kinds[0]
        return None if PLACEHOLDER_RE.search(rest) else rules.secret_kind(rest, name)
    kinds = _url_kinds(rules, value) if "?" in value else rules.kinds_in(value)
    return kinds[0] if kinds else None


def _decoded(rules: Rules, headers: Any, raw: bytes) -> bytes | None:
    """``raw``, a body sent with ``headers``, with its content-encodings undone; None when
    they cannot be undone (nothing can look inside it) and such bodies are not allowed."""
    if not isinstance(headers, dict) or not raw:
        return raw
    listed = {str(k): v if isinstance(v, list) else [str(v)] for k, v in headers.items()}
    decoded, left = decode_content(raw, listed)
    if content_codings(left):  # what decode_content could not undo
        return raw if rules.config.allow_unscanned_bodies else None
    return decoded


def _in_body_bytes(rules: Rules, record: dict[str, Any]) -> Found:
    """Findings in the bytes a JSONL record's body stands for, where its text does not show
    them: a body stored as ``base64`` (bytes that are not UTF-8, such as a multipart upload
    with a file, read as Latin-1), and one stored with a content-encoding (llmcassette
    decodes the responses it can; a request body is stored as sent), decoded and read, or
    refused when it cannot be decoded."""
    headers, body = record.get("headers"), record.get("body")
    if not isinstance(body, dict):
        return []
    encoded = any(str(name).lower() == "content-encoding" for name in headers or ())
    if not encoded and "base64" not in body:
        return []
    raw = _base64_bytes(body["base64"]) if "base64" in body else None
    if raw is None:
        text = body.get("text")
        raw = text.encode("utf-8") if isinstance(text, str) else b""
    decoded = _decoded(rules, headers, raw) if encoded else raw
    found: Found = []
    response = record.get("type") == "response"
    if decoded is None:
        found.append((("body",), UNSCANNABLE_BODY))
    elif decoded is not raw or not encoded:
        _walk(rules, decoded, ("body",), found, response)
    return found


def find_in_jsonl(rules: Rules, text: str, path: str) -> list[Finding]:
    """Findings in the text of an llmcassette JSONL cassette: every line is read."""
    findings: list[Finding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line or line.isspace():
            continue
        try:
            findings += _line_findings(rules, line, number, path)
        except RecursionError:  # JSON text in strings in JSON text...: refused, unread
            findings.append(Finding(path, number, "<line>", TOO_DEEP_JSON))
    return findings


def _line_findings(rules: Rules, line: str, number: int, path: str) -> list[Finding]:
    """Findings in one line of a JSONL cassette."""
    findings: list[Finding] = []
    # A line in which no rule can match needs no parse (a header object is checked by
    # header name, whatever its values look like; a base64 body is read decoded).
    # A multipart body's fields are told by line ends, which the line holds escaped
    # (``\r\n``): ``might_match`` finds them in the body's own text, not in the line's.
    might = rules.might_match(line) or "orm-data" in line or "\\u0000" in line
    if not might and '"headers' not in line and '"base64"' not in line:
        return findings
    try:
        record = _parsed(line)
    except TooDeep:  # what cannot be read may hold anything: refused, as a match is
        return [Finding(path, number, "<line>", TOO_DEEP_JSON)]
    except ValueError:
        if rules.kinds_in(line):
            findings.append(Finding(path, number, "<line>", "unparsed-line"))
        return findings
    response = isinstance(record, dict) and record.get("type") in ("response", "event")
    if might:
        for json_path, rule in find_in_value(rules, record, response=response):
            findings.append(Finding(path, number, json_path, rule))
    else:
        found: Found = []
        _by_header_name(rules, record, (), found, response)
        for where, rule in found:
            findings.append(Finding(path, number, _spelled("", where), rule))
    if isinstance(record, dict) and "body" in record:
        body = record["body"]
        if isinstance(body, dict) and "text" in body:
            form: Found = []
            _in_form(rules, record.get("headers"), body["text"], ("body", "text"), form)
            for where, rule in form:
                findings.append(Finding(path, number, _spelled("", where), rule))
        for where, rule in _in_body_bytes(rules, record):
            findings.append(Finding(path, number, _spelled("", where), rule))
    elif isinstance(record, dict):
        for field in _FRAME_BYTES:
            if isinstance(record.get(field), str):
                for where, rule in _in_frame_bytes(rules, record[field], field):
                    findings.append(Finding(path, number, _spelled("", where), rule))
    return findings


# The fields of an event line that hold bytes as base64: an AWS event-stream frame cut
# short, kept whole, and a frame's payload that is not UTF-8.
_FRAME_BYTES = ("base64", "payload_base64")


def _in_frame_bytes(rules: Rules, stored: str, field: str) -> Found:
    """Findings in the bytes an event line holds as base64 (``_FRAME_BYTES``), decoded and
    read as redaction reads a body that is not UTF-8."""
    raw = _base64_bytes(stored)
    found: Found = []
    if raw is not None:  # else not base64: the reader refuses the line, its text was searched
        _walk(rules, raw, (field,), found, True)
    return found


def _base64_bytes(stored: Any) -> bytes | None:
    """The bytes a stored ``base64`` field holds; None when it holds no base64."""
    try:
        return base64.b64decode(stored, validate=True)
    except (binascii.Error, TypeError, ValueError):
        return None


def check_text(rules: Rules, text: str, path: str | os.PathLike[str]) -> None:
    """Fail closed: raise ``SecretLeakError`` if a rule still matches ``text``, the whole
    text of a cassette about to be written."""
    _refuse(find_in_jsonl(rules, text, os.fspath(path)), path)


def check_vcrpy_text(rules: Rules, text: str, path: str | os.PathLike[str]) -> None:
    """Fail closed for a vcrpy cassette (YAML, or JSON for ``.json``) about to be written:
    the text is parsed back and every value of every interaction is read. Text that does
    not read back as a vcrpy cassette (a serializer of the user's own) is read as text."""
    try:
        data = load_vcrpy(Path(path), text)
    except Exception:  # json's or PyYAML's parse error: read it as text
        data = None
    if data is None or vcrpy_files.layout(data) is None:
        found: Found = []
        _in_string(rules, text, (), found)
        _refuse([Finding(os.fspath(path), None, "(text)", rule) for _, rule in found], path)
        return
    _refuse(find_in_vcrpy(rules, data, text, os.fspath(path)), path)


def check_path(rules: Rules, path: str | os.PathLike[str]) -> None:
    """Fail closed for a file about to be written whose path holds a secret shape (a
    pytest-recording cassette of a test parametrized with a key is named after it: the
    name would put the key on disk, and in every listing of the folder). The error shows
    the path with the secret replaced."""
    name = os.fspath(path)
    spans = rules.shapes(name)
    kinds = rules.kinds_in(name) if not spans else [kind for _, _, kind in spans]
    if not kinds:
        return
    shown = name
    for start, end, kind in reversed(spans):
        shown = f"{shown[:start]}<REDACTED:{kind}>{shown[end:]}"
    if not spans:  # URL-encoded or escaped: no span of the name to show it by
        shown = os.path.join(os.path.dirname(name), f"<REDACTED:{kinds[0]}>")
    raise SecretLeakError(shown, None, FILE_NAME, kinds[0])


def check_vcrpy_data(rules: Rules, data: Any, path: str | os.PathLike[str]) -> None:
    """Fail closed for what a serializer of the user's own was handed to write (vcrpy's
    ``{"interactions": [...], "version": 1}``), read as a vcrpy cassette: the text it
    makes of it may not show it (compressed, encoded, or bodies left out of sight)."""
    if not isinstance(data, dict) or vcrpy_files.layout(data) is None:
        return
    _refuse(find_in_vcrpy(rules, data, "", os.fspath(path)), path)


def _refuse(findings: list[Finding], path: str | os.PathLike[str]) -> None:
    if findings:
        first = findings[0]
        raise SecretLeakError(
            path,
            first.line,
            first.json_path,
            first.rule,
            [(f.line, f.json_path, f.rule) for f in findings],
        )


def _interaction_lines(text: str) -> list[int]:
    """Best-effort line of each interaction in a YAML/JSON vcrpy cassette, in order."""
    needle = "- request:" if "- request:" in text else '"request"'
    found: list[int] = []
    line, counted = 1, 0
    position = text.find(needle)
    while position >= 0:
        line += text.count("\n", counted, position)
        counted = position
        found.append(line)
        position = text.find(needle, position + 1)
    return found


# The shortest text looked for as the value itself: a shorter one may be on any line.
_SHORTEST_NEEDLE = 8


def _key_line(lines: list[str], begin: int, end: int, key: str) -> int | None:
    """The index of the first of ``lines[begin:end]`` that opens mapping key ``key`` (YAML
    ``key:``, ``- key:``, quoted or not, or JSON ``"key":``)."""
    openings = (f"{key}:", f'"{key}":', f"'{key}':")
    for index in range(begin, end):
        if lines[index].lstrip(" -").startswith(openings):
            return index
    return None


def _needles(rules: Rules, value: Any) -> list[str]:
    """What of ``value`` (a found value) to look for in the file's text: each
    secret-shaped piece of it, then the whole value; none too short to tell lines apart."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if not isinstance(value, str):
        return []
    pieces = [value[start:end] for start, end, _ in rules.shapes(value)]
    pieces += [value] if "\n" not in value else []
    return [piece for piece in pieces if len(piece) >= _SHORTEST_NEEDLE]


def _value_line(
    rules: Rules, lines: list[str], begin: int, stop: int, record: Any, where: Where
) -> int | None:
    """The 1-based line of the value at ``where`` in ``record`` (``{"request": ...}`` or
    ``{"response": ...}``), looked for in ``lines[begin:stop]``, the text of its interaction;
    None when it cannot be told.

    The keys of ``where`` are followed down the text (``response:``, then ``headers:``,
    then ``authorization:`` after it); the line is the first from the last key found that
    holds the value (a secret-shaped piece of it), else that key's line. The keys inside a
    body's JSON text are on no line of their own: only the value is looked for there."""
    at, key_found, in_text = begin, False, True
    value = record
    for part in where:
        if part is _PARSED:
            try:
                value = json.loads(value)
            except (TypeError, ValueError):
                value = None
            in_text = False
            continue
        if in_text and isinstance(part, str):
            index = _key_line(lines, at, stop, part)
            if index is not None:
                at, key_found = index, True
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            value = None  # not read (a body that cannot be decoded): its key's line
    for needle in _needles(rules, value):
        for index in range(at, stop):
            if needle in lines[index]:
                return index + 1
    return at + 1 if key_found else None


# The keys of a vcrpy cassette's data that hold its interactions, per layout.
_INTERACTION_KEYS = {
    "interactions": ("interactions",),
    vcrpy_files.PARALLEL_LISTS: ("requests", "responses"),
}


def find_in_vcrpy(rules: Rules, data: dict[str, Any], text: str, path: str) -> list[Finding]:
    """Findings in a parsed vcrpy cassette (``data``, parsed from ``text``), response
    bodies decoded first; a finding's line is that of its value (or key) in ``text`` when
    it can be told (``_value_line``), else that of its interaction. What the file holds
    besides its interactions (vcrpy's ``metadata``, which a test stores with
    ``cassette.get_metadata``) is read too."""
    findings: list[Finding] = []
    starts = _interaction_lines(text)
    layout = vcrpy_files.layout(data)
    # The langchain layout's two lists have no line per interaction: none is named.
    listed = layout != vcrpy_files.PARALLEL_LISTS
    lines: list[str] | None = None
    skipped = _INTERACTION_KEYS.get(layout or "", ())
    rest = {key: value for key, value in data.items() if key not in skipped}
    besides: Found = []
    try:
        _walk(rules, rest, (), besides)
    except RecursionError:  # unread, so refused as a match is
        besides = [((), TOO_DEEP_JSON)]
    for where, rule in besides:
        lines = text.split("\n") if lines is None else lines
        at = _value_line(rules, lines, 0, len(lines), rest, where) if text else None
        findings.append(Finding(path, at, _spelled("", where), rule))
    for index, entry in enumerate(vcrpy_files.interactions_of(data)):
        if not isinstance(entry, dict):
            continue
        line = starts[index] if listed and index < len(starts) else None
        found: list[tuple[Any, Where, str]] = []  # (record, where in it, rule)
        try:
            _interaction_findings(rules, entry, found)
        except RecursionError:  # unread, so refused as a match is
            found = [({}, (), TOO_DEEP_JSON)]
        for record, where, rule in found:
            at = line
            if line is not None:
                lines = text.split("\n") if lines is None else lines
                stop = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines)
                at = _value_line(rules, lines, line - 1, stop, record, where) or line
            findings.append(Finding(path, at, f"interactions[{index}].{_spelled('', where)}", rule))
    return findings


def _interaction_findings(
    rules: Rules, entry: dict[str, Any], found: list[tuple[Any, Where, str]]
) -> None:
    """Add the findings in one vcrpy interaction to ``found`` (record, where in it, rule)."""
    request = _decoded_request(entry.get("request"), rules)
    response = decoded_response(entry.get("response") or {}, rules)
    others = {k: v for k, v in entry.items() if k not in ("request", "response")}
    in_others: Found = []
    _walk(rules, others, (), in_others)
    found += [(others, where, rule) for where, rule in in_others]
    for part, decoded in (("request", request), ("response", response)):
        if decoded is None:
            found.append(({}, (part, "body"), UNSCANNABLE_BODY))  # at its body's key
    if request is not None and response is not None:
        for part, record, is_response in (
            ("request", request, False),
            ("response", response, True),
        ):
            in_part: Found = []
            _walk(rules, {part: record}, (), in_part, is_response)
            if isinstance(record, dict):
                _in_vcrpy_body(rules, part, record, in_part)
            found += [({part: record}, where, rule) for where, rule in in_part]


def load_vcrpy(path: Path, text: str) -> dict[str, Any]:
    """A vcrpy cassette file as its dict (YAML, or JSON for ``.json``)."""
    loaded = vcrpy_files.parse(text, json_file=path.name.removesuffix(".gz").endswith(".json"))
    return loaded if isinstance(loaded, dict) else {}


def _decoded_request(request: Any, rules: Rules) -> Any:
    """A vcrpy request with its body's content-encodings undone, for reading (a gzip body
    is written compressed); None when they cannot be undone and ``rules`` do not allow
    unscanned bodies."""
    if not isinstance(request, dict) or not isinstance(request.get("body"), bytes):
        return request
    decoded = _decoded(rules, request.get("headers"), request["body"])
    if decoded is None:
        return None
    return request if decoded is request["body"] else {**request, "body": decoded}


def decoded_response(response: dict[str, Any], rules: Rules) -> dict[str, Any] | None:
    """A vcrpy response with its body's content-encodings undone, for reading; None when
    they cannot be undone and ``rules`` do not allow unscanned bodies. An AWS event-stream
    body is read as its frames, as a JSONL cassette stores them: an InvokeModel chunk's
    ``{"bytes": base64}`` decoded, a frame that does not rebuild as its bytes."""
    body = response.get("body")
    raw = body.get("string") if isinstance(body, dict) else None
    media_type = _media_type(response.get("headers"))
    if isinstance(raw, bytes) and isinstance(body, dict):
        decoded = _decoded(rules, response.get("headers"), raw)
        if decoded is None:
            return None
        read: Any = decoded
        if is_eventstream(media_type):
            read = [_frame_read(frame) for frame in encode_records(decoded)]
        else:
            read = _stream_text(decoded, media_type) or decoded
        return {**response, "body": {**body, "string": read}}
    if isinstance(raw, str) and isinstance(body, dict):
        stream = _stream_text(raw, media_type)
        return {**response, "body": {**body, "string": stream}} if stream else response
    return response


def _stream_text(raw: bytes | str, media_type: str | None) -> _StreamText | None:
    """An SSE or NDJSON body as ``_StreamText``; None for any other, or bytes that are not
    UTF-8 (read as Latin-1 text, as redaction reads them)."""
    kind = stream_events.stream_kind(media_type, None, raw)
    if kind not in (stream_events.SSE, stream_events.NDJSON):
        return None
    try:
        text = _StreamText(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except UnicodeDecodeError:
        return None
    text.kind = kind
    return text


def _in_vcrpy_body(rules: Rules, part: str, record: dict[str, Any], found: Found) -> None:
    """Add the findings in the body of vcrpy ``record`` (its ``part``, ``"request"`` or
    ``"response"``) that its walk does not show: the secret parameters of a form body."""
    body = record.get("body")
    if part == "request":
        _in_form(rules, record.get("headers"), body, (part, "body"), found)
        return
    string = body.get("string") if isinstance(body, dict) else None
    _in_form(rules, record.get("headers"), string, (part, "body", "string"), found)


def _media_type(headers: Any) -> str | None:
    """The ``content-type`` of vcrpy headers (a value or a list of values, any case)."""
    for name, value in (headers or {}).items() if isinstance(headers, dict) else ():
        if str(name).lower() == "content-type":
            first = value[0] if isinstance(value, list) and value else value
            return first if isinstance(first, str) else None
    return None


def _frame_read(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame record as the scan reads it: its ``_FRAME_BYTES`` as their bytes."""
    read = dict(frame)
    for field in _FRAME_BYTES:
        raw = _base64_bytes(frame.get(field))
        if raw is not None:
            read[field] = raw
    return read
