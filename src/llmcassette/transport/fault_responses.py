"""Carry a fault out: the exception, error response or changed stream a request gets.

The transport calls :func:`prepare` with the recorded response (or None) and the fault; it
raises the client library's own transport exception, or returns the response to replay and
how its stream is shaped (events kept, how it ends, whether it hangs, the pace).
"""

from __future__ import annotations

import http
import json
from collections.abc import Callable, Mapping
from typing import Any

from llmcassette.errors import FaultError
from llmcassette.faults import placeholders
from llmcassette.faults.model import CUT_ENDINGS, FAILURES, Fault, shown
from llmcassette.transport.recorded import META_KEY
from llmcassette.transport.replay import Hang, Shape, event_pieces, recorded_failure

# Error "type" strings the providers use, by status (OpenAI, Anthropic).
_OPENAI_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_BODY_HEADERS = frozenset(
    {"content-type", "content-length", "content-encoding", "transfer-encoding"}
)


def failure_for(library: Any, fault: Fault, request: Any) -> BaseException:
    """The client library's exception for a transport failure (``httpx.ConnectError``...)."""
    assert fault.fail is not None
    name, message = FAILURES[fault.fail]
    exception_type = getattr(library, name)
    error: BaseException = exception_type(
        f"{message} (llmcassette fault: {fault.fail})", request=request
    )
    return error


def error_response(fault: Fault, recorded: Mapping[str, Any] | None, path: str) -> dict[str, Any]:
    """The response dict of an HTTP error fault, shaped like the provider's own errors."""
    assert fault.status is not None
    status = fault.status
    headers: dict[str, list[str]] = {}
    if recorded is not None:
        for name, values in recorded["headers"].items():
            if name.lower() not in _BODY_HEADERS:  # they described the recorded body
                headers[name] = list(values)
    body = fault.body if fault.body is not None else _provider_error(status, path)
    if isinstance(body, str):
        data = body.encode("utf-8")
        content_type = "text/plain; charset=utf-8"
    else:
        data = json.dumps(body).encode("utf-8")
        content_type = "application/json"
    given = {name.lower() for name, _ in fault.headers}
    headers = {name: values for name, values in headers.items() if name.lower() not in given}
    if "content-type" not in given:
        headers["content-type"] = [content_type]
    for name, value in fault.headers:
        headers.setdefault(name, []).append(value)
    headers["content-length"] = [str(len(data))]
    return {
        "status": {"code": status, "message": _phrase(status)},
        "headers": headers,
        "body": {"string": data},
        META_KEY: {"stream": None},
    }


