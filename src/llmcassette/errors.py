"""The exceptions llmcassette raises: one base class, structured fields, one renderer each."""

from __future__ import annotations

import os


def located(where: str, problem: str, hint: str | None = None) -> str:
    """``where: problem``, and ``how to fix: hint`` indented on a second line when given."""
    message = f"{where}: {problem}"
    return f"{message}\n  how to fix: {hint}" if hint else message


class LlmCassetteError(Exception):
    """Base class of every error llmcassette raises on purpose."""


class LlmCassetteWarning(UserWarning):
    """Base class of every warning llmcassette issues."""


class ConfigError(LlmCassetteError, ValueError):
    """An option or a ``[tool.llmcassette]`` setting has a value llmcassette cannot use.

    The message names the option (and the pyproject.toml file it came from) and what it
    accepts; nothing was recorded or replayed.
    """


class IncompatibleVcrpyError(LlmCassetteError, ImportError):
    """The installed vcrpy lacks an internal llmcassette relies on, or is too old.

    ``vcrpy_version`` is the installed release, ``missing`` what it lacks (empty when it is
    only too old); raised by ``configure``/``use_cassette`` before anything is patched.
    """

    def __init__(self, vcrpy_version: str, missing: list[str], lowest: str) -> None:
        self.vcrpy_version = vcrpy_version
        self.missing = missing
        self.lowest = lowest
        if missing:
            message = (
                f"llmcassette does not work with vcrpy {vcrpy_version}: it lacks "
                f"{', '.join(missing)}\n  how to fix: install a vcrpy release llmcassette is "
                f"tested with (vcrpy {lowest} to the newest at llmcassette's release), or "
                "report the new vcrpy release as an llmcassette issue"
            )
        else:
            message = (
                f"llmcassette needs vcrpy >= {lowest}, but vcrpy {vcrpy_version} is installed"
                f"\n  how to fix: pip install 'vcrpy>={lowest}'"
            )
        super().__init__(message)


