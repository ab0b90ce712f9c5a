"""``llmcassette migrate``: rewrite cassettes of older format versions as the current one.

Reading already upgrades an old cassette in memory (``format.migrations``); this writes the
upgraded lines back, atomically, so the file on disk is current too. A file that is current
is left byte for byte as it is; a file that cannot be read is never written.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import migrations

if TYPE_CHECKING:
    from llmcassette.cli.paths import Opened


@dataclass(frozen=True)
class Outcome:
    """What ``migrate_file`` found: the version on disk, and the new text if it changes."""

    path: str
    version: int
    text: str | None  # None when the file is already current

    @property
    def changes(self) -> bool:
        """True when the file is of an older version and would be rewritten."""
        return self.text is not None


def _version_on_disk(data: bytes) -> int:
    """The ``format_version`` the header line declares (the file was validated already)."""
    first = next(line for line in data.decode("utf-8").split("\n") if line.strip())
    version: int = json.loads(first.removeprefix("\ufeff"))["format_version"]
    return version


def migrate_file(path: Path, *, write: bool = True, opened: Opened | None = None) -> Outcome:
    """Upgrade one JSONL cassette in place; ``write=False`` only says whether it would change.

    Raises ``OSError`` when the file cannot be read, ``CassetteFormatError`` (or its
    ``CassetteVersionError``) when it is damaged or newer than this llmcassette, and
    ``SecretLeakError`` when what it would write holds a value a redaction rule matches: in
    each case nothing is written. ``opened`` is the file as ``cli.paths`` read it already.
    """
    if opened is not None and opened.cassette is not None:
        data, cassette = opened.data, opened.cassette
    else:
        data = path.read_bytes()
        cassette = cassette_file.read(data, path)
    version = _version_on_disk(data)
    name = os.fspath(path)
    if version == migrations.FORMAT_VERSION:
        return Outcome(name, version, None)
    text = cassette_file.write(cassette)
    cassette_file.read(text.encode("utf-8"), path)  # what is written must read back
    if write:
        from llmcassette._vcr.tempfiles import atomic_write
        from llmcassette.cli.opened import safe_text

        # As a recording writes it: redacted again when older rules redacted it, then the
        # fail-closed scan (``SecretLeakError``: nothing is written).
        text = safe_text(text, path, cassette=cassette)

        atomic_write(path, text.encode("utf-8"))
    return Outcome(name, version, text)
