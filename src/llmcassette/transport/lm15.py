"""lm15's own HTTP transport, sent through httpx while a cassette is in use.

lm15 (DSPy's default engine since 3.4, vendored as ``dspy._vendor.lm15``, and a package of its
own) speaks HTTP/1.1 over ``socket`` itself: no client vcrpy or llmcassette patches ever sees
its requests, so a cassette neither recorded nor answered them. Under a cassette,
``StdlibTransport.stream`` and ``StdlibAsyncTransport.stream`` are replaced by the functions
here, which send the same request through httpx: llmcassette's httpx stand-ins then record it
(streams event by event, redacted) and replay it, as for any SDK on httpx.

lm15's transport interface is small and public (``lm15.transports``: ``TransportRequest``
in, a ``TransportResponse`` of body chunks out). The transport's own settings (TLS, proxy,
timeouts, user agent) are private attributes, read where present, httpx's defaults
otherwise. Only modules already imported are patched, so importing llmcassette never
imports DSPy: a test module's ``import dspy`` comes before its cassette starts.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

#: Where lm15's transports live: DSPy's vendored copy, and the lm15 package.
TRANSPORT_MODULES = ("dspy._vendor.lm15.transports", "lm15.transports")


def patches() -> Iterator[tuple[type, str, Any]]:
    """vcrpy ``custom_patches`` triples for each lm15 copy imported so far."""
    for name in TRANSPORT_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        sync_transport = getattr(module, "StdlibTransport", None)
        async_transport = getattr(module, "StdlibAsyncTransport", None)
        if sync_transport is not None and hasattr(module, "TransportResponse"):
            yield sync_transport, "stream", _sync_stream(module)
        if async_transport is not None and hasattr(module, "AsyncTransportResponse"):
            yield async_transport, "stream", _async_stream(module)


def is_ours(replacement: object) -> bool:
    """Whether a ``custom_patches`` replacement is one of this module's."""
    return getattr(replacement, "_llmcassette_lm15", False) is True


def _httpx() -> ModuleType:
    # httpx is what DSPy installs (through litellm); httpx2 where it is the one installed.
    for name in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError):
            return importlib.import_module(name)
    raise ImportError("lm15 requests are recorded through httpx, which is not installed")


def _client_options(transport: Any) -> dict[str, Any]:
    """The transport's own TLS, proxy and environment settings, for the httpx client."""
    return {
        "verify": getattr(transport, "_ca_bundle", None) or getattr(transport, "_verify", True),
        "proxy": getattr(transport, "_proxy", None),
        "trust_env": getattr(transport, "_trust_env", True),
    }


def _timeout(httpx: ModuleType, transport: Any, request: Any) -> Any:
    def pick(name: str) -> float | None:
        value = getattr(request, name, None) or getattr(transport, f"_{name}", None)
        return float(value) if value else None

    return httpx.Timeout(
        None,
        connect=pick("connect_timeout"),
        read=pick("read_timeout"),
        write=pick("write_timeout"),
    )


def _outgoing(httpx: ModuleType, transport: Any, request: Any) -> dict[str, Any]:
    headers = list(request.headers)
    names = {name.lower() for name, _ in headers}
    # What lm15 adds on the wire: no compression, its user agent.
    if "accept-encoding" not in names:
        headers.append(("Accept-Encoding", "identity"))
    if "user-agent" not in names:
        headers.append(("User-Agent", getattr(transport, "_user_agent", "lm15/stdlib")))
    return {
        "method": request.method,
        "url": request.url,
        "headers": headers,
        "content": request.body or None,
        "timeout": _timeout(httpx, transport, request),
    }


def _response_head(response: Any) -> dict[str, Any]:
    """What lm15's response objects take of an httpx response, but its body."""
    # httpx hands over the body decoded; its encoding and length no longer describe it.
    decoded = "content-encoding" in response.headers
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if not (decoded and name.lower() in ("content-encoding", "content-length"))
    ]
    return {
        "status": response.status_code,
        "reason": response.reason_phrase,
        "headers": headers,
        "http_version": response.http_version,
    }


def _lm15_error(module: ModuleType, httpx: ModuleType, error: Exception) -> Exception:
    """The lm15 transport error a client expects for an httpx one."""
    kinds = (
        (httpx.ConnectTimeout, "ConnectTimeout"),
        (httpx.ReadTimeout, "ReadTimeout"),
        (httpx.WriteTimeout, "WriteTimeout"),
        (httpx.ConnectError, "ConnectError"),
        (httpx.ReadError, "ReadError"),
        (httpx.WriteError, "WriteError"),
        (httpx.RemoteProtocolError, "ProtocolError"),
    )
    kind: type[Exception] = module.TransportError
    for httpx_kind, name in kinds:
        if isinstance(error, httpx_kind):
            kind = getattr(module, name, kind)
            break
    return kind(str(error))


def _sync_stream(module: ModuleType) -> Any:
    def stream(transport: Any, request: Any) -> Any:
        """lm15's ``StdlibTransport.stream``, through httpx (recorded by the cassette)."""
        httpx = _httpx()
        client = httpx.Client(**_client_options(transport))
        try:
            response = client.send(
                client.build_request(**_outgoing(httpx, transport, request)), stream=True
            )
        except httpx.TransportError as error:
            client.close()
            raise _lm15_error(module, httpx, error) from error
        except BaseException:
            client.close()
            raise

        def chunks() -> Iterator[bytes]:
            try:
                yield from response.iter_bytes()
            except httpx.TransportError as error:
                raise _lm15_error(module, httpx, error) from error

        def release(body_consumed: bool) -> None:
            response.close()
            client.close()

        return module.TransportResponse(
            **_response_head(response), chunks=chunks(), release=release
        )

    stream._llmcassette_lm15 = True  # type: ignore[attr-defined]
    return stream


def _async_stream(module: ModuleType) -> Any:
    @contextlib.asynccontextmanager
    async def stream(transport: Any, request: Any) -> AsyncIterator[Any]:
        """lm15's ``StdlibAsyncTransport.stream``, through httpx (recorded by the cassette)."""
        httpx = _httpx()
        async with httpx.AsyncClient(**_client_options(transport)) as client:
            outgoing = client.build_request(**_outgoing(httpx, transport, request))
            try:
                response = await client.send(outgoing, stream=True)
            except httpx.TransportError as error:
                raise _lm15_error(module, httpx, error) from error

            async def chunks() -> AsyncIterator[bytes]:
                try:
                    async for chunk in response.aiter_bytes():
                        yield chunk
                except httpx.TransportError as error:
                    raise _lm15_error(module, httpx, error) from error

            async def release(body_consumed: bool) -> None:
                await response.aclose()

            try:
                yield module.AsyncTransportResponse(
                    **_response_head(response), chunks=chunks(), release=release
                )
            finally:
                await response.aclose()

    stream._llmcassette_lm15 = True  # type: ignore[attr-defined]
    return stream
