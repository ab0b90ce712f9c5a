"""The temporary files of a cassette save: the atomic write, their names, and finding
those a killed save left.

A save writes ``.<cassette name>.llmcassette-tmp-<pid>-<random>`` beside the cassette and
renames it over the cassette. A process killed between the two leaves the temporary file
behind; once its writer ``pid`` is no longer running it is stale: the next save of that
cassette removes it and ``llmcassette check`` reports it. This module imports no vcrpy (the
command line uses it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future

MARKER = ".llmcassette-tmp-"
_NAME = re.compile(r"^\.(?P<cassette>.+)\.llmcassette-tmp-(?P<pid>\d+)-\w+$")


def prefix(path: Path) -> str:
    """The start of this process's temporary file names for ``path`` (a random tail follows)."""
    return f".{path.name}{MARKER}{os.getpid()}-"


def parse(name: str) -> tuple[str, int] | None:
    """``(cassette file name, writer pid)`` of a temporary file name, or None."""
    found = _NAME.match(name)
    if found is None:
        return None
    return found["cassette"], int(found["pid"])


def running(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (an unreaped zombie counts)."""
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else (PermissionError), or cannot tell
    return True


def stale_in(folder: Path, cassette_name: str | None = None) -> list[Path]:
    """The stale temporary files in ``folder`` (of one cassette when ``cassette_name``)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        parsed = parse(name)
        if parsed is None or (cassette_name is not None and parsed[0] != cassette_name):
            continue
        if not running(parsed[1]):
            found.append(folder / name)
    return found


def remove_stale(path: Path) -> list[Path]:
    """Remove the stale temporary files of cassette ``path``; return those removed."""
    removed = []
    for stale in stale_in(path.parent, path.name):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
            removed.append(stale)
    return removed


def atomic_write(path: Path, data: bytes, *, replace: bool = True, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half.

    The data is flushed to disk before the rename, so that after a power cut the name never
    points at a file whose data was lost (an empty cassette). The folder is not flushed
    after it: that would only make the rename itself survive a power cut, where seeing the
    old cassette is as good an outcome, and it cost a third of writing each file.

    ``replace=False``: ``FileExistsError`` when ``path`` exists, decided as the file is
    put in place (a hard link, which no other writer can come between), not before:
    ``convert`` in several processes writes ``x.yaml`` and ``x.json`` to one ``x.jsonl``.

    ``durable=False`` leaves the flush out: until the caller has flushed ``path``
    (``Flusher``), a power cut may leave it empty or cut off. ``convert`` writes a tree so:
    a flush per file made it wait for the disk each time (0.6 s of 12.9 s for the 1,289
    files of the pydantic-ai corpus in one process), flushes in the background do not.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644  # mkstemp's 0o600 would surprise people who commit cassettes
    # .<name>.llmcassette-tmp-<pid>-<random>: a killed save's leftover is recognised by
    # the next save (under the lock) and by `llmcassette check` (stale_in, below).
    fd, temp_name = tempfile.mkstemp(prefix=prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        with contextlib.suppress(OSError):
            os.chmod(temp_name, mode)
        if replace:
            os.replace(temp_name, path)
        else:
            _put_new(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


def _put_new(temp_name: str, path: Path) -> None:
    """Give the file ``temp_name`` the name ``path``, which must not exist yet
    (``FileExistsError``); ``temp_name`` is gone after it."""
    try:
        os.link(temp_name, path)  # fails when ``path`` exists, at once
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: checked, then renamed
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(temp_name, path)
        return
    os.unlink(temp_name)


def make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents (``mkdir -p``); return those this call
    found missing, outermost first: each one's name is in its parent, which ``flush``
    puts on disk too."""
    missing = []
    while not folder.is_dir() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir(exist_ok=True)
    return missing[::-1]


#: How many flushes ``Flusher`` has waiting at once: the disk's journal commits the files
#: of overlapping ones together (8 at a time: 0.18 s for 1,289 files; one by one, 0.43 s).
FLUSH_THREADS = 8


class Flusher:
    """Puts files written by ``atomic_write(..., durable=False)`` on disk: each in a
    background thread from the moment it is given (``file``), while the caller goes on
    writing others; ``wait`` then flushes the folders that name them and returns once all
    of it is on disk."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(FLUSH_THREADS, thread_name_prefix="llmcassette-flush")
        self._pending: list[Future[OSError | None]] = []
        self._folders: dict[Path, None] = {}

    def file(self, path: Path | None, folders: Iterable[Path] = ()) -> None:
        """Start flushing ``path`` (None: none); note ``folders`` for ``wait``: those that
        hold it and the parents of folders created for it."""
        if path is not None:
            self._pending.append(self._pool.submit(_flushed, path))
        self._folders.update(dict.fromkeys(folders))

    def wait(self) -> None:
        """Flush the folders noted (now: no file is added to them after this), wait for
        every flush, and raise the ``OSError`` (with its file name) of one that failed."""
        self._pending += [self._pool.submit(_flushed, folder) for folder in self._folders]
        self._folders.clear()
        self._pool.shutdown(wait=True)
        for done in self._pending:
            error = done.result()
            if error is not None:
                raise error


def _flushed(path: Path) -> OSError | None:
    """fsync ``path``, a file or a folder (opened to read: fsync needs no more); the error
    instead of raising it, so that the other flushes still run."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as error:
        return error
    try:
        os.fsync(fd)
    except OSError as error:
        return OSError(error.errno, error.strerror, os.fspath(path))
    finally:
        os.close(fd)
    return None
