"""Which client sent a request that vcrpy's own stubs intercept, for client numbering.

llmcassette's httpx stand-ins see the transport of each request: one per SDK client
(``clients``). vcrpy's stubs ask the cassette with the request alone, so the client is
noted on the way in, in a ``ContextVar`` (the stubs look the request up in the caller's
own thread or task):

- requests, urllib3 and boto3 send through a urllib3 connection pool, one per host for
  each ``requests.Session``, ``urllib3.PoolManager`` or boto3 client: the pool is the
  client. ``requests.post()`` makes a session, so a pool, for each call, as ``httpx.get()``
  makes a client. ``HTTPConnectionPool.urlopen`` is replaced while a cassette is open.
- aiohttp: the ``ClientSession``, noted by the function vcrpy patches its ``_request`` with
  (``aiohttp_stub``).

``http.client`` and ``urllib.request`` called directly have no client object: their
requests stay unnumbered, as before.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llmcassette._vcr import clients, compat
from llmcassette._vcr.clients import LiveClient

# The pool or session sending the request this thread or task is making, if any.
_SENDER: ContextVar[object | None] = ContextVar("llmcassette_stub_sender", default=None)


def live_client(cassette: Any) -> LiveClient | None:
    """The numbered live client of ``cassette`` sending the current request through vcrpy's
    stubs, None when no client object is known."""
    sender = _SENDER.get()
    return None if sender is None else clients.live_client(cassette, sender)


@contextmanager
def sent_by(sender: object) -> Iterator[None]:
    """Note ``sender`` (a pool or session) as the client of the requests made inside."""
    token = _SENDER.set(sender)
    try:
        yield
    finally:
        _SENDER.reset(token)


def _noting_urlopen(original: Any) -> Any:
    @functools.wraps(original)
    def urlopen(pool: Any, *args: Any, **kwargs: Any) -> Any:
        with sent_by(pool):
            return original(pool, *args, **kwargs)

    urlopen.__llmcassette_client_noting__ = True  # type: ignore[attr-defined]
    return urlopen


@functools.cache
def _urlopen_patch() -> tuple[Any, str, Any] | None:
    if not compat.installed("urllib3"):
        return None
    pool = importlib.import_module("urllib3.connectionpool").HTTPConnectionPool
    return (pool, "urlopen", _noting_urlopen(pool.urlopen))


def patches() -> Iterator[tuple[Any, str, Any]]:
    """vcrpy ``custom_patches`` triples that note the urllib3 pool sending each request."""
    patch = _urlopen_patch()
    if patch is not None:
        yield patch


def is_ours(replacement: Any) -> bool:
    """Whether a ``custom_patches`` replacement is one of ``patches``."""
    return bool(getattr(replacement, "__llmcassette_client_noting__", False))
