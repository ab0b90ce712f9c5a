"""What ``llmcassette run`` starts inside the program it runs, from the start-up hook.

``activate()`` reads ``LLMCASSETTE_CASSETTE`` and ``LLMCASSETTE_MODE`` (``all`` to record
afresh, ``once``, ``new_episodes``, ``none`` to replay only) and enters
``llmcassette.use_cassette`` for the whole life of the process, so recording, redaction,
matching, mismatch reports and the check that every recorded interaction was played are
those of ``use_cassette``. At exit the cassette is closed (saved) and, when
``LLMCASSETTE_RUN_SUMMARY`` names a file, what happened is written to it as JSON for the
``run`` command to report. The variables are removed from the environment once read, so
processes the program starts do not open the same cassette again.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import traceback
from types import TracebackType
from typing import Any, NoReturn

CASSETTE_ENV = "LLMCASSETTE_CASSETTE"
MODE_ENV = "LLMCASSETTE_MODE"
SUMMARY_ENV = "LLMCASSETTE_RUN_SUMMARY"
MODES = ("all", "once", "new_episodes", "none")


# What activate() keeps for the process's lifetime.
_KEPT: list[object] = []


def activate() -> None:
    """Enter the cassette the environment names, if it names one; close it at exit."""
    path = os.environ.pop(CASSETTE_ENV, None)
    mode = os.environ.pop(MODE_ENV, None) or "once"
    summary_file = os.environ.pop(SUMMARY_ENV, None)
    if not path:
        return
    if mode not in MODES:
        _stop(f"llmcassette: {MODE_ENV}={mode!r} is not a record mode; use one of {MODES}")
    from typing import cast

    import llmcassette
    from llmcassette import _warning_site
    from llmcassette._vcr import mismatch
    from llmcassette._vcr.install import RecordModeName, use_cassette_for_run
    from llmcassette._vcr.persister import never_recorded
    from llmcassette.errors import located, shown_path

    # llmcassette's warnings name the program's line, for as long as the program runs (its
    # exit included): not the line of llmcassette that enters the cassette before it starts.
    pointing = _warning_site.pointing_at(_warning_site.in_main_module)
    pointing.__enter__()
    _KEPT.append(pointing)  # left when collected: kept to the end of the process
    # use_cassette, with a mismatch's hints naming run's options (--record, --mode).
    try:
        context = use_cassette_for_run(path, cast("RecordModeName", mode))
        cassette = context.__enter__()
    except Exception as failure:  # a damaged file, a path that is no file, ...
        # Going on without the cassette would send the program's requests to the network,
        # even under --replay: the program is stopped before its first line instead.
        if isinstance(failure, llmcassette.LlmCassetteError):
            _refuse(summary_file, path, mode, str(failure))  # it names the file and line
        _refuse(
            summary_file,
            path,
            mode,
            f"llmcassette: {shown_path(path)}: cannot open the cassette: {failure}",
        )
    if mode == "none" and never_recorded(cassette):
        # Nothing to replay: the program would only fail at its first request, after doing
        # whatever comes before it.
        problem = (
            "the cassette does not exist, and record mode none (--replay) only replays "
            "recorded interactions"
        )
        hint = f"record it first: llmcassette run --record {shown_path(path)} -- COMMAND"
        _refuse(summary_file, path, mode, located(shown_path(path), problem, hint))
    if mode != "none":
        # The save at exit takes the cassette's lock. filelock is imported now: some of its
        # versions import concurrent.futures.thread, which registers an exit hook of its
        # own, and that fails once the interpreter is shutting down (Python 3.10).
        import filelock  # noqa: F401
    loaded = len(cassette.data)
    if sys.excepthook is sys.__excepthook__:  # the program's own hook, if any, is its own
        sys.excepthook = functools.partial(_print_redacted, cassette)

    def finish() -> None:
        error: str | None = None
        try:
            # The program is the block: one that ended by an uncaught exception is not also
            # told about the interactions it left unplayed, as a use_cassette block is not.
            context.__exit__(*_uncaught())
        except llmcassette.LlmCassetteError as failure:
            error = str(failure)
            print(failure, file=sys.stderr)
        misses = [e for e in mismatch.RAISED if isinstance(e, mismatch.CassetteMismatch)]
        summary: dict[str, Any] = {
            "cassette": path,
            "mode": mode,
            "recorded": len(cassette.data) - loaded,
            "replayed": cassette.play_count,
            "misses": len(misses),
            "error": error,
        }
        if summary_file:
            with open(summary_file, "w", encoding="utf-8") as written:
                json.dump(summary, written)

    atexit.register(finish)


def _uncaught() -> tuple[Any, Any, Any]:
    """The exception that ended the program, as ``__exit__`` takes it; ``(None,)*3`` if none.

    Python keeps it in ``sys.last_exc`` (``last_value`` before 3.12) before it calls
    ``sys.excepthook`` (whichever hook the program set), and runs the ``atexit`` functions
    after; an exit by ``sys.exit`` is not kept there."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if not isinstance(error, BaseException):
        return None, None, None
    return type(error), error, error.__traceback__


def _refuse(summary_file: str | None, path: str, mode: str, message: str) -> NoReturn:
    """Stop the program before its first line because its cassette cannot be used, telling
    the ``run`` command so (it then says that nothing was recorded, replayed or sent)."""
    if summary_file:
        with open(summary_file, "w", encoding="utf-8") as written:
            json.dump({"cassette": path, "mode": mode, "opened": False}, written)
    _stop(message)


def _stop(message: str) -> NoReturn:
    """End the process from the start-up hook, before the program's first line.
    ``sys.exit`` there is a fatal error of Python's start-up (``init_import_site``), with a
    traceback that hides the message."""
    print(message, file=sys.stderr)
    sys.stderr.flush()
    os._exit(2)


def _print_redacted(
    cassette: Any, kind: type[BaseException], error: BaseException, trace: TracebackType | None
) -> None:
    """``sys.excepthook`` while a cassette is open: the program's uncaught error, printed as
    Python would, redacted as the cassette is (a traceback shows source lines and the live
    request: a key in the code, a URL with its query key)."""
    from llmcassette._vcr.install import shown_redacted

    text = "".join(traceback.format_exception(kind, error, trace))
    sys.stderr.write(shown_redacted(cassette, text))
