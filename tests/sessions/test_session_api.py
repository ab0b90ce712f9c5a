"""``llmcassette.session``: the label, nesting, the decorator, and exactly where the label
reaches (every promise docs/concurrency.md makes is tested here)."""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import pytest_asyncio

import llmcassette
from llmcassette import current_session


def test_outside_any_session_there_is_no_label() -> None:
    assert current_session() is None


def test_a_session_labels_and_restores() -> None:
    with llmcassette.session("planner") as label:
        assert label == current_session() == "planner"
    assert current_session() is None


def test_sessions_nest_as_parent_slash_child() -> None:
    with llmcassette.session("planner"), llmcassette.session("researcher") as label:
        assert label == current_session() == "planner/researcher"
    assert current_session() is None


def test_one_session_object_may_be_entered_again_inside_itself() -> None:
    again = llmcassette.session("loop")
    with again, again:
        assert current_session() == "loop/loop"
    assert current_session() is None


def test_the_label_is_restored_when_the_body_raises() -> None:
    with pytest.raises(KeyError), llmcassette.session("a"):
        raise KeyError("x")
    assert current_session() is None


@pytest.mark.parametrize("name", ["", "a/b", None, 3])
def test_a_bad_name_is_a_config_error(name: object) -> None:
    with pytest.raises(llmcassette.ConfigError, match="session name"):
        llmcassette.session(name)  # type: ignore[arg-type]


def test_the_decorator_labels_a_sync_function() -> None:
    @llmcassette.session("worker")
    def work(suffix: str) -> str:
        return f"{current_session()}{suffix}"

    assert work("!") == "worker!"
    assert work.__name__ == "work"
    with llmcassette.session("boss"):
        assert work("") == "boss/worker"
    assert current_session() is None


async def test_the_decorator_labels_an_async_function_and_calls_may_overlap() -> None:
    @llmcassette.session("agent")
    async def work(delay: float) -> str | None:
        await asyncio.sleep(delay)
        return current_session()

    with llmcassette.session("fan-out"):
        assert await asyncio.gather(work(0.01), work(0)) == ["fan-out/agent"] * 2
    assert await work(0) == "agent"
    assert current_session() is None


def test_the_decorator_labels_each_step_of_a_generator_only() -> None:
    # A generator runs in its caller's context: the label holds while it runs, not while
    # the caller handles an item, and what is sent or thrown in reaches it.
    @llmcassette.session("streamer")
    def stream(count: int) -> Iterator[str | None]:
        for _ in range(count):
            try:
                sent = yield current_session()
            except ValueError:
                yield "caught"
                continue
            if sent is not None:
                yield f"got {sent}"
        return

    seen = []
    for label in stream(2):
        seen.append((label, current_session()))
    assert seen == [("streamer", None), ("streamer", None)]
    generator = stream(3)
    assert next(generator) == "streamer"
    assert generator.throw(ValueError("in")) == "caught"
    assert next(generator) == "streamer"
    assert generator.send("x") == "got x"
    generator.close()
    with llmcassette.session("boss"):
        assert list(stream(1)) == ["boss/streamer"]
    assert stream.__name__ == "stream"


async def test_the_decorator_labels_each_step_of_an_async_generator_only() -> None:
    @llmcassette.session("agent")
    async def answers(count: int) -> AsyncIterator[str | None]:
        for _ in range(count):
            await asyncio.sleep(0)
            sent = yield current_session()
            if sent is not None:
                yield f"got {sent}"

    seen = [(label, current_session()) async for label in answers(2)]
    assert seen == [("agent", None), ("agent", None)]
    generator = answers(2)
    assert await generator.__anext__() == "agent"
    assert await generator.asend("x") == "got x"
    await generator.aclose()

    async def collect() -> list[str | None]:
        return [label async for label in answers(1)]

    with llmcassette.session("fan-out"):
        both = await asyncio.gather(collect(), collect())
    assert both == [["fan-out/agent"], ["fan-out/agent"]]
    assert current_session() is None


async def test_asyncio_tasks_created_inside_carry_the_label() -> None:
    with llmcassette.session("a"):
        task = asyncio.create_task(asyncio.sleep(0, result=None))
        labelled = asyncio.ensure_future(_label_later())
    await task
    assert await labelled == "a"


async def _label_later() -> str | None:
    await asyncio.sleep(0)
    return current_session()


async def test_asyncio_to_thread_carries_the_label() -> None:
    with llmcassette.session("a"):
        assert await asyncio.to_thread(current_session) == "a"


def test_a_thread_run_in_a_copied_context_carries_the_label() -> None:
    seen: list[str | None] = []
    with llmcassette.session("a"):
        context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(lambda: seen.append(current_session()),))
    thread.start()
    thread.join()
    assert seen == ["a"]


def test_an_executor_call_with_a_copied_context_carries_the_label() -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = []
        for name in ("a", "b"):
            with llmcassette.session(name):
                futures.append(pool.submit(contextvars.copy_context().run, current_session))
        assert [future.result() for future in futures] == ["a", "b"]


INHERITING_THREADS = pytest.mark.skipif(
    bool(getattr(sys.flags, "thread_inherit_context", False)),
    reason="threads inherit the context here (free-threaded Python 3.14)",
)


@INHERITING_THREADS
def test_a_plain_thread_or_executor_call_does_not_carry_the_label() -> None:
    seen: list[str | None] = []
    with llmcassette.session("a"), ThreadPoolExecutor(max_workers=1) as pool:
        thread = threading.Thread(target=lambda: seen.append(current_session()))
        thread.start()
        thread.join()
        seen.append(pool.submit(current_session).result())
    assert seen == [None, None]


@INHERITING_THREADS
async def test_run_in_executor_does_not_carry_the_label() -> None:
    with llmcassette.session("a"):
        assert await asyncio.get_running_loop().run_in_executor(None, current_session) is None


@pytest.fixture
def in_session() -> Iterator[str]:
    with llmcassette.session("from-fixture") as label:
        yield label


def test_a_fixture_can_open_the_session_of_a_sync_test(in_session: str) -> None:
    assert current_session() == in_session == "from-fixture"


async def test_a_sync_fixture_can_open_the_session_of_an_async_test(in_session: str) -> None:
    assert current_session() == "from-fixture"
    assert await asyncio.create_task(_label_later()) == "from-fixture"


@pytest_asyncio.fixture
async def in_async_session() -> AsyncIterator[None]:
    with llmcassette.session("from-async-fixture"):
        yield


async def test_an_async_fixture_can_open_the_session_of_an_async_test(
    in_async_session: None,
) -> None:
    assert current_session() == "from-async-fixture"
