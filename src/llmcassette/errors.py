"""The exceptions llmcassette raises: one base class, structured fields, one renderer each."""

from __future__ import annotations

import os


class LlmCassetteError(Exception):
    """Base class of every error llmcassette raises on purpose."""


class CassetteFormatError(LlmCassetteError, ValueError):
    """A cassette file cannot be read: it names the file, the line and what is wrong.

    The file is never modified when this is raised.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        line: int | None,
        problem: str,
        hint: str | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        message = f"{where}: {self.problem}"
        if self.hint:
            message += f"\n  how to fix: {self.hint}"
        return message


class CassetteVersionError(CassetteFormatError):
    """A cassette was written by a newer llmcassette than the one installed."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        found_version: int,
        supported_version: int,
        needed_package: str | None,
    ) -> None:
        self.found_version = found_version
        self.supported_version = supported_version
        self.needed_package = needed_package
        needs = f"llmcassette>={needed_package}" if needed_package else "a newer llmcassette"
        super().__init__(
            path,
            1,
            f"cassette format_version {found_version} is newer than this llmcassette "
            f"understands (up to {supported_version})",
            f"upgrade: pip install '{needs}'",
        )
