"""Where llmcassette's warnings point: at the user's code when a caller says where it is.

``warnings.warn``'s ``stacklevel`` counts frames up from the call, and llmcassette warns
under code the user does not write: an SDK's HTTP client, vcrpy's cassette exit,
pytest-recording's ``vcr`` fixture. No one stacklevel reaches the user's code on every
path, so pytest's warnings summary named a line of pytest-recording, vcrpy or llmcassette.
The pytest plugin gives, for the time a test runs, a ``Locator``: the code a warning
should point at (the test's line that made the call, else the test itself). Outside
pytest, a ``use_cassette`` block gives one for the code that opened it (``at_caller``),
and ``llmcassette run`` one for the program it runs (``in_main_module``).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any


@dataclass(frozen=True)
class Location:
    """Where a warning points, as ``warnings.warn_explicit`` takes it."""

    filename: str
    lineno: int
    module: str | None = None
    # The module's __warningregistry__, which the "default" and "once" actions remember
    # a warning in, as they do for one that warnings.warn issues.
    registry: dict[Any, Any] | None = field(default=None, compare=False)


#: Given the frame that issues a warning, where the warning should point (None: where
#: ``stacklevel`` says).
Locator = Callable[[FrameType], "Location | None"]

# A plain global, not a context variable: a warning issued in a thread the test started
# points at the test too (threads do not inherit a context).
_locator: Locator | None = None


@contextmanager
def pointing_at(locator: Locator) -> Iterator[None]:
    """Make llmcassette's warnings point where ``locator`` says while the block runs."""
    global _locator
    previous = _locator
    _locator = locator
    try:
        yield
    finally:
        _locator = previous


def warn(warning: Warning, stacklevel: int = 1) -> None:
    """``warnings.warn(warning, stacklevel=stacklevel)`` for the caller, pointing where the
    current ``Locator`` says, if any. The filters apply either way (``-W error`` raises
    ``warning`` itself)."""
    locator = _locator
    location = locator(sys._getframe(1)) if locator is not None else None
    if location is None:
        warnings.warn(warning, stacklevel=stacklevel + 1)
        return
    warnings.warn_explicit(
        warning,
        type(warning),
        location.filename,
        location.lineno,
        module=location.module,
        registry=location.registry,
    )


def frame_location(frame: FrameType) -> Location:
    """Where a warning issued in ``frame``'s current line points (as ``warnings.warn``)."""
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    return Location(
        frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__"), registry
    )


def active() -> bool:
    """Whether a ``Locator`` is in place (a pytest test, a ``use_cassette`` block)."""
    return _locator is not None


# Code of these packages is never the line a warning names: the user's code calls into them.
_LIBRARIES = ("llmcassette", "vcr", "contextlib")


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The first frame, from ``frame`` outwards, of code that is not llmcassette's or
    vcrpy's (or contextlib's, under a decorator): the code that opened the cassette."""
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if not any(name == package or name.startswith(package + ".") for package in _LIBRARIES):
            return frame
        frame = frame.f_back
    return None


def at_caller(frame: FrameType) -> Locator:
    """A ``Locator`` for a ``use_cassette`` block opened in ``frame``: a warning issued
    under that frame (inside a request, at the block's exit) names its current line, the
    call or the ``with`` statement; one issued elsewhere (another thread) names the line
    ``frame`` is on now, the ``with`` statement."""
    code = frame.f_code
    opened = frame_location(frame)

    def locate(issuing: FrameType) -> Location | None:
        caller: FrameType | None = issuing
        while caller is not None:
            if caller.f_code is code:
                return frame_location(caller)
            caller = caller.f_back
        return opened

    return locate


def in_main_module(issuing: FrameType) -> Location | None:
    """A ``Locator`` for a program that ``llmcassette run`` runs: the line of its main
    module (``__main__``) that the warning was issued under, else (at the program's exit,
    where none runs) the main module's first line."""
    caller: FrameType | None = issuing
    while caller is not None:
        if caller.f_globals.get("__name__") == "__main__":
            return frame_location(caller)
        caller = caller.f_back
    main = sys.modules.get("__main__")
    # Python deletes a script's __file__ once it has run; its loader keeps the path.
    filename = getattr(main, "__file__", None) or getattr(
        getattr(main, "__loader__", None), "path", None
    )
    if not isinstance(filename, str):
        return None
    registry = vars(main).setdefault("__warningregistry__", {})
    return Location(filename, 1, "__main__", registry)