class CassetteFormatError(LlmCassetteError, ValueError):
    """A cassette file cannot be read: it names the file, the line and what is wrong.

    The file is never modified when this is raised.
    """

    def __init__(
        self, path: str | os.PathLike[str], line: int | None, problem: str, hint: str | None = None
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        self.hint = hint
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(located(where, problem, hint))


class CassetteVersionError(CassetteFormatError):
    """A cassette was written by a newer llmcassette than the one installed."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        found_version: int,
        supported_version: int,
        needed_release: str | None,
        line: int = 1,
    ) -> None:
        self.found_version = found_version
        self.supported_version = supported_version
        self.needed_release = needed_release
        upgrade = (
            f"pip install 'llmcassette>={needed_release}'"
            if needed_release
            else "pip install --upgrade llmcassette"
        )
        super().__init__(
            path,
            line,
            f"cassette format_version {found_version} is newer than this llmcassette "
            f"understands (up to {supported_version})",
            f"upgrade: {upgrade}",
        )


#: The rule of a finding in a body no rule can look inside (a content-encoding that
#: cannot be decoded): it may hold anything, so it is refused like a match.
UNSCANNABLE_BODY = "unscannable-body"


class SecretLeakError(LlmCassetteError):
    """A cassette about to be written still holds a secret; nothing was written.

    ``path``, ``line`` and ``json_path`` say where, ``rule`` which rule matched; the secret
    itself is never part of the error. ``findings`` holds every ``(line, json_path, rule)``.
    ``rule`` is ``"unscannable-body"`` for a body in a content-encoding that could not be
    decoded, so could not be checked.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        line: int | None,
        json_path: str,
        rule: str,
        findings: list[tuple[int | None, str, str]] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.json_path = json_path
        self.rule = rule
        self.findings = findings or [(line, json_path, rule)]
        where = f"{self.path}:{line}" if line is not None else self.path
        more = len(self.findings) - 1
        also = f" ({more} more finding(s))" if more > 0 else ""
        if rule == UNSCANNABLE_BODY:
            message = (
                f"{where}: refusing to write the cassette: {json_path} is in a "
                f"content-encoding llmcassette cannot decode, so no redaction rule could "
                f"look inside it{also}\n  how to fix: the file was not written; install "
                "its decoder (llmcassette[brotli], llmcassette[zstd]), have the client not "
                "ask for that encoding (accept-encoding), or set allow_unscanned_bodies = "
                "true in [tool.llmcassette.redaction] to store such bodies as they are"
            )
        else:
            message = (
                f"{where}: refusing to write the cassette: {json_path} still matches "
                f"redaction rule {rule!r}{also}\n  how to fix: the file was not written; "
                "add a redaction rule for this value (see docs/redaction.md), or report "
                "the missed secret as a bug"
            )
        super().__init__(message)


class IncompleteStreamError(LlmCassetteError):
    """A streamed response ended without its terminator, or its connection broke."""

    def __init__(self, uri: str, problem: str, path: str | None = None) -> None:
        self.uri = uri
        self.problem = problem
        self.path = path
        where = f" (cassette {path})" if path else ""
        super().__init__(
            f"{uri}: {problem}{where}. The stream was cut short: a cassette of it would "
            "replay a partial answer as if it were whole. Record it again, or set "
            "incomplete_streams='warn' (or 'ignore') to keep such streams on purpose."
        )


class IncompleteStreamWarning(LlmCassetteWarning):
    """The warning form of ``IncompleteStreamError`` (``incomplete_streams="warn"``)."""


class UnusedInteractionsError(LlmCassetteError):
    """A replayed test did not play every interaction its cassette (or overrides) scripted.

    ``unused`` lists them as ``(position, method, uri)``, positions 1-based as in reports;
    ``unused_faults`` describes scheduled faults no call used.
    """

    def __init__(
        self,
        path: str,
        unused: list[tuple[int, str, str]],
        total: int,
        unused_faults: list[str] | None = None,
        scripted: bool = False,
    ) -> None:
        self.path = path
        self.unused = unused
        self.total = total
        self.unused_faults = unused_faults or []
        parts = []
        if unused:
            shown = "\n".join(
                f"  #{position}: {method} {uri}" for position, method, uri in unused[:10]
            )
            more = f"\n  … and {len(unused) - 10} more" if len(unused) > 10 else ""
            which = (
                "the 1 interaction" if total == 1 else f"{len(unused)} of the {total} interactions"
            )
            parts.append(
                f"{which} {'the overrides script for' if scripted else 'recorded in'} {path} "
                f"{'was' if len(unused) == 1 else 'were'} not played:\n"
                f"{shown}{more}"
            )
        if self.unused_faults:
            shown = "\n".join(f"  {fault}" for fault in self.unused_faults)
            parts.append(
                f"{len(self.unused_faults)} scheduled fault(s) were never used "
                f"(the test made fewer calls than scripted):\n{shown}"
            )
        super().__init__(
            "\n".join(parts) + "\n  to fix: record the cassette again "
            "(pytest --record-mode=rewrite) if the code makes fewer requests now, drop the "
            "scripted entries or faults it no longer needs, or allow it with "
            "@pytest.mark.vcr(allow_unused=True)"
        )


class OverridesError(LlmCassetteError, ValueError):
    """An overrides sidecar (or ``overrides=`` option) is invalid; nothing was replayed.

    ``source`` is the file (or option) it came from, ``entry`` the 0-based index in its
    ``entries`` list (None for the top level), ``field`` the key at fault.
    """

    def __init__(
        self, source: str, entry: int | None, field: str | None, problem: str, hint: str = ""
    ) -> None:
        self.source = source
        self.entry = entry
        self.field = field
        self.problem = problem
        self.hint = hint
        where = f"{source}: {self.location}" if self.location else source
        super().__init__(located(where, problem, hint))

    @property
    def location(self) -> str:
        """Where in the overrides: ``entries[2].status``, ``entries[2]``, ``mode``, or ""."""
        if self.entry is None:
            return self.field or ""
        return f"entries[{self.entry}]" + (f".{self.field}" if self.field else "")


class FaultError(LlmCassetteError):
    """A fault or placeholder cannot be carried out for the request it applies to.

    ``cassette`` is the cassette file, ``location`` where in it (``interaction 2, event
    5``), ``problem`` what is wrong.
    """

    def __init__(self, cassette: str | None, location: str, problem: str, hint: str = "") -> None:
        self.cassette = cassette
        self.location = location
        self.problem = problem
        self.hint = hint
        where = f"{cassette}: {location}" if cassette else location
        super().__init__(located(where, problem, hint))


class PlaceholderError(FaultError):
    """A ``{{fromRequest:...}}`` placeholder is malformed or matches nothing in the request."""


class CassetteExpiredError(LlmCassetteError):
    """A cassette is older than its ``max_age`` and ``expired="fail"`` is set.

    ``path`` is the cassette, ``created_at`` its header's recording time, ``age`` and
    ``max_age`` are in seconds.
    """

    def __init__(
        self, path: str | os.PathLike[str], created_at: str, age: float, max_age: float
    ) -> None:
        self.path = os.fspath(path)
        self.created_at = created_at
        self.age = age
        self.max_age = max_age
        super().__init__(
            f"{self.path}: cassette expired: recorded {created_at}, {format_age(age)} ago, "
            f"max_age is {format_age(max_age)}\n"
            "  how to fix: record it again (pytest --record-mode=rewrite on this test, or "
            "python -m llmcassette.workflow --only expired), or raise max_age"
        )


class CassetteLockError(LlmCassetteError):
    """Another process is saving (or saved) the same cassette, and this save cannot go on
    safely; nothing was written.

    ``path`` is the cassette, ``lock_path`` the lock file beside it, ``pid`` the process
    that holds (or last held) the lock when known, ``problem`` what happened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        lock_path: str | os.PathLike[str],
        pid: int | None,
        problem: str,
    ) -> None:
        self.path = os.fspath(path)
        self.lock_path = os.fspath(lock_path)
        self.pid = pid
        self.problem = problem
        who = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"{self.path}: {problem} ({who}, lock file {self.lock_path}); nothing was written\n"
            "  how to fix: record this cassette from one process at a time, or give each "
            "process (CI shard, pytest-xdist worker) cassettes of its own; see "
            "docs/recording.md, 'Running tests in parallel'"
        )


class CassetteExpiredWarning(LlmCassetteWarning):
    """A cassette is older than its ``max_age`` (``expired="warn"``)."""


class ErrorResponseNotRecordedWarning(LlmCassetteWarning):
    """Responses with an error status were received while recording and left out.

    Pass ``record_errors=True`` to keep them in the cassette.
    """


def format_age(seconds: float) -> str:
    """``seconds`` in the largest whole unit that keeps it readable: ``"31d 4h"``, ``"12h"``."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
