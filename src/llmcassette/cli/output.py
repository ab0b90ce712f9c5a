"""What a command says: text as it goes, or with ``--json`` one JSON document at the end.

Every command reports through an ``Output``: a ``finding`` is something wrong with a
cassette (exit 1), an ``error`` something that kept the command from doing its work for a
file or at all (exit 2), a ``result`` what it did. With ``--json`` nothing but the document
is printed on stdout, when the command is ``done``::

    {"command": "check", "exit_code": 1, "findings": [...], "errors": [...], ...}

Each finding and error is an ``errors.record``: ``code``, ``message``, ``file``, ``line``,
``path``, ``expected``, ``received``, ``how_to_fix``, ``docs``. The exit code is 2 when
there is an error, else 1 when there is a finding, else 0.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from llmcassette.errors import LlmCassetteError, record, without_controls

# The codes of what the commands find or meet that is no exception (an error met as an
# exception has that exception's ``code``). Each is explained in docs/errors.md; a code
# that goes out of use keeps its number: numbers are never reused.
CANNOT_WRITE = "LC002 cannot-write"
TRUNCATED_STREAM = "LC601 truncated-stream"
SECRET = "LC602 secret"
EXPIRED = "LC603 expired"
AGE_UNKNOWN = "LC604 age-unknown"
ORPHAN = "LC605 orphan"
STALE_TEMP = "LC606 stale-temp"
CASSETTES_DIFFER = "LC607 cassettes-differ"
NEEDS_MIGRATION = "LC608 needs-migration"
TARGET_EXISTS = "LC609 target-exists"
LOST_BODY = "LC620 lost-body"
CODES = (
    CANNOT_WRITE,
    TRUNCATED_STREAM,
    SECRET,
    EXPIRED,
    AGE_UNKNOWN,
    ORPHAN,
    STALE_TEMP,
    CASSETTES_DIFFER,
    NEEDS_MIGRATION,
    TARGET_EXISTS,
    LOST_BODY,
)


# A control character in text from a cassette or a file name could clear the screen, hide
# or rewrite a finding, set the window title or write to the clipboard (OSC 52). The
# colours the commands paint with (``--color``), and only those, are let through.
_PAINTED = re.compile(r"(\x1b\[(?:0|1|31|32|33|36)m)")


def terminal_safe(text: str, *, colors: bool = False) -> str:
    """``text`` with every control character shown as ``\\xNN``; with ``colors``, the
    colour sequences the commands paint with are kept."""
    if not colors or "\x1b" not in text:
        return without_controls(text)
    pieces = _PAINTED.split(text)  # the painted sequences at odd indexes
    return "".join(
        piece if index % 2 else without_controls(piece) for index, piece in enumerate(pieces)
    )


class UsageError(LlmCassetteError):
    """The command line is wrong: an unknown option, a missing argument, a folder where a
    file is needed. ``prog`` is the (sub)command, ``usage`` its usage line."""

    code = "LC001 usage"

    def __init__(self, prog: str, problem: str, usage: str) -> None:
        self.prog = prog
        self.problem = problem
        self.usage = usage
        super().__init__(f"{prog}: error: {problem}")

    def details(self) -> dict[str, Any]:
        return {"expected": self.usage.strip(), "how_to_fix": f"see {self.prog} --help"}


class Output:
    """The findings, errors and results of one command run (see the module docstring)."""

    def __init__(self, command: str | None, as_json: bool) -> None:
        self.command = command
        self.as_json = as_json
        self.findings: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        #: What every text printed goes through first: a redactor's ``text`` for the
        #: commands that print a cassette's values (``show``, ``diff``).
        self.shown: Callable[[str], str] = str

    def _print(self, text: str | None, stderr: bool) -> None:
        if text is not None and not self.as_json:
            print(terminal_safe(self.shown(text)), file=sys.stderr if stderr else sys.stdout)

    def finding(self, found: dict[str, Any], text: str | None, *, stderr: bool = False) -> None:
        """Something wrong with a cassette (exit 1); ``text`` is its line without ``--json``."""
        self.findings.append(found)
        self._print(text, stderr)

    def error(self, failure: dict[str, Any], text: str) -> None:
        """Something that kept the command from its work (exit 2); ``text`` goes to stderr."""
        self.errors.append(failure)
        self._print(text, stderr=True)

    def failed(self, error: LlmCassetteError, text: str | None = None) -> None:
        """``error`` for an exception: its ``to_dict()``, and ``str(error)`` unless ``text``.

        The record's ``message`` is the problem alone, as a finding's is: the file, line and
        how to fix it are fields of their own, which ``str(error)`` repeats for people."""
        failure = error.to_dict()
        problem = getattr(error, "problem", None)
        if isinstance(problem, str) and problem:
            failure["message"] = problem
        self.error(failure, str(error) if text is None else text)

    def cannot_write(self, path: object, error: OSError) -> None:
        """A file that could not be written (``CANNOT_WRITE``); it was left as it was."""
        problem = f"cannot write: {error.strerror or error}; not changed"
        fix = "check the file's and its folder's permissions and the free space"
        self.error(
            record(CANNOT_WRITE, problem, file=str(path), how_to_fix=fix), f"{path}: {problem}"
        )

    def result(self, done: dict[str, Any], text: str | None) -> None:
        """What the command did for one file; ``text`` goes to stdout without ``--json``."""
        self.results.append(done)
        self._print(text, stderr=False)

    def say(self, text: str, *, stderr: bool = True) -> None:
        """A summary or note for people: never part of the ``--json`` document."""
        self._print(text, stderr)

    @property
    def exit_code(self) -> int:
        return 2 if self.errors else 1 if self.findings else 0

    def done(self, **fields: Any) -> int:
        """Print the ``--json`` document, with ``fields`` of the command's own, and return
        the exit code."""
        if self.as_json:
            document: dict[str, Any] = {
                "command": self.command,
                "exit_code": self.exit_code,
                "findings": self.findings,
                "errors": self.errors,
                "results": self.results,
                **fields,
            }
            print(self.shown(json.dumps(document, indent=2, default=repr)))
        return self.exit_code


#: What an ``Output`` was told: ``(method, record, text, stderr)``.
Call = tuple[str, dict[str, Any], str | None, bool]


class Recorded(Output):
    """An ``Output`` that prints nothing and keeps what it is told as plain data, to be
    told again to the command's own (``replay``): the work on a file done in another
    process reports through one."""

    def __init__(self) -> None:
        super().__init__(None, as_json=True)
        self.calls: list[Call] = []

    def finding(self, found: dict[str, Any], text: str | None, *, stderr: bool = False) -> None:
        self.calls.append(("finding", found, text, stderr))

    def error(self, failure: dict[str, Any], text: str) -> None:
        self.calls.append(("error", failure, text, True))

    def result(self, done: dict[str, Any], text: str | None) -> None:
        self.calls.append(("result", done, text, False))


def replay(calls: list[Call], out: Output) -> None:
    """Tell ``out`` what a ``Recorded`` was told, in order."""
    for method, data, text, stderr in calls:
        if method == "finding":
            out.finding(data, text, stderr=stderr)
        elif method == "error":
            out.error(data, text or "")
        else:
            out.result(data, text)