def _phrase(status: int) -> str:
    """The reason phrase of ``status`` ("" for a code without one)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _provider_error(status: int, path: str) -> Any:
    message = f"{_phrase(status) or f'Error {status}'} (llmcassette fault)"
    if path.rstrip("/").endswith("/messages"):
        kind = _ANTHROPIC_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind, code = _OPENAI_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def shape(
    library: Any,
    response: Mapping[str, Any],
    fault: Fault | None,
    request: Any,
    vcr_request: Any,
    *,
    cassette: Callable[[], str | None],
    where: str,
) -> Shape | None:
    """How to deliver ``response`` under ``fault``; None when nothing changes.

    Fills ``{{fromRequest:...}}`` placeholders from ``vcr_request`` (the live request).
    ``cassette`` gives the cassette's file, for errors: asked only when something changes.
    """

    body = _body_of(response)
    needs_text = placeholders.has_markers(body)
    if fault is None and not needs_text:
        return None
    path = cassette()
    kind = _stream_kind(response)
    if fault is not None and fault.replace:
        body = _replace(body, fault, path, where, kind)
        response = {**response, "body": {"string": body}}
    pieces, times = event_pieces(response)
    content_length = None
    if placeholders.has_markers(body):
        json_strings = _json_strings(response, kind)
        pieces = [
            _fill(piece, vcr_request, json_strings, path, _at(where, kind, index))
            for index, piece in enumerate(pieces)
        ]
    if kind is None and (needs_text or (fault is not None and fault.replace)):
        content_length = sum(len(piece) for piece in pieces)
    failure = recorded_failure(library, response, request)
    hang = None
    if fault is not None:
        if fault.cut_after is not None:
            pieces = pieces[
                : _events_kept(fault.cut_after, "cut_stream", pieces, kind, path, where)
            ]
            times = times and times[: len(pieces)]
            name, message = CUT_ENDINGS[fault.cut]
            failure = None
            if name is not None:
                failure = getattr(library, name)(
                    f"{message} (llmcassette fault: stream cut after {len(pieces)} event(s))",
                    request=request,
                )
        if fault.hang_after is not None:
            pieces = pieces[: _events_kept(fault.hang_after, "hang", pieces, kind, path, where)]
            times = times and times[: len(pieces)]
            failure = None
            timeout = (request.extensions.get("timeout") or {}).get("read")
            hang = Hang(
                fault.marker,
                timeout,
                library.ReadTimeout(
                    f"llmcassette fault: the stream hung after {len(pieces)} event(s) and the "
                    f"read timeout ({timeout} s) expired",
                    request=request,
                ),
            )
        if fault.event_delay is not None:
            times = [index * fault.event_delay for index in range(len(pieces))]
            return Shape(pieces, times, failure, hang, True, content_length)
    return Shape(pieces, times, failure, hang, False, content_length)


def unplayable(
    recorded: Mapping[str, Any] | None,
    fault: Fault,
    *,
    url_path: str,
    cassette: str | None,
    where: str,
) -> list[tuple[str, FaultError]]:
    """What replaying ``recorded`` under ``fault`` fails with whatever the request, found
    without one (``llmcassette check``): each error replay raises, with the fault's field
    that causes it (``replace``, ``body``, ``cut_after``, ``hang_after``).

    The steps are replay's own (``error_response``, then those of ``shape``). ``url_path``
    is the request's, which an HTTP error's default body is shaped by. A transport failure
    answers before any response: nothing to check. A placeholder that fails in the recorded
    response itself is the cassette's problem, not the fault's, and is left out.
    """
    if fault.fail is not None:
        return []
    response = recorded
    blamed: str | None = None  # the field a placeholder in ``response`` as it is comes from
    if fault.status is not None:
        response = error_response(fault, recorded, url_path)
        blamed = "body"
    if response is None:  # an entry with nothing to answer: Overrides.resolve refuses it
        return []
    kind = _stream_kind(response)
    problems: list[tuple[str, FaultError]] = []
    before = _placeholder_errors(response, kind, cassette, where)
    if blamed is not None:
        problems.extend((blamed, error) for error in before.values())
    if fault.replace:
        try:
            replaced = _replace(_body_of(response), fault, cassette, where, kind)
        except FaultError as error:
            problems.append(("replace", error))
        except UnicodeDecodeError:  # a binary body: replace fails, but not as a fault
            pass
        else:
            response = {**response, "body": {"string": replaced}}
            after = _placeholder_errors(response, kind, cassette, where)
            problems.extend(
                ("replace", error) for location, error in after.items() if location not in before
            )
    pieces, _ = event_pieces(response)
    for field_name, count, what in (
        ("cut_after", fault.cut_after, "cut_stream"),
        ("hang_after", fault.hang_after, "hang"),
    ):
        if count is not None:
            try:
                _events_kept(count, what, pieces, kind, cassette, where)
            except FaultError as error:
                problems.append((field_name, error))
    return problems


def recorded_placeholder_errors(
    response: Mapping[str, Any], cassette: str | None, where: str
) -> dict[str, FaultError]:
    """The placeholders of a recorded response (a vcrpy response dict) that replay would
    fail on for any request, by location (``llmcassette check``)."""
    return _placeholder_errors(response, _stream_kind(response), cassette, where)


def _placeholder_errors(
    response: Mapping[str, Any], kind: str | None, cassette: str | None, where: str
) -> dict[str, FaultError]:
    """The error each piece of ``response`` fails with for any request (a placeholder that
    is malformed, unterminated, an invalid regex), by its location, as ``shape`` fills them."""
    if not placeholders.has_markers(_body_of(response)):
        return {}
    json_strings = _json_strings(response, kind)
    errors: dict[str, FaultError] = {}
    for index, piece in enumerate(event_pieces(response)[0]):
        if not placeholders.has_markers(piece):
            continue
        location = _at(where, kind, index)
        try:
            text = piece.decode("utf-8", "replace")
            placeholders.check(
                text, json_strings=json_strings, cassette=cassette, location=location
            )
        except FaultError as error:
            errors[location] = error
    return errors


def _body_of(response: Mapping[str, Any]) -> bytes:
    body = response["body"]["string"] or b""
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def _stream_kind(response: Mapping[str, Any]) -> str | None:
    kind = (response.get(META_KEY) or {}).get("stream")
    return None if kind is None else str(kind)


def _json_strings(response: Mapping[str, Any], kind: str | None) -> bool:
    """Whether placeholders in ``response`` are inside JSON strings (an event, a JSON body)."""
    return kind is not None or _is_json(response)


def _events_kept(
    count: int, what: str, pieces: list[bytes], kind: str | None, cassette: str | None, where: str
) -> int:
    if kind is None and count > 0:
        raise FaultError(
            cassette,
            where,
            f"{what}(after={count}) needs a streamed response, and this one is not a stream",
            f"use {what}(after=0) to stop before the body",
        )
    if count > len(pieces):
        raise FaultError(
            cassette,
            where,
            f"{what}(after={count}), but the recorded stream has {len(pieces)} event(s)",
            f"use a number from 0 to {len(pieces)}",
        )
    return count


def _at(where: str, kind: str | None, index: int) -> str:
    # Events are numbered from 1 in messages, as interactions are (docs/errors.md).
    return f"{where}, event #{index + 1}" if kind is not None else f"{where}, body"


def _is_json(response: Mapping[str, Any]) -> bool:
    for name, values in response["headers"].items():
        if name.lower() == "content-type":
            return any("json" in value.lower() for value in values)
    return False


def _fill(
    piece: bytes, request: Any, json_strings: bool, cassette: str | None, location: str
) -> bytes:
    if not placeholders.has_markers(piece):
        return piece
    text = piece.decode("utf-8")
    return placeholders.resolve(
        text, request, json_strings=json_strings, cassette=cassette, location=location
    ).encode("utf-8")


def _replace(
    body: bytes, fault: Fault, cassette: str | None, where: str, kind: str | None
) -> bytes:
    text = body.decode("utf-8")
    for number, (old, new) in enumerate(fault.replace, start=1):
        if old not in text:
            show = f"llmcassette show --raw {cassette or 'CASSETTE'}"
            # Named as a wrong value of a sidecar is (``shown``): a long text only by its
            # length, as it may be a credential pasted into the sidecar.
            which = "the replace text" if len(fault.replace) == 1 else f"replace text {number}"
            if len(fault.replace) > 1:
                which += f" of {len(fault.replace)}"
            which += f" ({shown(old)})"
            if kind is None:
                raise FaultError(
                    cassette,
                    where,
                    f"{which} is not in the recorded response",
                    f"replace text the response holds, as its line in the cassette spells it "
                    f"({show}); if the cassette was recorded again, update the text",
                )
            # A streamed answer holds its text in pieces, one per event: a value the
            # model streamed ("b8fdea4f", "-", "82ea", ...) is in no one event whole.
            raise FaultError(
                cassette,
                where,
                f"{which} is not in any event of the recorded stream; streamed text "
                "comes in pieces, and text is replaced within one event",
                f"replace what one event holds, as its line in the cassette spells it "
                f"({show}), or put the placeholder in by hand; if the cassette was recorded "
                "again, update the text",
            )
        text = text.replace(old, new)
    return text.encode("utf-8")
