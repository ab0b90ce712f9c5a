"""Refuse a cassette opened while a cassette of another task or thread is open.

vcrpy patches the HTTP clients of the whole process: while cassettes are open, every
request of every task and thread goes to the one opened last, and the patches come off in
the order the cassettes close. Two ``use_cassette`` blocks that overlap in concurrent tasks
or threads (a fan-out that gives each sub-agent a cassette of its own) would record one
task's calls into the other's cassette, replay them against it, and, closed out of order,
leave the patches of a closed cassette in place for the rest of the process. So the second
one fails before it patches anything.

A cassette opened inside another one in the same task or thread (nested, or opened by a
task that the outer block started) is fine: its patches come off before the outer ones.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llmcassette.errors import OverlappingCassettesError

# The cassettes this task or thread opened (or the block that started it), innermost last.
_OPENED_HERE: ContextVar[tuple[object, ...]] = ContextVar("llmcassette_opened", default=())
# Every cassette open in the process, as (token, path), in the order they were opened.
_OPEN: list[tuple[object, str]] = []
_LOCK = threading.Lock()


@contextmanager
def opened(cassette: Any) -> Iterator[None]:
    """Hold ``cassette`` as open for the block; raise ``OverlappingCassettesError`` first
    if the cassette opened last belongs to another task or thread."""
    path = os.fspath(getattr(cassette, "_path", "") or "")
    token = object()
    entry = (token, path)
    with _LOCK:
        if _OPEN and _OPEN[-1][0] not in _OPENED_HERE.get():
            raise OverlappingCassettesError(path, _OPEN[-1][1])
        _OPEN.append(entry)
    outer = _OPENED_HERE.get()
    _OPENED_HERE.set((*outer, token))
    try:
        yield
    finally:
        with _LOCK:
            _OPEN.remove(entry)
        # Only in the context that opened it: a cassette the garbage collector closes may
        # be closed from any thread, whose own cassettes must stay as they are.
        if _OPENED_HERE.get()[-1:] == (token,):
            _OPENED_HERE.set(outer)
