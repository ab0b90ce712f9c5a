"""Convert between vcrpy's in-memory interactions and llmcassette's ``Interaction``.

vcrpy hands persisters and serializers a ``vcr.request.Request`` and a response dict
(``{"status": {"code", "message"}, "headers": {name: [values]}, "body": {"string": ...}}``).
llmcassette keeps what vcrpy has no field for (stream kind, event timing, end-line
metadata, the request's session label and client number) under the response dict's
``"llmcassette"`` key, which vcrpy carries along untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from llmcassette.cassette.jsonl import Headers, Interaction
from llmcassette.transport.recorded import META_KEY, event_times_of

if TYPE_CHECKING:
    from vcr.request import Request


def _as_bytes(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, (Mapping, list)):
        # vcrpy's aiohttp stub keeps a `json=` argument as the object itself; aiohttp sends
        # json.dumps of it, and so is it stored.
        return json.dumps(body).encode("utf-8")
    if hasattr(body, "read"):  # a file-like body that vcrpy keeps as such
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(part if isinstance(part, bytes) else str(part).encode() for part in body)


def _headers(raw: Mapping[str, Any]) -> Headers:
    out: Headers = {}
    for name, value in raw.items():
        if isinstance(value, (bytes, bytearray)):  # botocore sends some header values as bytes
            out[name] = [bytes(value).decode("latin-1")]
        else:
            out[name] = [value] if isinstance(value, str) else list(map(_text, value))
    return out


def _text(value: Any) -> str:
    return bytes(value).decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)


def from_vcr(request: Any, response: Mapping[str, Any]) -> Interaction:
    """Build an ``Interaction`` from a vcrpy request (object or dict) and response dict."""
    if isinstance(request, Mapping):
        method, uri = request["method"], request["uri"]
        request_headers, request_body = request.get("headers", {}), request.get("body")
    else:
        method, uri = request.method, request.uri
        request_headers, request_body = request.headers, request.body
    meta: Mapping[str, Any] = response.get(META_KEY) or {}
    status = response["status"]
    return Interaction(
        method=method,
        uri=uri,
        request_headers=_headers(request_headers),
        request_body=_as_bytes(request_body),
        status=int(status["code"]),
        reason=status.get("message") or "",
        response_headers=_headers(response.get("headers") or {}),
        response_body=_as_bytes(response.get("body", {}).get("string")) or b"",
        stream=meta.get("stream"),
        event_times=event_times_of(meta),
        response_extra=dict(meta.get("response_extra") or {}),
        end_extra=dict(meta.get("end_extra") or {}),
        session=meta.get("session"),
        client=meta.get("client"),
    )


class StoredResponse(dict[str, Any]):
    """A recorded response dict that vcrpy can deep-copy cheaply.

    vcrpy deep-copies every response it loads (``Cassette.append``). Bodies are bytes and
    llmcassette's metadata is never mutated, so only the containers hooks may change
    (status, headers and their value lists, the body dict) are copied.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> StoredResponse:
        copy = StoredResponse(self)
        copy["status"] = dict(self["status"])
        copy["headers"] = {name: list(values) for name, values in self["headers"].items()}
        copy["body"] = dict(self["body"])
        return copy


def incoming_request(
    method: str, uri: str, body: bytes | None, headers: Iterable[tuple[str, str]]
) -> Request:
    """The vcrpy request for one a client is sending now.

    ``headers`` are ``(name, value)`` pairs, a repeated name's values already joined with
    ", " as vcrpy's ``HeadersDict`` does.
    """
    request: Request = _request_class()(method, uri, body, {})
    for name, value in headers:  # HeadersDict keeps a name's first spelling, the last value
        request.headers[name] = value
    return request


@cache
def _request_class() -> type:
    from vcr.request import HeadersDict, Request  # vcrpy only once a cassette is in use

    class StoredRequest(Request):  # type: ignore[misc]
        """A vcrpy ``Request`` whose deep copy shares what never changes.

        vcrpy deep-copies every request before ``before_record_request``, for each loaded
        interaction and each live request. The method, URI, body bytes and parsed URL are
        immutable, and ``redacted_by`` (the redactor this request already went through,
        see ``redaction_hook``) must stay the same object, not a copy of the redactor: only
        the headers, which hooks may change, get a new mapping.
        """

        def __deepcopy__(self, memo: dict[int, Any]) -> StoredRequest:
            duplicate: StoredRequest = object.__new__(type(self))
            duplicate.__dict__.update(self.__dict__)
            duplicate._headers = HeadersDict(self._headers)
            return duplicate

    return StoredRequest


def to_vcr(item: Interaction) -> tuple[Request, dict[str, Any]]:
    """The vcrpy request and response dict that replay an ``Interaction``."""
    pairs = ((name, values[0]) for name, values in item.request_headers.items() if values)
    request = incoming_request(item.method, item.uri, item.request_body, pairs)
    response = StoredResponse(
        {
            "status": {"code": item.status, "message": item.reason},
            "headers": item.response_headers,
            "body": {"string": item.response_body},
            META_KEY: {
                "stream": item.stream,
                "event_times": item.event_times,
                "response_extra": item.response_extra,
                "end_extra": item.end_extra,
                "session": item.session,
                "client": item.client,
            },
        }
    )
    return request, response
