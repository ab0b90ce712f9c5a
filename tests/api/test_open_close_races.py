"""A cassette opened in one thread while another thread's cassette is being opened or closed.

vcrpy's patches are the whole process's and ``mock.patch`` puts back, on exit, what it found
on entry: patches must go on and come off in one order, the order ``open_cassettes`` keeps.
So a cassette is not opened while another's patches are going on or coming off. Each test
stops one thread inside that moment (in a patch of its own cassette) and lets the other
thread try; the lock of ``open_cassettes`` is watched only to tell when that thread waits
for it, so that no test sleeps.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import pytest

import llmcassette
from llmcassette._vcr import open_cassettes
from llmcassette.testing import LocalProvider

AUTH = {"authorization": "Bearer sk-test"}
WAIT = 10  # seconds: only a broken test waits that long


def ask(provider: LocalProvider, prompt: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    httpx.post(f"{provider.url}/v1/chat/completions", json=body, headers=AUTH).raise_for_status()


def prompts(path: Path) -> list[str]:
    """The user prompts of the requests a cassette stored."""
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [
        r["body"]["json"]["messages"][-1]["content"] for r in records if r.get("type") == "request"
    ]


def nothing_patched(provider: LocalProvider) -> None:
    """httpx is back to the network once every cassette closed."""
    assert not hasattr(httpx.HTTPTransport.handle_request, "cassette")
    before = len(provider.requests)
    ask(provider, "after")
    assert len(provider.requests) == before + 1


class WatchedLock:
    """``open_cassettes``'s lock, setting ``waited`` when a thread has to wait for it."""

    def __init__(self, waited: threading.Event) -> None:
        self.lock = threading.RLock()
        self.waited = waited

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self.lock.acquire(blocking=False):
            return True
        self.waited.set()
        return self.lock.acquire(blocking, timeout)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> WatchedLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class Thread(threading.Thread):
    """A thread that keeps what it raised, for the test to raise it."""

    def __init__(self, target: Callable[[], None]) -> None:
        super().__init__(target=self._keep, args=(target,))
        self.error: BaseException | None = None

    def _keep(self, target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as error:  # raised by finish()
            self.error = error

    def finish(self) -> None:
        self.join(WAIT)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error


@pytest.fixture
def lock_waited(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    waited = threading.Event()
    monkeypatch.setattr(open_cassettes, "_LOCK", WatchedLock(waited))
    return waited


class PausedRestore:
    """A patch target whose attribute, put back when its cassette's patches come off,
    stops there until ``go``."""

    def __init__(self, go: threading.Event) -> None:
        object.__setattr__(self, "restoring", threading.Event())
        object.__setattr__(self, "go", go)
        object.__setattr__(self, "sets", 0)
        object.__setattr__(self, "value", 1)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, "sets", self.sets + 1)
        if self.sets == 2:  # the first set patches, the second puts the value back
            self.restoring.set()
            assert self.go.wait(WAIT)
        object.__setattr__(self, name, value)


def test_a_cassette_opened_while_another_one_closes_waits_for_its_patches_to_come_off(
    provider: LocalProvider, tmp_path: Path, lock_waited: threading.Event
) -> None:
    # Opened in that moment, B's patches went on top of A's, A's exit then put back what
    # it had found (no patch: B's call went out unrecorded) and B's exit put A's patches
    # back for good.
    target = PausedRestore(go=lock_waited)
    a_closed = threading.Event()

    def first() -> None:
        try:
            with llmcassette.use_cassette(
                tmp_path / "a.jsonl", custom_patches=((target, "value", 2),)
            ):
                ask(provider, "a")
        finally:
            a_closed.set()

    def second() -> None:
        with llmcassette.use_cassette(tmp_path / "b.jsonl"):
            lock_waited.set()  # (without the lock's guard, B got in without waiting)
            assert a_closed.wait(WAIT)
            ask(provider, "b")

    closing = Thread(first)
    closing.start()
    assert target.restoring.wait(WAIT)
    opening = Thread(second)
    opening.start()
    closing.finish()
    opening.finish()
    assert prompts(tmp_path / "a.jsonl") == ["a"]
    assert prompts(tmp_path / "b.jsonl") == ["b"]
    nothing_patched(provider)


class PausedTriple(tuple[Any, ...]):
    """A ``custom_patches`` triple that stops the first reading of its replacement (while
    llmcassette prepares the cassette's patches, before any goes on) until ``go``."""

    read: threading.Event
    go: threading.Event

    def __getitem__(self, index: Any) -> Any:
        if index == 2 and not self.read.is_set():
            self.read.set()
            assert self.go.wait(WAIT)
        return super().__getitem__(index)


def test_nested_cassettes_opened_at_once_in_two_threads_patch_in_the_order_they_opened(
    provider: LocalProvider, tmp_path: Path, lock_waited: threading.Event
) -> None:
    # Two sub-agents in threads that carry the outer block's context (asyncio.to_thread, a
    # pool with contextvars.copy_context().run). A was counted open before B, but B's
    # patches went on first: B's exit took A's off, A's exit put B's back, and the outer
    # block's next call went to B, closed.
    class Probe:
        value = 1

    triple = PausedTriple((Probe, "value", 2))
    triple.read = threading.Event()
    triple.go = lock_waited
    a_open = threading.Event()
    b_closed = threading.Event()

    def first() -> None:
        with llmcassette.use_cassette(tmp_path / "a.jsonl", custom_patches=(triple,)):
            a_open.set()
            ask(provider, "a")
            assert b_closed.wait(WAIT)

    def second() -> None:
        try:
            with llmcassette.use_cassette(tmp_path / "b.jsonl"):
                lock_waited.set()  # (without the lock's guard, B got in without waiting)
                assert a_open.wait(WAIT)
                ask(provider, "b")
        finally:
            b_closed.set()

    with llmcassette.use_cassette(tmp_path / "outer.jsonl"):
        # Copied here: the threads carry the outer block's context.
        first_context, second_context = contextvars.copy_context(), contextvars.copy_context()
        opening_first = Thread(lambda: first_context.run(first))
        opening_first.start()
        assert triple.read.wait(WAIT)
        opening_second = Thread(lambda: second_context.run(second))
        opening_second.start()
        opening_second.finish()
        opening_first.finish()
        ask(provider, "outer")
    assert prompts(tmp_path / "a.jsonl") == ["a"]
    assert prompts(tmp_path / "b.jsonl") == ["b"]
    assert prompts(tmp_path / "outer.jsonl") == ["outer"]
    nothing_patched(provider)
