"""The cassettes one pytest session has already saved while recording them from scratch.

Under ``rewrite`` (and ``all``) a save replaces the cassette with what the test recorded.
Tests that share one cassette file each save it, in turn or from different pytest-xdist
workers: the session's first save of the file replaces what an earlier session left, and
every later save in the same session adds its interactions to what the session wrote
(``Persister._merge``), so the file ends up with every test's calls.

The session's processes share what they saved through a folder under the system's
temporary directory, named by a token the pytest plugin makes once per session and hands
to its workers: one empty file per cassette saved, named by a hash of its path. The
persister notes and checks a cassette while it holds the cassette's lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

_FOLDER_PREFIX = "llmcassette-session-"


class SessionSaves:
    """The record of the cassettes a session has saved; ``token`` names the session."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.folder = Path(tempfile.gettempdir(), _FOLDER_PREFIX + token)

    def _marker(self, cassette: Path) -> Path:
        # Absolute and resolved: workers may reach one file by different relative paths.
        name = os.fspath(cassette.resolve())
        return self.folder / hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()

    def saved(self, cassette: Path) -> bool:
        """Whether a process of this session has saved ``cassette`` already."""
        return self._marker(cassette).exists()

    def note_saved(self, cassette: Path) -> None:
        """Remember that this session saved ``cassette`` (call while holding its lock)."""
        self.folder.mkdir(mode=0o700, exist_ok=True)
        self._marker(cassette).touch()

    def remove(self) -> None:
        """Forget everything (at the end of the session, by the process that made the token)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.folder)
