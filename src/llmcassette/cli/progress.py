"""Progress of a command's work over many files: on stderr, and only on a terminal.

``convert``, ``redact``, ``heal`` and ``report`` wrap their loop over files in ``track``.
When stderr is not a terminal, or the command prints ``--json``, ``track`` only iterates:
the output is byte for byte what it is without progress. On a terminal it draws on stderr
a tqdm bar when tqdm is installed (``pip install 'llmcassette[progress]'``), else one plain
line rewritten in place (``llmcassette heal: 3/12 tests/cassettes/test_a.jsonl``). While it
is shown, whatever the command writes to stdout or stderr first erases it and draws it
again after a whole line, so the two never mix on the screen; what reaches stdout is
unchanged. Nothing is left on the screen once the loop ends.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import Any, Protocol, TextIO, TypeVar

T = TypeVar("T")


class _Bar(Protocol):
    def update(self, n: int = 1) -> object: ...
    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None: ...
    def clear(self) -> None: ...
    def refresh(self) -> None: ...
    def close(self) -> None: ...


def enabled(as_json: bool, stream: TextIO | None = None) -> bool:
    """Whether progress is drawn: not with ``--json``, and only when stderr is a terminal."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return not as_json and bool(isatty and isatty())


class PlainLine:
    """The progress line drawn without tqdm: ``llmcassette CMD: DONE[/TOTAL] NAME``, cut to
    the terminal's width (a line that wrapped could not be rewritten in place)."""

    #: Seconds between two drawings of the line as files go by (tqdm's default too).
    interval = 0.1

    def __init__(self, stream: TextIO, description: str, total: int | None) -> None:
        self.stream = stream
        self.description = description
        self.total = total
        self.n = 0
        self.name = ""
        self.shown = False
        self.drawn_at: float | None = None

    def text(self) -> str:
        """The line as it is drawn now."""
        count = f"{self.n}/{self.total}" if self.total is not None else f"{self.n} file(s)"
        line = f"{self.description}: {count} {self.name}".rstrip()
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            width = 0
        width = width or 80  # a terminal that says nothing of its size has 0 columns
        return line if len(line) < width else line[: max(width - 2, 1)] + "…"

    def _due(self) -> None:
        # Drawn at once the first time, then at most every ``interval``: a terminal that
        # redraws a line for each of thousands of small files would slow the command.
        if self.drawn_at is None or time.monotonic() - self.drawn_at >= self.interval:
            self.refresh()

    def update(self, n: int = 1) -> None:
        """Count ``n`` more files done."""
        self.n += n
        self._due()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Name the file being worked on."""
        self.name = s
        if refresh:
            self.refresh()
        else:
            self._due()

    def clear(self) -> None:
        """Erase the line, leaving the cursor at its start."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def refresh(self) -> None:
        """Draw the line again."""
        self.stream.write("\r\x1b[K" + self.text())
        self.stream.flush()
        self.shown = True
        self.drawn_at = time.monotonic()

    def close(self) -> None:
        """Erase the line for good."""
        self.clear()


def _bar(stream: TextIO, description: str, total: int | None) -> _Bar:
    try:  # the optional extra: llmcassette[progress]
        tqdm = importlib.import_module("tqdm")
    except ImportError:
        return PlainLine(stream, description, total)
    bar: _Bar = tqdm.tqdm(
        total=total, desc=description, unit="file", file=stream, leave=False, dynamic_ncols=True
    )
    return bar


class _Guarded:
    """A stream whose writes erase the progress line first and draw it again after a whole
    line, so a command's output and the line never share a row of the terminal."""

    def __init__(self, stream: TextIO, bar: _Bar) -> None:
        self._stream = stream
        self._bar = bar

    def write(self, text: str) -> int:
        self._bar.clear()
        written = self._stream.write(text)
        if text.endswith("\n"):
            self._stream.flush()  # on the terminal before the line is drawn under it
            self._bar.refresh()
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def path_of(item: Any) -> str:
    """The file an item of ``cli.paths.cassettes`` is about (an opened file or its error)."""
    return str(os.fspath(item.path))


def track(
    items: Iterable[T],
    command: str,
    *,
    as_json: bool,
    name: Callable[[T], str] | None = None,
    what: str = "",
) -> Iterator[T]:
    """``items``, one by one, with a progress line on a terminal (see the module docstring).

    ``name(item)`` names the file shown while it is worked on; ``what`` is said after the
    command (``"checking"``). The total is known when ``items`` is a list or other sized
    collection; otherwise the line counts the files done.
    """
    stream = sys.stderr
    if not enabled(as_json, stream):
        yield from items
        return
    total = len(items) if isinstance(items, Sized) else None
    bar = _bar(stream, f"llmcassette {command}" + (f" {what}" if what else ""), total)
    saved = sys.stdout, sys.stderr
    sys.stdout = _Guarded(sys.stdout, bar)
    sys.stderr = _Guarded(sys.stderr, bar)
    try:
        for item in items:
            bar.set_postfix_str(name(item) if name is not None else "", refresh=False)
            yield item
            bar.update(1)
    finally:
        sys.stdout, sys.stderr = saved
        bar.close()
