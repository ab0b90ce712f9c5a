"""``use_cassette`` checks at exit what the pytest plugin checks after a test: in a replay
mode every recorded interaction was played (``allow_unused=True`` allows fewer)."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import FrameType
from typing import Any

from vcr.cassette import Cassette, CassetteContextDecorator

from llmcassette import _warning_site
from llmcassette._vcr.drift import unplayed_drift
from llmcassette._vcr.fault_plan import check_unused, plan_of
from llmcassette._vcr.stubs import REFUSED
from llmcassette.errors import UnusedInteractionsError
from llmcassette.sessions import NO_SESSION
from llmcassette.transport.recorded import session_of


class _CheckedCassetteContext(CassetteContextDecorator):  # type: ignore[misc]
    """vcrpy's context manager and decorator, raising ``UnusedInteractionsError`` at a
    clean exit that left recorded interactions unplayed."""

    # Read by this class, not passed on to Cassette.load (which would reject it).
    _non_cassette_arguments = (*CassetteContextDecorator._non_cassette_arguments, "allow_unused")
    _args_getter: Callable[[], dict[str, Any]]  # vcrpy's merged options (set by vcrpy)
    _llmcassette_getter: Callable[[], dict[str, Any]]

    def __enter__(self) -> Any:
        # vcrpy merges the VCR's config at the enter and again at the exit; the block uses
        # the one it entered with (merging builds vcrpy's hooks again, for nothing).
        getter = self._args_getter
        args = getter()
        self._args_getter = lambda: args
        self._llmcassette_getter = getter
        self._llmcassette_pointing = _pointing_at_the_caller(sys._getframe(1))
        try:
            self._llmcassette_cassette = super().__enter__()
        except BaseException:
            self._args_getter = getter
            self._llmcassette_pointing.__exit__(None, None, None)
            raise
        return self._llmcassette_cassette

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._exit(*exc_info)  # the warnings of the save point at the caller too
        finally:
            self._llmcassette_pointing.__exit__(None, None, None)

    def _exit(self, *exc_info: Any) -> None:
        cassette = self._llmcassette_cassette
        self._llmcassette_cassette = None
        allow_unused = self._args_getter().get("allow_unused", False)
        try:
            super().__exit__(*exc_info)
        finally:
            self._args_getter = self._llmcassette_getter  # a later enter merges afresh
        if any(exc_info) or allow_unused:
            return  # the block's own error says more than what it left unplayed
        if cassette is None or cassette.__dict__.get(REFUSED):
            return  # so did the mismatch, even when the block caught it (pytest.raises)
        error = unused_error(cassette)
        if error is not None:
            raise error.with_hint(_hint(cassette))


def _pointing_at_the_caller(frame: FrameType) -> AbstractContextManager[None]:
    """Entered now and left at the block's exit: llmcassette's warnings name the line of
    the code that opened the cassette (a request's call in the block, or the ``with``
    statement), not vcrpy's or llmcassette's. Under pytest the plugin's test locator
    stays."""
    user = _warning_site.user_frame(frame)
    if _warning_site.active() or user is None:
        return nullcontext()
    pointing = _warning_site.pointing_at(_warning_site.at_caller(user))
    pointing.__enter__()
    return pointing


def _hint(cassette: Any) -> str:
    """The hint for unplayed interactions: with ``llmcassette run``'s options under it."""
    if getattr(getattr(cassette, "_persister", None), "context", None) == "run":
        return UnusedInteractionsError.RUN_HINT
    return UnusedInteractionsError.USE_CASSETTE_HINT


def checked_use_cassette(
    my_vcr: Any,
    path: str | os.PathLike[str] | Any,
    **options: Any,
) -> CassetteContextDecorator:
    """``my_vcr.use_cassette(path, **options)`` that fails at exit on unplayed interactions
    (``allow_unused=True`` among the options allows them)."""
    allow_unused = bool(options.pop("allow_unused", False))
    if path is not None and not isinstance(path, (str, os.PathLike)):
        function = path  # a bare decorator: the cassette is named after the function
        return _CheckedCassetteContext(Cassette, _getter(my_vcr, allow_unused, options))(function)
    return _CheckedCassetteContext(
        Cassette, _getter(my_vcr, allow_unused, {**options, "path": path})
    )


def _getter(my_vcr: Any, allow_unused: bool, options: dict[str, Any]) -> Any:
    # vcrpy's merged config keeps only the keys it knows: allow_unused is added after it.
    def merged() -> dict[str, Any]:
        return {**my_vcr.get_merged_config(**options), "allow_unused": allow_unused}

    return merged


def unused_error(cassette: Any, drift: str | None = None) -> UnusedInteractionsError | None:
    """``check_unused``'s error, without what vcrpy would have left unplayed too
    (``unplayed_drift``, under the ``drift`` setting, default the cassette's), with the
    counts per session when the cassette has sessions. The pytest plugin and
    ``use_cassette`` apply this one rule."""
    error = check_unused(cassette)
    if error is not None and plan_of(cassette) is None:
        error = unplayed_drift(cassette, error, drift)
    if error is not None and error.unused and not error.unused_faults:
        error = _by_session(cassette, error)
    refusal = cassette.__dict__.get(REFUSED)
    if error is not None and refusal is not None:  # the code under test caught a mismatch
        error = error.after_refusal(str(refusal).splitlines()[0])
    return error


def _by_session(cassette: Any, error: UnusedInteractionsError) -> UnusedInteractionsError:
    """``error`` with the counts per session, when the cassette has sessions."""
    own = cassette.data[: error.total]
    labels = [session_of(response) for _, response in own]
    if not any(labels):
        return error
    totals = Counter(label or NO_SESSION for label in labels)
    unplayed = Counter(labels[position - 1] or NO_SESSION for position, _, _ in error.unused)
    sessions = [(label, unplayed[label], total) for label, total in totals.items()]
    return UnusedInteractionsError(
        error.path, error.unused, error.total, described=error.described, sessions=sessions
    )
