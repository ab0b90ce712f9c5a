"""Convert between vcrpy's in-memory interactions and llmcassette's ``Interaction``.

vcrpy hands persisters and serializers a ``vcr.request.Request`` and a response dict
(``{"status": {"code", "message"}, "headers": {name: [values]}, "body": {"string": ...}}``).
llmcassette keeps what vcrpy has no field for (stream kind, event timing, end-line
metadata) under the response dict's ``"llmcassette"`` key, which vcrpy carries along untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from llmcassette.cassette.jsonl import Headers, Interaction, LoadedInteraction
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
    store = getattr(raw, "_store", None)  # vcrpy's HeadersDict: {lower: (name, value)}
    pairs = store.values() if isinstance(store, dict) else raw.items()
    for name, value in pairs:
        out[name] = [value] if isinstance(value, str) else list(map(str, value))
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
        event_times=event_times_of(meta),
        response_extra=dict(meta.get("response_extra") or {}),
        end_extra=dict(meta.get("end_extra") or {}),
    )


class LazyBody(dict[str, Any]):
    """vcrpy's ``{"string": ...}`` body dict, whose bytes are built on first access.

    A streamed body is rebuilt from its event lines only when a request replays it (or the
    cassette is saved again), so loading a cassette does not pay for bodies never played.
    """

    def __init__(self, source: Callable[[], bytes]) -> None:
        super().__init__()
        self._source = source

    def __missing__(self, key: str) -> Any:
        if key != "string":
            raise KeyError(key)
        value = self["string"] = self._source()
        return value

    def get(self, key: str, default: Any = None) -> Any:
        """Like ``dict.get``, building the body when ``"string"`` is asked for."""
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key == "string" or super().__contains__(key)

    def copy(self) -> LazyBody:
        """A copy that is still lazy if the body was not built yet."""
        duplicate = LazyBody(self._source)
        duplicate.update(self)
        return duplicate


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
        body = self["body"]
        copy["body"] = body.copy() if isinstance(body, LazyBody) else dict(body)
        return copy


_REQUEST_ATTRIBUTES = {
    "method",
    "_uri",
    "parsed_uri",
    "_was_file",
    "_was_iter",
    "_body",
    "_headers",
}


@cache
def _stored_request_class() -> type:
    from vcr.request import HeadersDict, Request  # late: see setup.py

    # HeadersDict keeps {lower-case name: (name, value)} in `_store`; filling it directly
    # skips a Python-level __setitem__ per header, which loading thousands of requests feels.
    direct = "_store" in vars(HeadersDict())

    def headers_dict(pairs: Any) -> Any:
        if not direct:
            return HeadersDict(dict(pairs))
        store: dict[str, tuple[str, str]] = {}
        for name, value in pairs:
            lower = name.lower()
            kept = store.get(lower)
            store[lower] = (kept[0] if kept else name, value)  # first spelling wins, as in vcrpy
        headers = HeadersDict.__new__(HeadersDict)
        headers._store = store
        return headers

    # The attributes vcrpy's Request.__init__ gives a request with a bytes body. When they
    # are these, a request is filled in directly: without the URL parse (made on first use,
    # see ``__getattr__``; recording never needs it), the body checks and a debug log call.
    plain = set(vars(Request("GET", "http://localhost/", b"", {}))) == _REQUEST_ATTRIBUTES

    class StoredRequest(Request):  # type: ignore[misc]
        """A ``vcr.request.Request`` whose deep copy shares the immutable parts.

        vcrpy's ``before_record_request`` deep-copies each loaded request; the URI, body
        bytes and parsed URL are immutable, so only the headers need a new mapping.
        """

        # The redactor whose rules this request went through (``RedactRequest``), if any:
        # read for every request, so a class default rather than a failed lookup.
        redacted_by: Any = None

        @classmethod
        def build(cls, method: str, uri: str, body: bytes | None, headers: Headers) -> Any:
            pairs = ((name, values[0]) for name, values in headers.items() if values)
            return cls.incoming(method, uri, body, pairs)

        @classmethod
        def incoming(cls, method: str, uri: str, body: bytes | None, pairs: Any) -> Any:
            if not plain or not (body is None or type(body) is bytes):
                return cls(method, uri, body, headers_dict(pairs))
            request = object.__new__(cls)
            request.__dict__.update(
                method=method,
                _uri=uri,
                _was_file=False,
                _was_iter=False,
                _body=body,
                _headers=headers_dict(pairs),
            )
            return request

        def __getattr__(self, name: str) -> Any:
            # Only for an attribute the instance does not have: the URL not parsed yet.
            if name == "parsed_uri" and "_uri" in self.__dict__:
                parsed = self.__dict__["parsed_uri"] = urlparse(self._uri)
                return parsed
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

        def __deepcopy__(self, memo: dict[int, Any]) -> Any:
            copy = object.__new__(type(self))
            copy.__dict__.update(self.__dict__)
            if direct:
                headers = HeadersDict.__new__(HeadersDict)
                headers._store = dict(self._headers._store)  # values are (str, str) tuples
                copy._headers = headers
            else:
                copy._headers = HeadersDict(self._headers)
            return copy

    return StoredRequest


def incoming_request(
    method: str, uri: str, body: bytes | None, headers: Iterable[tuple[str, str]]
) -> Request:
    """The vcrpy request for one a client is sending now, cheap to deep-copy.

    vcrpy deep-copies a request before each ``before_record_request``; this one shares its
    immutable parts (see ``StoredRequest``). ``headers`` are ``(name, value)`` pairs, a
    repeated name's values joined with ", " as vcrpy's ``HeadersDict`` does.
    """
    request_class: Any = _stored_request_class()
    request: Request = request_class.incoming(method, uri, body, headers)
    return request


def _body_of(item: Interaction) -> dict[str, Any]:
    events = item.deferred if isinstance(item, LoadedInteraction) else None
    if events is not None:
        return LazyBody(events.body)
    return {"string": item.response_body}


def _times_of(item: Interaction) -> Any:
    events = item.deferred if isinstance(item, LoadedInteraction) else None
    return events.times if events is not None else item.event_times


def to_vcr(item: Interaction) -> tuple[Request, dict[str, Any]]:
    """The vcrpy request and response dict that replay an ``Interaction``."""
    request_class: Any = _stored_request_class()
    request = request_class.build(item.method, item.uri, item.request_body, item.request_headers)
    response = StoredResponse(
        {
            "status": {"code": item.status, "message": item.reason},
            "headers": item.response_headers,
            "body": _body_of(item),
            META_KEY: {
                "stream": item.stream,
                "event_times": _times_of(item),
                "response_extra": item.response_extra,
                "end_extra": item.end_extra,
            },
        }
    )
    return request, response
