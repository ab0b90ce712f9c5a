"""The exceptions llmcassette raises: one base class, structured fields, one renderer each.

Every error has a stable ``code`` (``"LC101 cassette-format"``, catalogued in
docs/errors.md, never reused) and ``to_dict()``, the fields a program acts on; the CLI's
``--json`` findings have the same shape (``record``).
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, ClassVar

#: The fields of an error or finding besides ``code``, ``message`` and ``docs``; None where
#: they do not apply. ``path`` is a JSON path or field name; ``line`` counts from 1.
FIELDS = ("file", "line", "path", "expected", "received", "how_to_fix")


def docs_anchor(code: str) -> str:
    """Where a code is explained: ``docs/errors.md#lc101-cassette-format``."""
    return "docs/errors.md#" + code.lower().replace(" ", "-")


def record(code: str, message: str, **fields: Any) -> dict[str, Any]:
    """One error or finding as ``to_dict`` and every ``--json`` output give it: ``code``,
    ``message``, the ``FIELDS`` (None unless given), ``docs``, then any other ``fields``."""
    out: dict[str, Any] = {"code": code, "message": message}
    out.update({name: fields.pop(name, None) for name in FIELDS})
    out["docs"] = docs_anchor(code)
    out.update(fields)
    return out


def located(where: str, problem: str, hint: str | None = None) -> str:
    """``where: problem``, and ``how to fix: hint`` indented on a second line when given."""
    message = f"{where}: {problem}"
    return f"{message}\n  how to fix: {hint}" if hint else message


