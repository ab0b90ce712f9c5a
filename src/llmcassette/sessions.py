"""``llmcassette.session(name)``: label the requests of one caller (an agent, a sub-agent).

Replay answers a labelled request only from the interactions recorded with the same label,
in their recorded order, so concurrent callers that send identical requests each get their
own answers whatever the scheduling. The label lives in a ``contextvars.ContextVar``: it
reaches asyncio tasks created inside the session, ``asyncio.to_thread`` calls, and code run
with ``contextvars.copy_context().run``; a plain ``threading.Thread`` or an executor's
``submit(fn)`` does not copy it (see docs/concurrency.md).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, TypeVar, cast

from llmcassette.errors import ConfigError

_Function = TypeVar("_Function", bound=Callable[..., Any])

#: How interactions recorded outside any session are named where sessions are listed
#: (the unplayed counts of ``use_cassette``, ``llmcassette show`` and ``diff``).
NO_SESSION = "(no session)"

#: The label of the current session (``"parent/child"`` when nested), None outside any.
_LABEL: ContextVar[str | None] = ContextVar("llmcassette_session", default=None)


def current_session() -> str | None:
    """The label requests made here are stored and replayed under (None outside a session)."""
    return _LABEL.get()


class session:  # lower case: used like a function, ``with llmcassette.session("a"):``
    """Label every request made inside: ``with session("a"):``, ``@session("a")`` on a sync
    or async function or generator, or from a pytest fixture (``with session("a"): yield``).

    Inside another session the label is ``"outer/name"``. As a decorator each call enters a
    session of its own, so decorated calls may overlap; a ``with`` enters the object once.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise ConfigError(
                f"a session name must be a non-empty string without '/', not {name!r} "
                "(nested sessions are joined with '/')"
            )
        self.name = name
        self._tokens: list[Token[str | None]] = []

    def __enter__(self) -> str:
        outer = _LABEL.get()
        label = self.name if outer is None else f"{outer}/{self.name}"
        self._tokens.append(_LABEL.set(label))
        return label

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _LABEL.reset(self._tokens.pop())

    def __call__(self, function: _Function) -> _Function:
        name = self.name  # each call enters a session of its own: calls may overlap
        if inspect.isasyncgenfunction(function):
            return cast("_Function", _async_generator_in_session(function, name))
        if inspect.isgeneratorfunction(function):
            return cast("_Function", _generator_in_session(function, name))
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with session(name):
                    return await function(*args, **kwargs)

            return cast("_Function", run_async)

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with session(name):
                return function(*args, **kwargs)

        return cast("_Function", run)


# A generator runs in the context of whoever resumes it: a session entered around the whole
# of it would label the caller's requests between two items. These enter the session for
# each step of the generator only, passing on what is sent or thrown into it.


def _generator_in_session(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        generator = function(*args, **kwargs)
        step = functools.partial(generator.send, None)
        try:
            while True:
                with session(name):
                    try:
                        item = step()
                    except StopIteration as stop:
                        return stop.value
                try:
                    sent = yield item
                except GeneratorExit:
                    raise
                except BaseException as error:  # thrown in: the generator gets it
                    step = functools.partial(generator.throw, error)
                else:
                    step = functools.partial(generator.send, sent)
        finally:
            with session(name):
                generator.close()

    return run


def _async_generator_in_session(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(function)
    async def run(*args: Any, **kwargs: Any) -> Any:
        generator = function(*args, **kwargs)
        step = functools.partial(generator.asend, None)
        try:
            while True:
                with session(name):
                    try:
                        item = await step()
                    except StopAsyncIteration:
                        return
                try:
                    sent = yield item
                except GeneratorExit:
                    raise
                except BaseException as error:  # thrown in: the generator gets it
                    step = functools.partial(generator.athrow, error)
                else:
                    step = functools.partial(generator.asend, sent)
        finally:
            with session(name):
                await generator.aclose()

    return run
