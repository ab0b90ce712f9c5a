"""Which open cassette a request belongs to, and which cassettes may be opened at all.

vcrpy patches the HTTP clients of the whole process: while cassettes are open, every
request of every task and thread reaches the patches of the one opened last, and the
patches come off in the order the cassettes close. So:

- A cassette may be opened when none is open, or when the task or thread opening it owns
  one of the open cassettes (it opened it, or the block that started it did): a cassette
  nested in the same task, in a task the outer block started, or in several such tasks at
  once. One opened while only cassettes of unrelated tasks or threads are open fails
  (``OverlappingCassettesError``) before it patches anything: nothing tells whose requests
  are whose.
- A request goes to the innermost open cassette of the task or thread that sent it
  (``receiver``), whichever cassette's patches caught it: a sibling task of one that
  opened a nested cassette keeps recording into the outer one. A request from code that
  owns no open cassette (a plain ``threading.Thread``) goes to the one whose patches
  caught it, as with vcrpy.
- A cassette closed while one opened after it is still open (a nested block in a task
  that outlives the outer block) keeps its patches until every cassette opened after it
  has closed (``close``): taken off out of order, they would leave the later cassette
  unpatched (its requests unrecorded) and put the earlier cassette's patches back for
  good when the later one closes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llmcassette.errors import OverlappingCassettesError


class _Open:
    """One open cassette: ``closed`` once its block exited, ``unpatch`` while the taking
    off of its patches waits for the cassettes opened after it."""

    __slots__ = ("cassette", "closed", "path", "unpatch")

    def __init__(self, cassette: Any, path: str) -> None:
        self.cassette = cassette
        self.path = path
        self.closed = False
        self.unpatch: Callable[[], None] | None = None


# The cassettes this task or thread opened (or the block that started it), innermost last.
_OPENED_HERE: ContextVar[tuple[_Open, ...]] = ContextVar("llmcassette_opened", default=())
# Every cassette whose patches are in place, in the order they were opened.
_OPEN: list[_Open] = []
# Held while a cassette is opened, until its patches are on, and while one's patches come
# off: ``mock.patch`` puts back what it found, so patches must go on and come off in the
# order of ``_OPEN``. Reentrant: taking patches off finishes the block's ``opened``, which may take
# off those of the cassette below, which waited for it.
_LOCK = threading.RLock()


@contextmanager
def opened(cassette: Any) -> Iterator[Callable[[], None]]:
    """Hold ``cassette`` as open for the block; raise ``OverlappingCassettesError`` first
    if cassettes are open and none of them is this task's or thread's.

    No other cassette is opened, and none's patches come off, until the block calls the
    function it is given, once ``cassette``'s patches are on (or the block ends): patches
    must go on in the order the cassettes count as opened."""
    path = os.fspath(getattr(cassette, "_path", "") or "")
    entry = _Open(cassette, path)
    outer = _OPENED_HERE.get()
    _LOCK.acquire()
    try:
        live = [other for other in _OPEN if not other.closed]
        if live and not any(other in outer for other in live):
            raise OverlappingCassettesError(path, live[-1].path)
        _OPEN.append(entry)
    except BaseException:
        _LOCK.release()
        raise
    held = [True]

    def patched() -> None:
        if held:
            held.clear()
            _LOCK.release()

    _OPENED_HERE.set((*outer, entry))
    try:
        yield patched
    finally:
        patched()
        # Only in the context that opened it: a cassette the garbage collector closes may
        # be closed from any thread, whose own cassettes must stay as they are.
        if _OPENED_HERE.get()[-1:] == (entry,):
            _OPENED_HERE.set(outer)
        with _LOCK:
            entry.closed = True
            _OPEN.remove(entry)
            waiting = _OPEN[-1] if _OPEN and _OPEN[-1].closed else None
            unpatch = None if waiting is None else waiting.unpatch
            if waiting is not None and unpatch is not None:
                waiting.unpatch = None
                unpatch()  # the cassette below waited for this one: its patches come off now


def close(cassette: Any, unpatch: Callable[[], None]) -> None:
    """Take ``cassette``'s patches off with ``unpatch``, now, or once every cassette opened
    after it has closed; from now on no request is routed to it."""
    with _LOCK:
        entry = next((other for other in _OPEN if other.cassette is cassette), None)
        if entry is not None:
            entry.closed = True
            if _OPEN[-1] is not entry:
                entry.unpatch = unpatch
                return
        unpatch()


def receiver(patched: Any) -> Any:
    """The cassette a request sent from here goes to: the innermost open cassette of this
    task or thread, else ``patched``, the one whose patches caught it.

    Only a request caught by an open cassette's patches is routed: vcrpy also calls a
    cassette's lookups on its own (``Cassette.load`` appends every recorded interaction),
    and those stay with that cassette."""
    for entry in reversed(_OPENED_HERE.get()):
        if not entry.closed:
            if entry.cassette is patched:
                return patched
            if any(other.cassette is patched for other in tuple(_OPEN)):
                return entry.cassette
            return patched
    return patched