# Control characters a terminal acts on (C0 but tab and newline, DEL, C1).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_controls(text: str) -> str:
    """``text`` with each control character a terminal acts on written ``\\xNN``: a value
    of a cassette in a message cannot clear the screen, hide a line or set the title."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def command_for_test(test: str | None, record_mode: str, *, forced: bool = False) -> str:
    """The command that runs ``test`` (a pytest node id, quoted for the shell) in
    ``record_mode``: ``pytest 'tests/test_chat.py::test_say[gpt 4]' --record-mode=rewrite``;
    every test without one. ``forced`` gives ``--llmcassette-record-mode``, which wins over a
    record_mode that vcr_config or the vcr marker sets (``--record-mode`` does not)."""
    option = "--llmcassette-record-mode" if forced else "--record-mode"
    selection = f" {shlex.quote(test)}" if test else ""
    return f"pytest{selection} {option}={record_mode}"


def shown_path(path: str | os.PathLike[str], cwd: str | None = None) -> str:
    """``path`` as a message shows it: relative to ``cwd`` (default: the current directory)
    when it is under it, as pytest shows files, else as it is.

    Only string operations when ``cwd`` is given: a message made inside a request, on an
    event loop, must not ask the operating system anything.
    """
    text = os.fspath(path)
    if not os.path.isabs(text):
        return text
    # Strings, not PurePath objects: a suite that leaves many cassettes unplayed builds
    # thousands of messages, and pathlib's parsing was a tenth of loading a cassette.
    base = os.path.join(os.path.normpath(os.getcwd() if cwd is None else cwd), "")
    shown = os.path.normpath(text)
    return shown[len(base) :] if shown.startswith(base) and len(shown) > len(base) else text


# Errors defined in modules this one cannot import (they import vcrpy): their codes.
_CODES_OF_CLASSES_ELSEWHERE = {"CassetteMismatch": "LC301 cassette-mismatch"}


class LlmCassetteError(Exception):
    """Base class of every error llmcassette raises on purpose."""

    code: ClassVar[str] = "LC000 llmcassette-error"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__ and cls.__name__ in _CODES_OF_CLASSES_ELSEWHERE:
            cls.code = _CODES_OF_CLASSES_ELSEWHERE[cls.__name__]

    def to_dict(self) -> dict[str, Any]:
        """The error as a program reads it (``record``): ``message`` is ``str(error)``."""
        return record(self.code, str(self), **self.details())

    def details(self) -> dict[str, Any]:
        """The ``FIELDS`` that apply to this error."""
        return {}


class LlmCassetteWarning(UserWarning):
    """Base class of every warning llmcassette issues.

    A warning that is the milder form of an error has that error's ``code``; ``to_dict()``
    gives it in the error model (the run report, ``--llmcassette-report``, reads it).
    """

    code: ClassVar[str] = "LC000 llmcassette-error"

    def to_dict(self) -> dict[str, Any]:
        """The warning as a program reads it (``record``): ``message`` is ``str(warning)``."""
        return record(self.code, str(self), **self.details())

    def details(self) -> dict[str, Any]:
        """The ``FIELDS`` that apply to this warning."""
        return {}


class ConfigError(LlmCassetteError, ValueError):
    """An option or a ``[tool.llmcassette]`` setting has a value llmcassette cannot use.

    The message names the option (and the pyproject.toml file it came from) and what it
    accepts; nothing was recorded or replayed.
    """

    code = "LC401 config"


class IncompatibleVcrpyError(LlmCassetteError, ImportError):
    """The installed vcrpy lacks an internal llmcassette relies on, or is too old.

    ``vcrpy_version`` is the installed release, ``missing`` what it lacks (empty when it is
    only too old); raised by ``configure``/``use_cassette`` before anything is patched.
    """

    code = "LC402 incompatible-vcrpy"

    def __init__(self, vcrpy_version: str, missing: list[str], lowest: str) -> None:
        self.vcrpy_version = vcrpy_version
        self.missing = missing
        self.lowest = lowest
        if missing:
            problem = f"llmcassette does not work with vcrpy {vcrpy_version}: it lacks " + (
                ", ".join(missing)
            )
            self.hint = (
                f"install a vcrpy release llmcassette is tested with (vcrpy {lowest} to the "
                "newest at llmcassette's release), or report the new vcrpy release as an "
                "llmcassette issue"
            )
        else:
            problem = f"llmcassette needs vcrpy >= {lowest}, but vcrpy {vcrpy_version} is installed"
            self.hint = f"pip install 'vcrpy>={lowest}'"
        super().__init__(f"{problem}\n  how to fix: {self.hint}")

    def details(self) -> dict[str, Any]:
        return {
            "expected": f"vcrpy >= {self.lowest}",
            "received": f"vcrpy {self.vcrpy_version}",
            "how_to_fix": self.hint,
        }


class CassetteFormatError(LlmCassetteError, ValueError):
    """A cassette file cannot be read: it names the file, the line and what is wrong.

    The file is never modified when this is raised.
    """

    code = "LC101 cassette-format"

    def __init__(
        self, path: str | os.PathLike[str], line: int | None, problem: str, hint: str | None = None
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        self.hint = hint
        where = f"{shown_path(self.path)}:{line}" if line is not None else shown_path(self.path)
        super().__init__(located(where, problem, hint))

    def details(self) -> dict[str, Any]:
        return {"file": self.path, "line": self.line, "how_to_fix": self.hint}


class CassetteVersionError(CassetteFormatError):
    """A cassette was written by a newer llmcassette than the one installed."""

    code = "LC102 cassette-version"

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

    def details(self) -> dict[str, Any]:
        return {
            **super().details(),
            "path": "format_version",
            "expected": f"<= {self.supported_version}",
            "received": self.found_version,
        }


class HealError(LlmCassetteError):
    """``llmcassette heal`` cannot repair a cassette; the file was left as it was.

    ``path`` is the cassette, ``line`` the line at fault (from 1), ``field`` the field,
    ``problem`` what heal met and ``hint`` what to do instead.
    """

    code = "LC701 cannot-heal"

    def __init__(
        self,
        path: str | os.PathLike[str],
        line: int | None,
        field: str | None,
        problem: str,
        hint: str,
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.field = field
        self.problem = problem
        self.hint = hint
        where = f"{shown_path(self.path)}:{line}" if line is not None else shown_path(self.path)
        super().__init__(located(where, f"cannot heal: {problem}; not changed", hint))

    def details(self) -> dict[str, Any]:
        return {"file": self.path, "line": self.line, "path": self.field, "how_to_fix": self.hint}


#: The rule of a finding in a body no rule can look inside (a content-encoding that
#: cannot be decoded): it may hold anything, so it is refused like a match.
UNSCANNABLE_BODY = "unscannable-body"
#: The rule of a finding in JSON nested deeper than llmcassette reads (docs/format.md,
#: "Limits"): unread, so refused like a match.
TOO_DEEP_JSON = "too-deep-json"
#: The ``json_path`` of a finding in the name of the file about to be written (a test
#: parametrized with a credential names its cassette after it).
FILE_NAME = "the file name"


class SecretLeakError(LlmCassetteError):
    """A cassette about to be written still holds a secret; nothing was written.

    ``path``, ``line`` and ``json_path`` say where, ``rule`` which rule matched; the secret
    itself is never part of the error. ``findings`` holds every ``(line, json_path, rule)``.
    ``rule`` is ``"unscannable-body"`` for a body in a content-encoding that could not be
    decoded, so could not be checked, and ``"too-deep-json"`` for JSON nested too deeply to
    be read.
    """

    code = "LC201 secret-leak"

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
        where = f"{shown_path(self.path)}:{line}" if line is not None else shown_path(self.path)
        more = len(self.findings) - 1
        also = f" ({more} more finding(s))" if more > 0 else ""
        if rule == UNSCANNABLE_BODY:
            problem = (
                f"{json_path} is in a content-encoding llmcassette cannot decode, or decodes "
                "to more than the limit, so no redaction rule could look inside it"
            )
            self.hint = (
                "the file was not written; install its decoder (llmcassette[brotli], "
                "llmcassette[zstd]), raise LLMCASSETTE_MAX_DECODED_BYTES (256 MiB by "
                "default) for a body that large, have the client not ask for that encoding "
                "(accept-encoding), or set allow_unscanned_bodies = true in "
                "[tool.llmcassette.redaction] to store such bodies as they are"
            )
        elif rule == TOO_DEEP_JSON:
            problem = (
                f"{json_path} nests arrays and objects deeper than llmcassette reads JSON "
                "(100 levels in a body, 128 in a line), so no redaction rule could look "
                "inside it"
            )
            self.hint = (
                "the file was not written; send a shallower body, or keep this request out "
                "of the cassette (ignore_hosts, or a before_record_request that returns None)"
            )
        elif json_path == FILE_NAME:
            problem = f"{json_path} holds a credential (redaction rule {rule!r})"
            self.hint = (
                "the file was not written; name the cassette without it: a parametrized "
                "test's cassette is named after its parameters, so give that one an id "
                '(pytest.param(key, id="openai")) or name the cassette yourself'
            )
        else:
            problem = f"{json_path} still matches redaction rule {rule!r}"
            self.hint = (
                "the file was not written; add a redaction rule for this value (see "
                "docs/redaction.md), or report the missed secret as a bug"
            )
        super().__init__(
            f"{where}: refusing to write the cassette: {problem}{also}\n  how to fix: {self.hint}"
        )

    def details(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "line": self.line,
            "path": self.json_path,
            "how_to_fix": self.hint,
            "rule": self.rule,
        }


class IncompleteStreamError(LlmCassetteError):
    """A streamed response ended without its terminator, or its connection broke."""

    code = "LC202 incomplete-stream"

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

    def details(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "received": self.problem,
            "how_to_fix": "record it again, or set incomplete_streams='warn' (or 'ignore') "
            "to keep such streams on purpose",
        }


class IncompleteStreamWarning(LlmCassetteWarning):
    """The warning form of ``IncompleteStreamError`` (``incomplete_streams="warn"``)."""

    code = IncompleteStreamError.code


class UnusedInteractionsError(LlmCassetteError):
    """A replayed test did not play every interaction its cassette (or overrides) scripted.

    ``unused`` lists them as ``(position, method, uri)``, positions 1-based as in reports;
    ``unused_faults`` describes scheduled faults no call used.
    """

    code = "LC302 unused-interactions"
    #: The hint under pytest, with the ``{command}`` that records the test again.
    PYTEST_HINT = (
        "record the cassette again ({command}) if the code makes fewer requests now, drop "
        "the scripted entries or faults it no longer needs, or allow it with "
        "@pytest.mark.vcr(allow_unused=True)"
    )
    hint = PYTEST_HINT.format(command="pytest --record-mode=rewrite")
    #: The hint when ``llmcassette.use_cassette`` raised it.
    USE_CASSETTE_HINT = (
        "record the cassette again (use_cassette(..., record_mode='all')) if the code makes "
        "fewer requests now, drop the scripted entries or faults it no longer needs, or "
        "allow it with use_cassette(..., allow_unused=True)"
    )
    #: The hint when the cassette is ``llmcassette run``'s, which takes no ``allow_unused``.
    RUN_HINT = (
        "record the cassette again (llmcassette run --record CASSETTE -- COMMAND) if the "
        "program makes fewer requests now, drop the scripted entries or faults it no longer "
        "needs, or allow it with llmcassette.use_cassette(..., allow_unused=True) in the "
        "program instead of llmcassette run, which takes no such option"
    )

    def __init__(
        self,
        path: str,
        unused: list[tuple[int, str, str]],
        total: int,
        unused_faults: list[str] | None = None,
        scripted: bool = False,
        described: list[str] | None = None,
        sessions: list[tuple[str, int, int]] | None = None,
        hint: str | None = None,
        refused: str | None = None,
        bypassed: int = 0,
    ) -> None:
        if hint is not None:  # where the cassette is used names other commands
            self.hint = hint
        self.path = path
        path = shown_path(path)  # as the message shows it
        # Requests sent through vcrpy's own stubs (requests, aiohttp, boto3...), which
        # scheduled faults never reach: why a fault may stay unused though calls were made.
        self.bypassed = bypassed
        # The first line of a mismatch the code under test caught: why a call it made did
        # not play its interaction (a library that swallows its own errors, like telemetry).
        self.refused = refused
        self.unused = unused
        self.scripted = scripted
        # (session label, unplayed, recorded) per llmcassette.session, when there are any.
        self.sessions = sessions or []
        self.total = total
        self.unused_faults = unused_faults or []
        # What tells each unplayed call apart (method, path, model, prompt), when known:
        # ``POST <url>`` alone is the same for every LLM call.
        self.described = described or [f"{method} {uri}" for _, method, uri in unused]
        parts = []
        if refused:
            parts.append(
                f"a request was refused and the code under test caught the error: {refused}"
            )
        if unused:
            shown = "\n".join(
                f"  #{position}: {text}"
                for (position, _, _), text in zip(unused[:10], self.described, strict=False)
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
        if self.sessions:
            parts.append(
                "by session: "
                + "; ".join(
                    f"{label}: {unplayed} of {total} not played"
                    for label, unplayed, total in self.sessions
                )
            )
        if self.unused_faults:
            shown = "\n".join(f"  {fault}" for fault in self.unused_faults)
            why = "the test made fewer calls than scripted"
            if bypassed:
                why = (
                    f"{bypassed} request(s) went through vcrpy's own stubs (requests, aiohttp, "
                    "boto3...), which faults do not reach: docs/faults.md#which-clients; "
                    f"or {why}"
                )
            parts.append(
                f"{len(self.unused_faults)} scheduled fault(s) were never used ({why}):\n{shown}"
            )
        super().__init__("\n".join(parts) + f"\n  to fix: {self.hint}")

    def with_hint(self, hint: str) -> UnusedInteractionsError:
        """The same error, with the hint for where the cassette is used."""
        return self._but(hint=hint)

    def after_refusal(self, refused: str) -> UnusedInteractionsError:
        """The same error, saying first that the code caught the refusal ``refused``."""
        return self._but(refused=refused)

    def _but(self, **changes: Any) -> UnusedInteractionsError:
        kept = self.path, self.unused, self.total, self.unused_faults, self.scripted
        return type(self)(
            *kept,
            self.described,
            self.sessions,
            **{"hint": self.hint, "refused": self.refused, "bypassed": self.bypassed, **changes},
        )

    def details(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "expected": f"{self.total} interaction(s) played",
            "received": [
                f"#{position} {text}"
                for (position, _, _), text in zip(self.unused, self.described, strict=True)
            ]
            + self.unused_faults,
            "how_to_fix": self.hint,
            "refused": self.refused,
        }


class OverridesError(LlmCassetteError, ValueError):
    """An overrides sidecar (or ``overrides=`` option) is invalid; nothing was replayed.

    ``source`` is the file (or option) it came from, ``entry`` the 0-based index in its
    ``entries`` list (None for the top level), ``field`` the key at fault.
    """

    code = "LC501 overrides"

    def __init__(
        self, source: str, entry: int | None, field: str | None, problem: str, hint: str = ""
    ) -> None:
        self.source = source
        self.entry = entry
        self.field = field
        self.problem = problem
        self.hint = hint
        # A sidecar's path as pytest names files; "overrides=" and the like stay as they are.
        shown = shown_path(source)
        where = f"{shown}: {self.location}" if self.location else shown
        super().__init__(located(where, problem, hint))

    @property
    def location(self) -> str:
        """Where in the overrides: ``entries[2].status``, ``entries[2]``, ``mode``, or ""."""
        if self.entry is None:
            return self.field or ""
        return f"entries[{self.entry}]" + (f".{self.field}" if self.field else "")

    def details(self) -> dict[str, Any]:
        return {"file": self.source, "path": self.location or None, "how_to_fix": self.hint or None}


class FaultError(LlmCassetteError):
    """A fault or placeholder cannot be carried out for the request it applies to.

    ``cassette`` is the cassette file, ``location`` where in it (``interaction #2, event
    #5``, counted from 1), ``problem`` what is wrong.
    """

    code = "LC502 fault"

    def __init__(self, cassette: str | None, location: str, problem: str, hint: str = "") -> None:
        self.cassette = cassette
        self.location = location
        self.problem = problem
        self.hint = hint
        where = f"{cassette}: {location}" if cassette else location
        super().__init__(located(where, problem, hint))

    def details(self) -> dict[str, Any]:
        return {"file": self.cassette, "path": self.location, "how_to_fix": self.hint or None}


class PlaceholderError(FaultError):
    """A ``{{fromRequest:...}}`` placeholder is malformed or matches nothing in the request."""

    code = "LC503 placeholder"


class CassetteExpiredError(LlmCassetteError):
    """A cassette is older than its ``max_age`` and ``expired="fail"`` is set.

    ``path`` is the cassette, ``created_at`` its header's recording time, ``age`` and
    ``max_age`` are in seconds.
    """

    code = "LC303 cassette-expired"
    _HINT = (
        "record it again ({command}, or python -m llmcassette.workflow --only expired), or "
        "raise max_age"
    )
    hint = _HINT.format(command="pytest --record-mode=rewrite on this test")

    def __init__(
        self,
        path: str | os.PathLike[str],
        created_at: str,
        age: float,
        max_age: float,
        rerecord: str | None = None,
    ) -> None:
        if rerecord is not None:  # the command that records the test using it again
            self.hint = self._HINT.format(command=rerecord)
        self.path = os.fspath(path)
        self.created_at = created_at
        self.age = age
        self.max_age = max_age
        super().__init__(
            f"{shown_path(self.path)}: cassette expired: recorded {created_at}, {format_age(age)} ago, "
            f"max_age is {format_age(max_age)}\n  how to fix: {self.hint}"
        )

    def details(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "path": "created_at",
            "expected": f"at most {format_age(self.max_age)} old",
            "received": f"{format_age(self.age)} old",
            "how_to_fix": self.hint,
        }


class LegacyCassetteDriftWarning(LlmCassetteWarning):
    """A vcrpy cassette (or one ``convert`` made from one) replayed a request whose body
    differs from the recorded one at ``path``.

    vcrpy recorded it without comparing bodies, so the difference is reported, not failed
    (``drift="warn"``); ``drift="strict"`` fails it as llmcassette cassettes do.
    """

    code = "LC304 legacy-drift"
    _HINT = (
        "record the test again ({command}), or leave it: the cassette still replays (where "
        "warnings are errors, let this one through with "
        "-W default::llmcassette.LegacyCassetteDriftWarning)"
    )
    hint = _HINT.format(command="pytest --record-mode=rewrite <test>")
    #: The hint for a value a client makes anew on every run, which recording again would
    #: not stop from drifting: ``{option}`` is the ``match`` option that leaves it out.
    _VOLATILE_HINT = (
        "the value looks made anew on every run ({names}): recording again would not stop "
        "it drifting; leave such values out with {option} (docs/matching.md), or leave it: "
        "the cassette still replays (where warnings are errors, let this one through with "
        "-W default::llmcassette.LegacyCassetteDriftWarning)"
    )

    def __init__(
        self,
        file: str,
        path: str,
        recorded: str,
        incoming: str,
        rerecord: str | None = None,
        shown_file: str | None = None,
        volatile: tuple[str, ...] = (),
        option: str | None = None,
    ) -> None:
        if rerecord is not None:  # the command that records the test using it again
            self.hint = self._HINT.format(command=rerecord)
        # The ``volatile`` presets that take the difference away, and the match option
        # (where the cassette is used takes it) that turns them on.
        self.volatile = volatile
        self.option = option if volatile else None
        if volatile and option is not None:
            self.hint = self._VOLATILE_HINT.format(names=", ".join(volatile), option=option)
        self.file = file
        # ``file`` as messages show it (``shown_path``), given by a caller inside a request
        self.shown_file = shown_file or file
        self.path = path
        self.recorded = recorded
        self.incoming = incoming
        super().__init__(
            f"{self.shown_file}: legacy cassette drift: {path}: recorded {recorded}, "
            f"incoming {incoming}"
            f"\n  how to fix: {self.hint}"
        )

    def details(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "path": self.path,
            "expected": self.recorded,
            "received": self.incoming,
            "volatile": list(self.volatile),
            "how_to_fix": self.hint,
        }


class CassetteLockError(LlmCassetteError):
    """Another process is saving (or saved) the same cassette, and this save cannot go on
    safely; nothing was written.

    ``path`` is the cassette, ``lock_path`` the lock file beside it, ``pid`` the process
    that holds (or last held) the lock when known, ``problem`` what happened.
    """

    code = "LC203 cassette-lock"
    hint = (
        "record this cassette from one process at a time, or give each process (CI shard, "
        "pytest-xdist worker) cassettes of its own; see docs/recording.md, 'Running tests "
        "in parallel'"
    )

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
            f"{shown_path(self.path)}: {problem} ({who}, lock file "
            f"{shown_path(self.lock_path)}); nothing was written\n"
            f"  how to fix: {self.hint}"
        )

    def details(self) -> dict[str, Any]:
        return {"file": self.path, "received": self.problem, "how_to_fix": self.hint}


class OverlappingCassettesError(LlmCassetteError):
    """A cassette was opened while one opened by another task or thread was still open.

    vcrpy patches the HTTP clients of the whole process, so while two cassettes are open
    every request goes to the one opened last, whichever task sent it. ``path`` is the
    cassette being opened, ``open_path`` the one already open; nothing was patched.
    """

    code = "LC403 overlapping-cassettes"
    hint = (
        "open one cassette around all the concurrent code and tell its callers apart with "
        "llmcassette.session(name), or open the cassettes one after another; a cassette "
        "opened inside another in the same task or thread, or in a task or thread started "
        "inside it, is fine (a thread carries it when run with contextvars.copy_context().run; "
        "docs/concurrency.md)"
    )

    def __init__(self, path: str, open_path: str) -> None:
        self.path = path
        self.open_path = open_path
        path, open_path = shown_path(path), shown_path(open_path)
        super().__init__(
            f"{path}: opened while {open_path} is open in another task or thread; the "
            "HTTP clients are patched for the whole process, so the requests of both would "
            f"go to {path}\n  how to fix: {self.hint}"
        )

    def details(self) -> dict[str, Any]:
        return {"file": self.path, "received": self.open_path, "how_to_fix": self.hint}


class CassetteExpiredWarning(LlmCassetteWarning):
    """A cassette is older than its ``max_age`` (``expired="warn"``)."""

    code = CassetteExpiredError.code


class ErrorResponseNotRecordedWarning(LlmCassetteWarning):
    """Responses with an error status were received while recording and left out.

    Pass ``record_errors=True`` to keep them in the cassette.
    """


class FailedRequestNotRecordedWarning(LlmCassetteWarning):
    """While recording, requests failed before any response arrived (a timeout, a refused
    connection, a cancelled task), and no recorded interaction answers them: replayed, the
    same calls find nothing in the cassette. ``failed`` lists ``(method, uri, what)``."""

    def __init__(self, cassette: str, failed: list[tuple[str, str, str]]) -> None:
        self.cassette = cassette
        self.failed = failed
        shown = "\n".join(f"  {method} {uri}: {what}" for method, uri, what in failed)
        super().__init__(
            f"{cassette}: requests failed before any response while recording, and the "
            f"cassette holds nothing that answers them:\n{shown}\n"
            "  how to fix: replayed, the same calls will not be answered; script the failure "
            "for them (a transport_error or hang fault in the cassette's overrides, "
            "docs/faults.md), or keep such calls out of the recorded test"
        )


class FixtureCallsWarning(LlmCassetteWarning):
    """A fixture of wider scope than a test (class, module, package, session) made calls
    while the cassette of the test that first needed it was open: they are in that test's
    cassette only, so another test that uses the fixture, run without that one, has no
    recording of them."""

    def __init__(self, fixture: str, scope: str, test: str, calls: int) -> None:
        self.fixture = fixture
        self.scope = scope
        self.test = test
        self.calls = calls
        counted = "1 call" if calls == 1 else f"{calls} calls"
        super().__init__(
            f"fixture {fixture!r} ({scope} scope) made {counted} inside the cassette of "
            f"{test}, the test that first needed it: the other tests that use the fixture "
            f"have no recording of {'it' if calls == 1 else 'them'}, and fail to replay "
            f"when run without {test}\n"
            "  how to fix: give the fixture a cassette of its own (docs/pytest.md, "
            '"Fixtures shared by several tests")'
        )


class ConcurrentIdenticalRequestsWarning(LlmCassetteWarning):
    """While recording, identical requests (the same request key, in the same session or
    outside any) were in flight at the same time and got different answers.

    Replay hands such answers out in the order the requests arrive, so which caller gets
    which depends on scheduling; callers with clients of their own (``by_client``) are told
    apart by client, as long as each client makes its first call in the recorded order.
    ``prompt`` is the start of the request's last message.
    """

    def __init__(
        self,
        method: str,
        path: str,
        prompt: str,
        session: str | None = None,
        by_client: bool = False,
    ) -> None:
        self.method = method
        self.path = path
        self.prompt = prompt
        self.session = session
        self.by_client = by_client
        where = "outside any session" if session is None else f"all in session {session!r}"
        hint = (
            "run each caller in its own llmcassette.session(name)"
            if session is None
            else "give each caller a nested llmcassette.session(name)"
        )
        replay = (
            "replay tells their callers apart by client only while each client makes its "
            "first call in the order it did now"
            if by_client
            else "replay cannot tell their callers apart and gives the answers by arrival order"
        )
        super().__init__(
            f"{method} {path} (prompt {prompt!r}): identical requests {where} were "
            f"in flight at the same time and got different answers; {replay}\n"
            f"  how to fix: {hint}, then record again (see docs/concurrency.md)"
        )


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
