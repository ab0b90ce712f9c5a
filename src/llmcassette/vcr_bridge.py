"""Convert between vcrpy's in-memory interactions and llmcassette's ``Interaction``.

vcrpy hands persisters and serializers a ``vcr.request.Request`` and a response dict
(``{"status": {"code", "message"}, "headers": {name: [values]}, "body": {"string": ...}}``).
llmcassette keeps what vcrpy has no field for (stream kind, event timing, end-line
metadata) under the response dict's ``"llmcassette"`` key, which vcrpy carries along untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .format.cassette_file import Headers, Interaction

if TYPE_CHECKING:
    from vcr.request import Request

META_KEY = "llmcassette"


def _as_bytes(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):  # a file-like body that vcrpy keeps as such
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(part if isinstance(part, bytes) else str(part).encode() for part in body)


def _headers(raw: Mapping[str, Any]) -> Headers:
    out: Headers = {}
    for name, value in raw.items():
        out[name] = [value] if isinstance(value, str) else [str(v) for v in value]
    return out


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
        event_times=meta.get("event_times"),
        response_extra=dict(meta.get("response_extra") or {}),
        end_extra=dict(meta.get("end_extra") or {}),
    )


def to_vcr(item: Interaction) -> tuple[Request, dict[str, Any]]:
    """The vcrpy request and response dict that replay an ``Interaction``."""
    from vcr.request import Request  # late: see setup.py on importing vcrpy during plugin load

    request = Request(
        item.method,
        item.uri,
        item.request_body,
        {name: values[0] for name, values in item.request_headers.items() if values},
    )
    response: dict[str, Any] = {
        "status": {"code": item.status, "message": item.reason},
        "headers": item.response_headers,
        "body": {"string": item.response_body},
        META_KEY: {
            "stream": item.stream,
            "event_times": item.event_times,
            "response_extra": item.response_extra,
            "end_extra": item.end_extra,
        },
    }
    return request, response
