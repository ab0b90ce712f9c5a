"""vcrpy's aiohttp stub, wrapped once: the session noted, and forms sent as bytes.

vcrpy patches ``ClientSession._request`` with a function it builds, for each cassette, from
``aiohttp_stubs.vcr_request``. llmcassette wraps that factory once, so that each request:

- notes its ``ClientSession`` as the client sending it (``stub_clients``), for client
  numbering: two sessions replay their own answers in any order;
- gives vcrpy the bytes aiohttp sends for a form or a payload object. vcrpy's stub keeps
  ``data=`` as the caller passed it: an ``aiohttp.FormData`` (a multipart upload), a dict of
  form fields, a ``MultipartWriter``. None of these can be saved (a ``FormData`` is not even
  iterable) nor compared with a later run's. Such a body is turned into what aiohttp would
  have sent: the payload aiohttp builds from it, written out as bytes, and the payload's
  headers (``content-type`` with the multipart boundary, which matching needs to compare the
  parts) added to the request's own. aiohttp then sends those bytes and headers: the same
  request on the wire. The payload is written once, here: a file or stream in the form is
  read to its end, and aiohttp is given the bytes, never the consumed form.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from llmcassette._vcr import compat, stub_clients

_WRAPPED = "__llmcassette_wrapped__"
# The payload headers aiohttp works out again from the bytes it is given.
_FRAMING = frozenset({"content-length", "transfer-encoding"})


def install() -> None:
    """Wrap vcrpy's aiohttp stub factory (once), when aiohttp and its stub can be imported.

    Called as a cassette's patches are built: vcrpy imports aiohttp then anyway, and looks
    ``vcr_request`` up in its stub module each time.
    """
    if not compat.installed("aiohttp"):
        return
    from vcr.stubs import aiohttp_stubs

    factory = getattr(aiohttp_stubs, "vcr_request", None)
    if factory is None or getattr(factory, _WRAPPED, False):
        return  # wrapped already, or a vcrpy that builds its stub otherwise

    @functools.wraps(factory)
    def vcr_request(cassette: Any, real_request: Any) -> Any:
        new_request = factory(cassette, real_request)

        @functools.wraps(new_request)
        async def noted_sending_bytes(session: Any, method: str, url: Any, **kwargs: Any) -> Any:
            await as_sent(session, kwargs)
            with stub_clients.sent_by(session):
                return await new_request(session, method, url, **kwargs)

        return noted_sending_bytes

    setattr(vcr_request, _WRAPPED, True)
    aiohttp_stubs.vcr_request = vcr_request


async def as_sent(session: Any, kwargs: dict[str, Any]) -> None:
    """Replace ``kwargs["data"]`` by the bytes aiohttp would send for it, and add the
    payload's headers aiohttp would add, when it is a form or a payload object."""
    if kwargs.get("json") is not None:
        return  # aiohttp refuses data= with json=; vcrpy's stub raises its error
    payload = _payload_of(kwargs.get("data"))
    if payload is None:
        return
    collected = _Collected()
    await payload.write(collected)
    kwargs["data"] = b"".join(collected.chunks)
    skipped = {str(name).lower() for name in kwargs.get("skip_auto_headers") or ()}
    skipped.update(str(name).lower() for name in getattr(session, "_skip_auto_headers", ()) or ())
    given = _header_names(kwargs.get("headers")) | _header_names(
        getattr(session, "_default_headers", None)
    )
    added = [
        (name, value)
        for name, value in payload.headers.items()
        if name.lower() not in given | skipped | _FRAMING
    ]
    if added:
        from multidict import CIMultiDict  # type: ignore[import-not-found, unused-ignore]

        headers = CIMultiDict(kwargs.get("headers") or {})
        headers.extend(added)
        kwargs["headers"] = headers


def _payload_of(data: Any) -> Any:
    """The aiohttp payload ``data`` stands for when vcrpy could not store it as it is: a
    ``FormData``, form fields (a mapping or ``(name, value)`` pairs), or a ``Payload``.
    None for any other body (bytes, text, a file, an async generator) or for fields aiohttp
    itself refuses (it raises its own error when it sends them)."""
    from aiohttp import FormData  # type: ignore[import-not-found, unused-ignore]
    from aiohttp.payload import Payload  # type: ignore[import-not-found, unused-ignore]

    if isinstance(data, Payload):
        return data
    if isinstance(data, FormData):
        return data()
    if isinstance(data, Mapping) or (
        isinstance(data, (list, tuple)) and all(isinstance(field, tuple) for field in data)
    ):
        try:
            return FormData(data)()
        except (TypeError, ValueError):
            return None
    return None


def _header_names(headers: Any) -> set[str]:
    if not headers:
        return set()
    items = headers.items() if hasattr(headers, "items") else headers
    return {str(name).lower() for name, _ in items}


class _Collected:
    """A stand-in for aiohttp's stream writer that keeps what a payload writes."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        self.chunks.append(bytes(chunk))
