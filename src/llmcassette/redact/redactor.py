"""The redactor: replaces secrets by typed, stable placeholders, everywhere in an interaction.

One :class:`Redactor` serves one cassette: the same secret always gets the same placeholder
(``<REDACTED:openai-api-key>``), and a second secret of the same kind a numbered one
(``<REDACTED:openai-api-key:2>``). Redaction is idempotent: placeholders are skipped by
every rule, so running it again (vcrpy does, on every stored and incoming request) changes
nothing. What is secret is the business of :class:`~llmcassette.redact.rules.Rules`; the
redactor replaces what they find and numbers the placeholders.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

from llmcassette.cassette import events as stream_events
from llmcassette.cassette import eventstream, jsontext
from llmcassette.cassette.compression import decode_content
from llmcassette.config import RedactionConfig
from llmcassette.redact import rules
from llmcassette.redact.known import KnownValues

_FORM_TYPE = "application/x-www-form-urlencoded"
# What JSON text held in a string may hold that only its parse shows (``_parsed_json_text``):
# a "headers" object, a "uri", JSON text in a string of its own (its quotes escaped).
_SEEN_PARSED = ('"headers"', '"uri"', '\\"')

Headers = Mapping[str, Any]
# Where a string sits in the records of a stream: its container and its key (or index).
Ref = tuple[Any, Any]


def _content_type(headers: Headers | None) -> str:
    for name, value in (headers or {}).items():
        if name.lower() == "content-type":
            if isinstance(value, (list, tuple)):
                value = value[0] if value else ""
            return str(value).split(";", 1)[0].strip().lower()
    return ""


class Redactor:
    """Redacts requests, responses and cassette records with one set of rules."""

    def __init__(
        self,
        config: RedactionConfig | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        #: The rules, compiled: what is secret. The fail-closed scan reads the same rules
        #: (``llmcassette.redact.scan``), never the redactor.
        self.rules = rules.compiled(config, environ)
        self.config = self.rules.config
        self._placeholders: dict[str, str] = {}
        # Every credential value replaced so far, as it may be written (also URL-encoded or
        # JSON-escaped); searched for in every other part (``known``).
        self._known = KnownValues()
        self.counts: dict[str, int] = {}
        #: Number of values replaced and headers dropped (for ``llmcassette redact``).
        self.changes = 0

    # ------------------------------------------------------------------ state

    def header_field(self) -> dict[str, Any]:
        """The ``redaction`` field of the cassette header."""
        field: dict[str, Any] = {"rules": self.config.name, "version": rules.RULES_VERSION}
        if self.config.is_custom():
            field["custom"] = True
            # Tells apart two custom rule sets, so a cassette redacted by other rules is
            # redacted again at load (see ``already_applied``). A hash: literals are secrets.
            digest = hashlib.sha256(repr(self.config).encode("utf-8")).hexdigest()
            field["fingerprint"] = digest[:16]
        return field

    def already_applied(self, header: Mapping[str, Any]) -> bool:
        """Whether a cassette with this header was redacted by exactly these rules."""
        return header.get("redaction") == self.header_field()

    def placeholder(self, kind: str, secret: str) -> str:
        """The placeholder of ``secret``; the first of a kind is unnumbered."""
        self.changes += 1
        found = self._placeholders.get(secret)
        if found is not None:
            return found
        number = self.counts.get(kind, 0) + 1
        self.counts[kind] = number
        found = f"<REDACTED:{kind}>" if number == 1 else f"<REDACTED:{kind}:{number}>"
        self._placeholders[secret] = found
        self._known.add(secret, found)
        return found

    # ------------------------------------------------------------------ strings

    def text(self, value: str) -> str:
        """``value`` with every secret-shaped substring replaced, also one written URL-encoded
        or JSON-escaped; all else stays as written, escapes included.

        A secret found in a decoded view replaces the written span it was decoded from, by
        the placeholder of its decoded value (``sk%2D...`` and ``sk-...`` get the same one).
        """
        result = value
        # Again until nothing is found, as the fail-closed scan would find it: a placeholder
        # can free a neighbour (``AIza...\u0073k-proj-...`` decoded is two keys glued, neither
        # a token; once the first is a placeholder, the second is one).
        while found := self._secrets_in(result):
            spans = [
                (start, end, self.placeholder(kind, secret))
                for start, end, kind, secret in _merged(found)
            ]
            redacted = _apply_spans(result, [result], spans)[0]
            if redacted == result:
                break
            result = redacted
        # A secret in base64 text (``{"data": "c2stcHJvai0..."}``): the run is decoded,
        # redacted, and encoded again, so it stays base64 and decodes to the placeholder.
        for start, end, _ in reversed(self.rules.base64_spans(result)):
            run = result[start:end]
            decoded = rules.base64_decoded(run)
            if decoded is not None:
                redacted = self.text(decoded)
                if redacted != decoded:
                    result = result[:start] + rules.base64_like(redacted, run) + result[end:]
        return self._spaced_out(result) if "\x00" in result else result

    def _spaced_out(self, text: str) -> str:
        """``text`` with the secret shapes and known values that its runs of UTF-16 or
        UTF-32 text spell (``rules.spaced_runs``) replaced where they are written, by their
        placeholder spaced alike. A secret only its key names (JSON in UTF-16) is left to
        the fail-closed scan, which refuses to write it."""
        pieces: list[str] = []
        position = 0
        for start, end, narrow in rules.spaced_runs(text):
            found = {
                narrow[first:last]: self.placeholder(kind, secret)
                for first, last, kind, secret in _merged(self._secrets_in(narrow))
            }
            found.update(
                (narrow[first:last], shown) for first, last, shown in self._known_spans(narrow)
            )
            run = text[start:end]
            for written, placeholder in found.items():
                spaced = "\x00*".join(map(re.escape, written))
                run = re.sub(
                    spaced, functools.partial(_spaced_like, placeholder, len(written)), run
                )
            pieces += [text[position:start], run]
            position = end
        return "".join(pieces) + text[position:] if pieces else text

    def _secrets_in(self, text: str) -> list[tuple[int, int, str, str]]:
        """Every secret shape in ``text`` as written and in its URL- and JSON-decoded views:
        ``(start, end, kind, secret)``, the span where it is written and its decoded value."""
        found = [
            (start, end, kind, text[start:end]) for start, end, kind in self.rules.shapes(text)
        ]
        for decoded, view_of in rules.decoded_forms(text):
            spans = self.rules.shapes(decoded)
            if not spans:
                continue
            # Where each decoded character is written is worked out only for a text that
            # holds a secret: it costs several times the decoding (one escape at a time).
            view = view_of(text)
            assert view is not None  # the decoded text differs: there are escapes
            for start, end, kind in spans:
                written_start, written_end = view.written_span(start, end)
                found.append((written_start, written_end, kind, view.text[start:end]))
        return found

    def shown(self, text: str) -> str:
        """``text`` as it may be shown (a traceback, a captured log): every secret shape and
        every credential value this redactor replaced, replaced."""
        return self.known(self.text(text))

    def known(self, text: str) -> str:
        """``text`` with every credential value this redactor replaced anywhere in the
        cassette replaced too, whatever its shape: an unshaped key redacted in a request
        header is also taken out of the 401 body and the response header that echo it."""
        spans = self._known_spans(text)
        known = _apply_spans(text, [text], spans)[0] if spans else text
        return self._spaced_out(known) if "\x00" in known else known

    def _known_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where ``text`` holds a known credential value, and its placeholder, in text
        order; placeholders already in ``text`` are kept whole."""
        found = self._known.spans(text) if self._known else []
        if not found:
            return []
        kept = (
            [m.span() for m in rules.PLACEHOLDER_RE.finditer(text)] if "<REDACTED:" in text else []
        )
        spans = []
        for start, end, placeholder in found:
            if not any(start < kept_end and kept_start < end for kept_start, kept_end in kept):
                self.changes += 1
                spans.append((start, end, placeholder))
        return spans

    def known_in(self, value: Any) -> Any:
        """A copy of a JSON-like value (headers, a parsed body) with known values replaced
        (see ``known``)."""
        if isinstance(value, str):
            return self.known(value)
        if isinstance(value, dict):
            return {
                self.known(key) if isinstance(key, str) else key: self.known_in(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.known_in(item) for item in value]
        return value

    def _known_in_bytes(self, body: bytes) -> bytes:
        try:
            return self.known(body.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return self.known(body.decode("latin-1")).encode("latin-1")

    def _mentions_known(self, *texts: str | bytes) -> bool:
        """Whether a known value (in any of its forms) occurs in one of ``texts``: spares
        walking the parts of most requests and responses."""
        if not self._known:
            return False
        for text in texts:
            if isinstance(text, bytes):
                text = text.decode("latin-1")  # the forms are ASCII in practice; any byte maps
            if self._known.mentioned_in(text) or any(
                self._known.mentioned_in(narrow) for _, _, narrow in rules.spaced_runs(text)
            ):
                return True
        return False

    def _known_in_record(self, record: dict[str, Any]) -> None:
        """Replace known values in a request or response record, in place."""
        if not self._known:
            return  # no value replaced yet: spares reading the record (megabytes) to tell
        body = record.get("body") or {}
        raw = b""
        if "base64" in body:
            with contextlib.suppress(binascii.Error, ValueError):
                raw = base64.b64decode(body["base64"], validate=True)
        # The strings replaced below, each where it is: searching the record's JSON text meant
        # encoding its images too (and a binary body's base64, searched as ``raw`` anyway).
        fields = [record.get(field) for field in ("uri", "reason", "headers")]
        if "base64" not in body:
            fields.append(body)
        if not self._mentions_known(raw, *jsontext.strings_in(fields)):
            return
        for field in ("uri", "reason", "headers"):
            if record.get(field):
                record[field] = self.known_in(record[field])
        if not body:
            return
        if "base64" in body:
            new = self._known_in_bytes(raw)
            if new != raw:
                record["body"] = {**body, "base64": base64.b64encode(new).decode()}
        else:
            record["body"] = self.known_in(body)

    def secret(self, value: str, kind: str) -> str:
        """Replace the whole of ``value`` (a known credential) by a placeholder."""
        known = self._placeholders.get(value)
        if known is not None:  # the same credential again (an API key on every request)
            self.changes += 1
            return known
        found = self.rules.secret_kind(value, kind)
        return value if found is None else self.placeholder(found, value)

    # ------------------------------------------------------------------ headers

    def header_action(self, name: str) -> str:
        """What happens to a header: keep, drop, credential, cookie, identifying or scan."""
        return self.rules.header_action(name)

    def header_value(self, name: str, value: str, action: str | None = None) -> str:
        """One header value, redacted according to the header's name."""
        action = action or self.header_action(name)
        if action == "credential" and self.rules.is_no_credential(name, value):
            action = "scan"  # a message or a number in a credential-named header
        if action == "keep":
            return value
        if action == "cookie":
            return self._cookie(name.lower(), value)
        if action == "identifying":
            return self.secret(value, name)
        if action == "credential":
            return self._credential(name, value)
        if "?" in value:  # a URL (location, link): its secret parameters too
            return self.uri(value)
        return self.text(value)

    def _credential(self, name: str, value: str) -> str:
        parts = rules.split_scheme(value)
        if parts is None:
            return self.secret(value, name)
        scheme, space, rest = parts
        if rules.is_signature_scheme(scheme):
            redacted = self.text(rest)
            if redacted == rest and not rules.PLACEHOLDER_RE.search(rest):
                redacted = self.secret(rest, name)
            return f"{scheme}{space}{redacted}"
        return f"{scheme}{space}{self.secret(rest, rules.scheme_kind(scheme, name))}"

    def _cookie(self, lower: str, value: str) -> str:
        pieces = value.split(";")
        for index, prefix, cookie_value in rules.cookie_values(lower, value):
            pieces[index] = prefix + self.secret(cookie_value, "cookie")
        return ";".join(pieces)

    def headers(self, headers: Headers) -> dict[str, Any]:
        """A redacted copy of a header mapping (values: strings or lists of strings)."""
        out: dict[str, Any] = {}
        for name, value in headers.items():
            action = self.header_action(name)
            if action == "drop":
                self.changes += 1
                continue
            if isinstance(value, (bytes, bytearray)):  # botocore sends some values as bytes
                value = bytes(value).decode("latin-1")
            if isinstance(value, str):
                out[self.key(name)] = self.header_value(name, value, action)
            else:
                out[self.key(name)] = [self.header_value(name, str(v), action) for v in value]
        return out

    # ------------------------------------------------------------------ URLs and forms

    def params(self, query: str) -> str:
        """A query string or form body with secret parameters replaced, order kept."""
        if not self.rules.params_on or "=" not in query:
            return self.text(query)
        pieces = query.split("&")
        for index, piece in enumerate(pieces):
            name, sep, value = piece.partition("=")
            decoded = unquote_plus(value)
            if sep and value and self.rules.is_secret_param(unquote_plus(name), decoded):
                new = self.secret(decoded, unquote_plus(name))
                # Nothing to replace (another tool's ``****``, a placeholder): the value
                # stays as written, not decoded (``scrubbed+`` is no ``scrubbed ``).
                pieces[index] = f"{name}={new}" if new != decoded else self.text(piece)
            else:
                pieces[index] = self.text(piece)
        return "&".join(pieces)

    def uri(self, uri: str) -> str:
        """A URL with userinfo, secret query parameters and secret shapes replaced."""
        base, hash_sign, fragment = uri.partition("#")
        path, question, query = base.partition("?")
        out = self.text(path)
        if question:
            out += "?" + self.params(query)
        if hash_sign:
            out += "#" + self.text(fragment)
        return out

    # ------------------------------------------------------------------ JSON

    def json(self, value: Any, path: tuple[str, ...] = (), *, response: bool = False) -> Any:
        """A redacted copy of a JSON value: secret keys at any depth (also in JSON text a
        string holds, such as tool-call arguments), every string by shape. In a response
        (``response``) a secret key's value is replaced only when it looks like a token
        (``Rules.is_secret_entry``)."""
        if isinstance(value, str):
            return self._text_with_keys(value, response)
        if isinstance(value, dict):
            response = response or rules.is_model_turn(value)
            out: dict[str, Any] = {}
            keys_may_match = self.rules.might_match_a_key(value)
            for key, item in value.items():
                if keys_may_match:
                    key = self.key(key)
                if isinstance(item, str) and self.rules.is_secret_entry(
                    key, item, path, response=response
                ):
                    out[key] = self.secret(item, key)
                elif key == "headers" and isinstance(item, dict):
                    # HTTP headers a body carries (a fetch tool's page, a webhook's echo): the
                    # fail-closed scan reads them by name, as it reads a request's own.
                    out[key] = self._headers_in_body(item, (*path, "headers"), response)
                elif key == "uri" and isinstance(item, str) and "?" in item:
                    # A URL's secret parameters too: the fail-closed scan reads a "uri" as
                    # one at any depth (an MCP resource, a file a tool reads).
                    out[key] = self._text_with_keys(self.uri(item), response)
                elif isinstance(item, list):
                    out[key] = self._keyed_list(key, item, path, response)
                else:
                    out[key] = self.json(item, (*path, rules.norm_key(key)), response=response)
            return out
        if isinstance(value, list):
            return [self.json(item, path, response=response) for item in value]
        return value

    def _headers_in_body(
        self, headers: dict[str, Any], path: tuple[str, ...], response: bool
    ) -> dict[str, Any]:
        """A redacted copy of a ``"headers"`` object inside a body (at ``path``): each value
        by the rules of its header's name, as ``headers`` redacts a request's own, after
        the JSON key rules (``{"authorization": ...}`` is a secret key too). A header that
        redaction drops stays (it is the body's data), searched as any other."""
        out: dict[str, Any] = {}
        keys_may_match = self.rules.might_match_a_key(headers)
        for name, item in headers.items():
            new_name = self.key(name) if keys_may_match else name
            if isinstance(item, str):
                out[new_name] = self._header_in_body(name, item, path, response)
            elif isinstance(item, list):
                out[new_name] = [
                    self._header_in_body(name, value, path, response)
                    if isinstance(value, str)
                    else self.json(value, (*path, rules.norm_key(name)), response=response)
                    for value in item
                ]
            else:
                out[new_name] = self.json(item, (*path, rules.norm_key(name)), response=response)
        return out

    def _header_in_body(self, name: str, value: str, path: tuple[str, ...], response: bool) -> str:
        """One value of a ``"headers"`` object inside a body (``_headers_in_body``)."""
        if self.rules.is_secret_entry(name, value, path, response=response):
            return self.secret(value, name)
        action = self.header_action(name)
        if action == "keep":  # (keep_headers) read as any string of the body
            return self._text_with_keys(value, response)
        return self._text_with_keys(
            self.header_value(name, value, "scan" if action == "drop" else action), response
        )

    def key(self, key: Any) -> Any:
        """A JSON object's key, secret shapes in it replaced: a key is written to the
        cassette as much as a value is (``{"sk-proj-...": "primary"}``)."""
        if type(key) is not str or not self.rules.might_match(key):
            return key
        return self.text(key)

    def _keyed_list(
        self, key: str, items: list[Any], path: tuple[str, ...], response: bool
    ) -> list[Any]:
        """A redacted copy of ``items``, the list value of JSON key ``key`` (at ``path``):
        its strings, also in lists inside it, are values of ``key`` (``{"api_key":
        ["..."]}``)."""
        out: list[Any] = []
        for item in items:
            if isinstance(item, str) and self.rules.is_secret_entry(
                key, item, path, response=response
            ):
                out.append(self.secret(item, key))
            elif isinstance(item, list):
                out.append(self._keyed_list(key, item, path, response))
            else:
                out.append(self.json(item, (*path, rules.norm_key(key)), response=response))
        return out

    def _embedded_spans(self, text: str, response: bool = False) -> list[tuple[int, int, str]]:
        """Where ``text``, JSON text held in a string, has a secret key's string value, and
        its placeholder (JSON-escaped), as ``(start, end, replacement)`` in text order."""
        spans = []
        for start, end, name, value in self.rules.embedded_secrets(text, response=response):
            new = self.secret(value, name)
            if new != value:
                spans.append((start, end, json.dumps(new, ensure_ascii=False)[1:-1]))
        return spans

    def _markup_spans(self, text: str, response: bool = False) -> list[tuple[int, int, str]]:
        """Where ``text`` has the text of an XML element named as a secret key, and its
        placeholder written as XML text (``&lt;REDACTED:sessiontoken&gt;``), as ``(start,
        end, replacement)`` in text order (``Rules.markup_secrets``)."""
        spans = []
        for start, end, name, value in self.rules.markup_secrets(text, response=response):
            new = self.secret(value, name)
            if new != value:
                spans.append((start, end, rules.xml_escaped(new)))
        return spans

    def _form_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where ``text`` has the value of a multipart form field named as a secret, and its
        placeholder, as ``(start, end, replacement)`` (``Rules.form_field_secrets``)."""
        spans = []
        for start, end, name, value in self.rules.form_field_secrets(text):
            new = self.secret(value, name)
            if new != value:
                spans.append((start, end, new))
        return spans

    # ------------------------------------------------------------------ bodies

    def body_text(self, text: str, content_type: str, *, response: bool = False) -> str:
        """A textual body: JSON (layout kept), form, or plain text; ``response``: see
        ``json``."""
        if not self._may_hold_secrets(text):
            return text
        if content_type == _FORM_TYPE:
            return self.params(text)
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            exact = jsontext.parse_exact(text)
            if exact is not None:
                value, layout = exact
                return jsontext.render(self.json(value, response=response), layout)
            return self._unrebuilt_json(text, response)
        redacted = self._text_with_keys(text, response)  # XML: its elements named as keys too
        if redacted != text and "xml" in content_type:
            # A placeholder is written as XML text (&lt;REDACTED:...&gt;), so the body still
            # parses: boto3 reads STS's <AccessKeyId> of an AssumeRole answer.
            redacted = rules.PLACEHOLDER_RE.sub(lambda found: rules.xml_escaped(found[0]), redacted)
        return redacted

    def _unrebuilt_json(self, text: str, response: bool) -> str:
        """JSON text that no known layout rebuilds (``1.5E-6``, spacing of its own), redacted.

        Redacted in its text, as JSON text held in a string is, every byte outside a secret
        stays as it was; rendering the parsed value again would rewrite them all. Then the
        parsed result is redacted too, known values included: a secret the text hides (a
        credential written with ``\\u`` escapes) is replaced there, and only then is the
        value rendered again.
        """
        redacted = self._text_with_keys(text, response)
        try:
            value = jsontext.loads_body(redacted)
        except ValueError:  # not JSON after all, or too deep: its text is all there is
            return redacted
        again = self.known_in(self.json(value, response=response))
        return redacted if again == value else json.dumps(again, ensure_ascii=False)

    def _text_with_keys(self, text: str, response: bool) -> str:
        """``text`` redacted where it is written: secret shapes, the values of secret keys
        in the JSON text it may be or hold, the text of XML elements named as secret keys
        (``<SessionToken>``) and the values of multipart form fields named as secrets."""
        # XML elements and form fields named as keys first: a shape inside one's text would
        # hide it.
        named = _disjoint(self._markup_spans(text, response), self._form_spans(text))
        if named:
            text = _apply_spans(text, [text], named)[0]
        new = self.text(text)
        spans = self._embedded_spans(new, response)
        new = _apply_spans(new, [new], spans)[0] if spans else new
        return self._parsed_json_text(new, response)

    def _may_hold_secrets(self, text: str) -> bool:
        """Whether a rule may match in ``text`` (``Rules.might_match``), or a header rule that
        goes by name: a ``"headers"`` object's value need look like nothing (a cookie)."""
        return self.rules.might_match(text) or '"headers' in text or "\x00" in text

    def _parsed_json_text(self, text: str, response: bool) -> str:
        """``text``, when it is JSON text held in a string, redacted as parsed JSON where a
        search of its text sees nothing: a ``"headers"`` object, a ``"uri"``'s parameters,
        a secret key in JSON text it holds in turn (``{"a": "{\\"api_key\\": ...}"}``). The
        fail-closed scan parses such text; a search of it keeps its bytes, so this runs
        only where one of these may be, and writes the text again only when it changed."""
        if not text.startswith(rules.JSON_OPENINGS) or not any(
            mark in text for mark in _SEEN_PARSED
        ):
            return text
        exact = jsontext.parse_exact(text)
        if exact is not None:
            value, layout = exact
        else:
            try:
                value, layout = jsontext.loads_strict(text), None
            except ValueError:
                return text  # not JSON (a piece of a stream): its text was searched
        again = self.json(value, response=response)
        if again == value:
            return text
        return (
            json.dumps(again, ensure_ascii=False)
            if layout is None
            else jsontext.render(again, layout)
        )

    def body_bytes(self, body: bytes, content_type: str, *, response: bool = False) -> bytes:
        """A raw body; bytes that are not UTF-8 are scanned as Latin-1 (ASCII secrets)."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            latin = body.decode("latin-1")
            redacted_latin = self._text_with_keys(latin, response)
            return body if redacted_latin == latin else redacted_latin.encode("latin-1")
        redacted = self.body_text(text, content_type, response=response)
        return body if redacted == text else redacted.encode("utf-8")

    def body_record(
        self, body: dict[str, Any] | None, content_type: str, *, response: bool = False
    ) -> dict[str, Any] | None:
        """A cassette body field (``json`` / ``text`` / ``base64``), redacted."""
        if not body:
            return body
        if "json" in body:
            return {**body, "json": self.json(body["json"], response=response)}
        if "text" in body:
            text = self.body_text(str(body["text"]), content_type, response=response)
            return {**body, "text": text}
        if "base64" in body:
            try:
                raw = base64.b64decode(body["base64"], validate=True)
            except (binascii.Error, ValueError):
                return body
            new = self.body_bytes(raw, content_type, response=response)
            return body if new == raw else {**body, "base64": base64.b64encode(new).decode()}
        return body

    # ------------------------------------------------------------------ streams

    def events(self, records: list[dict[str, Any]]) -> None:
        """Redact stream event records in place, also secrets split across events.

        String leaves at the same JSON path in successive events (``choices[0].delta.content``)
        are joined and searched once, so a key streamed in pieces is found; its first piece
        gets the placeholder and the other pieces lose their part of it.
        """
        groups: dict[tuple[Any, ...], list[Ref]] = {}
        names: set[Any] = set()  # every object key of the events, looked at once each
        for record in records:
            # A frame kept as its bytes (cut short), or its payload that is not UTF-8.
            for field in ("base64", "payload_base64"):
                if isinstance(record.get(field), str):
                    kept = {"base64": record[field]}
                    redacted = self.body_record(kept, "application/octet-stream", response=True)
                    record[field] = (redacted or kept)["base64"]
            for field in _EVENT_FIELDS:
                if field in record:
                    value = record[field]
                    if isinstance(value, str):
                        _add_ref(groups, (field,), (record, field))
                    elif isinstance(value, (dict, list)):
                        _collect(value, (field,), groups, names)
        searched = []
        for path, refs in groups.items():
            named = _named(path)  # the strings of a list are values of the key above it
            if self._is_secret_path(named):  # the values of a secret key, each replaced whole
                # ... but events are a response: a chosen secret's value (``password``) is
                # one only when it looks like a token (``Rules.is_secret_entry``).
                name = named[-1]
                chosen = rules.norm_key(name) in rules.CHOSEN_SECRET_KEYS
                for container, key in refs:
                    if not chosen or rules.looks_like_token(container[key]):
                        container[key] = self.secret(container[key], name)
                if not chosen:
                    continue
            elif _in_headers_object(named):
                # A "headers" object in an event (a webhook's echo): by header name, as in a
                # body (``_headers_in_body``); the scan reads it so.
                for container, key in refs:
                    container[key] = self._header_in_body(named[-1], container[key], (), True)
            elif isinstance(named[-1], str) and self.rules.is_token_key(named[-1]):
                for container, key in refs:
                    if rules.looks_like_token(container[key]):
                        container[key] = self.secret(container[key], named[-1])
            searched.append(refs)
        for refs in searched:
            pieces = [container[key] for container, key in refs]
            joined = pieces[0] if len(pieces) == 1 else "".join(pieces)
            known = self._known_spans(joined)  # a known value, maybe split across events
            if not known and not self._may_hold_secrets(joined):
                continue  # most paths of most streams: one search tells
            # A secret key's whole value first; the shapes inside it go with it.
            embedded = self._embedded_spans(joined, response=True)
            embedded = _disjoint(embedded, self._markup_spans(joined, response=True))
            shaped = [
                (start, end, self.placeholder(kind, joined[start:end]))
                for start, end, kind in self.rules.shapes(joined)
            ]
            spans = _disjoint(embedded, shaped, known)
            if spans:
                for (container, key), new in zip(
                    refs, _apply_spans(joined, pieces, spans), strict=True
                ):
                    container[key] = new
            # Each piece on its own: its escaped forms, and a secret whole in one piece that
            # the joined text hides (``Hello`` then ``sk-...``: a key starts at no letter).
            for container, key in refs:
                value = container[key]
                if key == "uri" and "?" in value:  # a URL's secret parameters, as in ``json``
                    value = self.uri(value)
                container[key] = self.known(self._parsed_json_text(self.text(value), True))
        # The keys of a stream are few, and mostly the same: one search of them all tells.
        every_key = "\n".join([name for name in names if type(name) is str])
        if not self.rules.might_match(every_key) and not self._mentions_known(every_key):
            return
        renamed = {name: new for name in names if (new := self.known(self.key(name))) != name}
        if renamed:
            for record in records:
                for field in _EVENT_FIELDS:
                    _rename_keys(record.get(field), renamed)

    def _is_secret_path(self, path: tuple[Any, ...]) -> bool:
        """Whether the strings at ``path`` in a stream's events (a field, then the keys and
        indexes inside it) are the values of a secret key."""
        key = path[-1]
        if len(path) < 2 or not isinstance(key, str):
            return False
        above: tuple[str, ...] = ()
        if self.rules.has_secret_paths():
            above = tuple(rules.norm_key(p) for p in path[1:-1] if isinstance(p, str))
        return self.rules.is_secret_key(key, above)

    # ------------------------------------------------------------------ whole interactions

    def records(
        self,
        request: dict[str, Any] | None,
        response: dict[str, Any],
        events: list[dict[str, Any]] | None,
        *,
        request_redacted: bool = False,
    ) -> bool:
        """Redact the cassette records of one interaction in place (the write-time pass).

        ``request_redacted``: the request is stored as these rules redacted it when it was
        sent; only credentials learnt since are replaced in it. Returns whether an event
        record changed (the writer then encodes their data again).
        """
        if not self.config.enabled:
            return False
        if request is not None and not request_redacted:
            request["uri"] = self.uri(request["uri"])
            request["headers"] = self.headers(request.get("headers") or {})
            content_type = _content_type(request["headers"])
            request["body"] = self.body_record(request.get("body"), content_type)
        response["headers"] = self.headers(response.get("headers") or {})
        body = response.get("body")
        if body and "stream" not in body:
            content_type = _content_type(response["headers"])
            response["body"] = self.body_record(body, content_type, response=True)
        if response.get("reason"):
            response["reason"] = self.text(response["reason"])
        # Whatever its shape, a credential replaced anywhere is replaced everywhere.
        if request is not None:
            self._known_in_record(request)
        self._known_in_record(response)
        if not events:
            return False
        before = self.changes
        self.events(events)
        return self.changes != before  # every replacement takes a placeholder, and counts

    def learnt(self) -> int:
        """How many secrets this redactor has replaced so far (it only ever learns more)."""
        return len(self._placeholders)

    def vcr_request(self, request: Any) -> Any:
        """vcrpy ``before_record_request``: redact a (copied) ``vcr.request.Request``."""
        if not self.config.enabled or request is None:
            return request
        redacted = self._redact_head(request)
        body = request.body
        if isinstance(body, (dict, list)):
            # vcrpy's aiohttp stub keeps a `json=` argument as the object: redact (and match)
            # the JSON aiohttp sends, as the cassette stores it.
            body = json.dumps(body).encode("utf-8")
            request.body = body
        if isinstance(body, bytes) and body:
            body = _decoded_request_body(request, body)
        if isinstance(body, (bytes, str)) and body:
            content_type = _content_type(redacted)
            if isinstance(body, str):
                new: bytes | str = self.body_text(body, content_type)
            else:
                new = self.body_bytes(body, content_type)
            if new != body:
                request.body = new
        self._known_in_vcr_request(request)
        return request

    def vcr_request_head(self, request: Any) -> Any:
        """The URI and headers of a vcrpy request redacted, its body left as it is.

        What the lookup needs before it compares a live request with the recorded ones
        (the credentials of headers become known values); ``vcr_request`` does the rest.
        """
        if self.config.enabled and request is not None:
            self._redact_head(request)
        return request

    def _redact_head(self, request: Any) -> dict[str, str]:
        """Redact a vcrpy request's URI and headers in place; the redacted headers."""
        uri = self.uri(request.uri)
        if uri != request.uri:
            request.uri = uri
        store = getattr(request.headers, "_store", None)  # vcrpy's {lower: (name, value)}
        pairs = store.values() if isinstance(store, dict) else request.headers.items()
        headers = dict(pairs)
        redacted = self.headers(headers)
        if redacted != headers:
            # Changed in place: the same headers, in the same order, as a new HeadersDict.
            for name, value in headers.items():
                if name not in redacted:
                    del request.headers[name]
                elif redacted[name] != value:
                    request.headers[name] = redacted[name]
        return redacted

    def _known_in_vcr_request(self, request: Any) -> None:
        """Replace known credential values in a vcrpy request (all its parts redacted)."""
        body = request.body
        headers = [str(value) for value in request.headers.values()]
        if not self._mentions_known(
            request.uri, *headers, body if isinstance(body, (str, bytes)) else ""
        ):
            return
        uri = self.known(request.uri)
        if uri != request.uri:
            request.uri = uri
        for name, value in list(request.headers.items()):
            new = self.known_in(value)
            if new != value:
                request.headers[name] = new
        if isinstance(body, str) and body:
            request.body = self.known(body)
        elif isinstance(body, bytes) and body:
            new_body = self._known_in_bytes(body)
            if new_body != body:
                request.body = new_body

    def _body_of_vcr_response(
        self, body: bytes, content_type: str, uri: str | None = None
    ) -> bytes:
        """A whole response body, redacted; a stream event by event, as in a JSONL cassette
        (a key split across two events is found): SSE, NDJSON, Gemini's streamed JSON
        array (told by ``uri``, its request's) and AWS event-stream frames, whose
        InvokeModel chunks (``{"bytes": base64}``) are read decoded and whose lengths and
        CRCs are computed again."""
        if eventstream.is_eventstream(content_type):
            frames = eventstream.encode_records(body)
            before = self.changes
            self.events(frames)
            if self.changes == before:
                return body
            return b"".join(eventstream.render_frame(frame) for frame in frames)
        kind = stream_events.stream_kind(content_type, uri, body)
        try:
            text = body.decode("utf-8") if kind else None
        except UnicodeDecodeError:
            text = None
        if kind is None or text is None:
            return self._known_in_bytes(self.body_bytes(body, content_type, response=True))
        records = stream_events.encode_events(kind, text)
        before = self.changes
        self.events(records)
        if self.changes == before:
            return body
        return "".join(stream_events.render_event(kind, r) for r in records).encode("utf-8")

    def vcr_response(self, response: dict[str, Any], uri: str | None = None) -> dict[str, Any]:
        """A redacted copy of a vcrpy response dict (``{"status", "headers", "body":
        {"string": ...}}``), for cassettes vcrpy serializes (YAML); ``uri``: its request's.
        A body in a content-encoding is decoded first and stored decoded when redaction
        changed it."""
        if not self.config.enabled:
            return response
        headers = {
            name: list(value) if isinstance(value, (list, tuple)) else [str(value)]
            for name, value in (response.get("headers") or {}).items()
        }
        out = {**response, "headers": self.known_in(self.headers(headers))}
        status = response.get("status")
        if isinstance(status, dict) and isinstance(status.get("message"), str):
            # The reason phrase, as a JSONL cassette's ``reason`` is (``Redactor.records``).
            message = self.known(self.text(status["message"]))
            if message != status["message"]:
                out["status"] = {**status, "message": message}
        body = response.get("body")
        raw = body.get("string") if isinstance(body, dict) else None
        as_text = isinstance(raw, str)  # a vcrpy file read back holds text bodies as str
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        if isinstance(body, dict) and isinstance(raw, bytes) and raw:
            decoded, decoded_headers = decode_content(raw, out["headers"])
            new = self._body_of_vcr_response(decoded, _content_type(decoded_headers), uri)
            if new != decoded:
                out["headers"] = decoded_headers
                out["body"] = {**body, "string": new.decode("utf-8") if as_text else new}
        return out


def _decoded_request_body(request: Any, body: bytes) -> bytes:
    """A vcrpy request's body with its ``content-encoding`` undone, as a response's is: the
    body set decoded, ``content-encoding`` dropped and ``content-length`` the decoded size.
    A client that compresses what it sends (``content-encoding: gzip``) would otherwise
    hide its JSON from every rule, and the scan refuse the save. ``body`` as it is when it
    does not decode (an unknown coding, corrupt data, more than ``max_decoded_bytes()``)."""
    headers = {str(name): [str(value)] for name, value in request.headers.items()}
    decoded, decoded_headers = decode_content(body, headers)
    if decoded_headers is headers:  # nothing undone
        return body
    for name in headers:
        if name not in decoded_headers:
            del request.headers[name]
        elif decoded_headers[name] != headers[name]:
            request.headers[name] = decoded_headers[name][0]
    request.body = decoded
    return decoded


# The fields of a stream event's record that hold what was streamed: an event-stream
# frame's typed headers too (``{"bytes": base64}``), written to the cassette as they came.
_EVENT_FIELDS = ("data", "text", "raw", "event", "id", "headers")


def _add_ref(groups: dict[tuple[Any, ...], list[Ref]], path: tuple[Any, ...], ref: Ref) -> None:
    refs = groups.get(path)
    if refs is None:
        groups[path] = [ref]
    else:
        refs.append(ref)


# What tells apart the parts of an answer that one stream interleaves: the choices of an
# ``n=2`` chat completion (``choices[0].index``), parallel tool calls (``tool_calls[0].index``),
# Anthropic's content blocks (``index``), the Responses API's items (``output_index``,
# ``content_index``, ``item_id``).
_PART_KEYS = ("index", "output_index", "content_index", "item_id")


def _collect(
    value: dict[str, Any] | list[Any],
    path: tuple[Any, ...],
    groups: dict[tuple[Any, ...], list[Ref]],
    names: set[Any],
) -> None:
    """Add the string leaves of ``value`` (at ``path``) to ``groups``, by path, and the
    keys of its objects to ``names``.

    The records are parsed JSON, so their values are exactly ``str``, ``dict``, ``list``
    and scalars: ``type`` tells them apart for less than ``isinstance`` on every leaf. An
    object that says which part of the answer it carries (``_PART_KEYS``) puts that in the
    path: the pieces of one part are joined, never a piece of another streamed between.
    """
    if type(value) is dict:
        # (tested key by key first: most objects have none; content_index comes with the others)
        if "index" in value or "output_index" in value or "item_id" in value:
            # (only names and numbers: the path is a key of a dict, and an "index" may hold
            # an object of its own)
            part = [(n, value[n]) for n in _PART_KEYS if type(value.get(n)) in (int, str)]
            path = (*path, tuple(part))
        names.update(value)
        items: Any = value.items()
    else:
        items = enumerate(value)
    for key, item in items:
        kind = type(item)
        if kind is str:
            child = (*path, key)
            refs = groups.get(child)
            if refs is None:
                groups[child] = [(value, key)]
            else:
                refs.append((value, key))
        elif kind is dict or kind is list:
            _collect(item, (*path, key), groups, names)


def _rename_keys(value: Any, renamed: dict[Any, str]) -> None:
    """Rename, in place and in order, the keys of the objects in ``value`` that
    ``renamed`` maps (a stream event's key that holds a secret)."""
    if type(value) is dict:
        if not renamed.keys().isdisjoint(value):
            items = list(value.items())
            value.clear()
            value.update((renamed.get(key, key), item) for key, item in items)
        children: Any = value.values()
    elif type(value) is list:
        children = value
    else:
        return
    for child in children:
        if type(child) is dict or type(child) is list:
            _rename_keys(child, renamed)


def _named(path: tuple[Any, ...]) -> tuple[Any, ...]:
    """``path`` without the list indexes that end it: the strings of a list (``{"api_key":
    ["..."]}``) are values of the key above it."""
    end = len(path)
    while end > 1 and not isinstance(path[end - 1], str):
        end -= 1
    return path[:end]


def _in_headers_object(path: tuple[Any, ...]) -> bool:
    """Whether ``path`` (a ``_named`` one) leads to a header of a ``"headers"`` object: the
    key above its last is ``headers`` (the parts of an answer ``_collect`` puts in a path,
    tuples, are no keys)."""
    if not isinstance(path[-1], str):
        return False
    above = [part for part in path[:-1] if type(part) is not tuple]
    return bool(above) and above[-1] == "headers"


def _disjoint(*groups: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The spans of ``groups`` in text order; where two overlap, the earlier group's wins."""
    chosen: list[tuple[int, int, str]] = []
    for group in groups:
        chosen += [s for s in group if not any(s[0] < c[1] and c[0] < s[1] for c in chosen)]
    return sorted(chosen)


def _merged(found: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """Secrets found as ``(start, end, kind, secret)``, in text order, overlapping ones
    merged into one span with the kind and secret of the longest of them.

    The same secret is found as written and in a decoded view; a secret partly escaped is
    found whole in a view, and its unescaped part alone as written.
    """
    groups: list[list[tuple[int, int, str, str]]] = []
    group_end = -1
    for item in sorted(found):
        if groups and item[0] < group_end:
            groups[-1].append(item)
            group_end = max(group_end, item[1])
        else:
            groups.append([item])
            group_end = item[1]
    merged = []
    for group in groups:
        _, _, kind, secret = max(group, key=lambda item: item[1] - item[0])
        merged.append((group[0][0], max(item[1] for item in group), kind, secret))
    return merged


def _spaced_like(placeholder: str, length: int, written: re.Match[str]) -> str:
    """``placeholder`` with as many NULs after each character as there are between the
    characters of ``written``, a secret of ``length`` characters (UTF-16: one, UTF-32:
    three)."""
    gap = (len(written[0]) - length) // max(length - 1, 1)
    return ("\x00" * gap).join(placeholder)


def _apply_spans(joined: str, pieces: list[str], spans: list[tuple[int, int, str]]) -> list[str]:
    """Cut ``joined`` back into ``pieces`` with each span replaced in the piece it starts in."""
    out: list[str] = []
    position = 0
    index = 0
    for piece in pieces:
        start, end = position, position + len(piece)
        buffer: list[str] = []
        current = start
        while current < end:
            while index < len(spans) and spans[index][1] <= current:
                index += 1
            if index < len(spans) and spans[index][0] < end:
                span_start, span_end, replacement = spans[index]
                if span_start > current:
                    buffer.append(joined[current:span_start])
                    current = span_start
                if span_start >= start:
                    buffer.append(replacement)
                current = min(span_end, end)
                if span_end <= end:
                    index += 1
            else:
                buffer.append(joined[current:end])
                current = end
        if not piece:
            buffer = []
        out.append("".join(buffer))
        position = end
    return out
