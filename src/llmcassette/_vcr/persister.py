"""Where cassettes live on disk: loading, legacy fallback, and atomic, loss-free saving.

A save holds ``<cassette>.lock`` (``filelock``) while it re-reads the file and writes it.
When another process saved the cassette after this one loaded it (CI shards, pytest-xdist
workers recording one shared cassette), the interactions this run recorded are added to
what the file holds now instead of replacing it (``saving`` tells the save which ones are
new); so are those of a later test of the same pytest session that records a shared
cassette from scratch (``session_saves``). The temporary files of a save killed half-way
are removed by the next save.

``Persister`` is a vcrpy persister. For cassettes that use llmcassette's serializer it reads
and writes the JSONL files itself; for any other serializer (a user who keeps YAML) it hands
the call to the persister it wraps, so pytest-recording's extra-cassette support keeps working.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import zlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister
from vcr.serialize import deserialize as vcr_deserialize
from vcr.serialize import serialize as vcr_serialize
from vcr.serializers import jsonserializer, yamlserializer

from llmcassette._vcr import bridge as vcr_bridge
from llmcassette._vcr import serializer as jsonl
from llmcassette._vcr import tempfiles
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette import vcrpy_files
from llmcassette.cassette.jsonl import Cassette
from llmcassette.errors import (
    CassetteFormatError,
    CassetteLockError,
    command_for_test,
    shown_path,
)

if TYPE_CHECKING:
    from filelock import FileLock

    from llmcassette._vcr.session_saves import SessionSaves
    from llmcassette.config import Expiry
    from llmcassette.matching.matchers import LlmBody
    from llmcassette.matching.report import Context

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"  # <cassette>.lock, beside the cassette; never commit it
LOCK_TIMEOUT = 60.0  # seconds a save waits for another process's save of the same cassette

# The interactions recorded since the cassette was loaded, set by ``saving`` around vcrpy's
# save (llmcassette._vcr.fixes): what a save adds to a file another process changed.
_NEW_INTERACTIONS: ContextVar[list[tuple[Any, Any]] | None] = ContextVar(
    "llmcassette_new_interactions", default=None
)


@contextlib.contextmanager
def saving(new: list[tuple[Any, Any]]) -> Iterator[None]:
    """Saves inside this block know which interactions (request, response) are new."""
    token = _NEW_INTERACTIONS.set(list(new))
    try:
        yield
    finally:
        _NEW_INTERACTIONS.reset(token)


def lock_path(path: Path) -> Path:
    """The lock file of cassette ``path``."""
    return path.with_name(path.name + LOCK_SUFFIX)


@contextlib.contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[int | None]:
    """Hold the lock of cassette ``path``; yield the pid of the process that held it last
    (known when that process was killed while it held the lock; None otherwise).

    ``CassetteLockError`` (naming the holder's pid) when it is not free within ``timeout``.
    """
    # Imported by the first save: a run that only replays never locks, and filelock's
    # modules would add about 0.6 MB to every replaying process.
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock_file = lock_path(path)
    lock = FileLock(os.fspath(lock_file), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise CassetteLockError(
            path,
            lock_file,
            _holder(lock, lock_file),
            f"another process has been saving this cassette for more than {timeout:g}s",
        ) from None
    try:
        last = _holder(lock, lock_file)
        _note_holder(lock, lock_file)
        yield last
    finally:
        # Removed while still held: a process waiting on this inode finds it unlinked once
        # it gets the lock and takes a new one (filelock >= 4 checks st_nlink), so the file
        # does not stay beside the cassette. Where a held file cannot be removed it stays.
        with contextlib.suppress(OSError):
            lock_file.unlink()
        lock.release()


def _holder(lock: FileLock, lock_file: Path) -> int | None:
    """The pid written in the lock file (by filelock's soft fallback, or by ``_note_holder``)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        pid = lock.pid  # soft fallback only: filelock's marker
        return pid if isinstance(pid, int) else None
    try:
        text = lock_file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _note_holder(lock: FileLock, lock_file: Path) -> None:
    """Write this pid into a flock lock file (its content is free; filelock keeps the file)."""
    try:
        _ = lock.pid
    except AttributeError:
        pass  # a native lock: the content is ours to use
    else:
        return  # filelock's soft-fallback marker holds the pid already
    with contextlib.suppress(OSError):
        fd = os.open(lock_file, os.O_WRONLY)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        finally:
            os.close(fd)


def _digest(data: bytes | None) -> str | None:
    """What a save compares to see whether the file changed since it was loaded: its
    length and CRC-32. A checksum against accidents, not an adversary (every cassette
    loaded is summed, half the time of a SHA-256 of it)."""
    if data is None or not data or data.isspace():
        return None
    return f"{len(data)}:{zlib.crc32(data):08x}"


def _read_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except OSError:
        return None


# vcrpy cassettes that replay as they are when no .jsonl cassette exists yet.
LEGACY_SERIALIZERS: dict[str, Any] = {
    ".yaml": yamlserializer,
    ".yml": yamlserializer,
    ".json": jsonserializer,
}


@dataclass
class CassetteUse:
    """A cassette file a test loaded: what the re-recording workflow needs to know about it.

    ``format_version`` is the version the file was written in, before any migration (0 for
    a vcrpy cassette replayed in its place); ``expired`` is set when it was past ``max_age``.
    """

    path: str
    created_at: str | None
    format_version: int
    expired: bool = False


class Persister:
    """Load and save llmcassette cassettes; delegate every other serializer to ``fallback``.

    ``swap_suffix`` (used by the pytest plugin) maps the path pytest-recording computed for
    its default YAML suffix onto the ``.jsonl`` file. ``rewrite`` ignores what the cassette
    holds so everything is recorded again (the old file is still read, to keep the lines of
    unchanged interactions identical). ``expiry`` (``llmcassette.config.Expiry``) checks the
    age of the cassette loaded; ``record_errors`` keeps responses with an error status
    (llmcassette._vcr.save_policy reads it). ``used`` lists the cassette files loaded.
    """

    def __init__(
        self,
        fallback: Any = FilesystemPersister,
        *,
        swap_suffix: str | None = None,
        rewrite: bool = False,
        redactor: Any = None,
        expiry: Expiry | None = None,
        record_errors: bool = False,
        serializers: Mapping[str, Any] | None = None,
    ) -> None:
        self.fallback = fallback
        # The VCR's serializers by name, as it holds them: a suite that registered its own
        # "yaml" serializer (pydantic-ai does) wrote its vcrpy cassettes with it.
        self.serializers: Mapping[str, Any] = {} if serializers is None else serializers
        self.swap_suffix = swap_suffix
        self.rewrite = rewrite
        self.expiry = expiry
        self.record_errors = record_errors
        self.used: list[CassetteUse] = []
        # How many of the interactions loaded for a cassette path came from its own file:
        # the rest are other tests' cassettes a marker named (``@pytest.mark.vcr("x.jsonl")``).
        self.owned: dict[str, int] = {}
        # Those other cassettes, per cassette path: each file read and how many
        # interactions it gave, in the order they follow the cassette's own (``loaded_from``).
        self.named: dict[str, list[tuple[str, int]]] = {}
        # A missing .jsonl cassette whose vcrpy cassette beside it was read instead, until
        # a save writes the .jsonl (``display_path``).
        self.read_instead: dict[str, str] = {}
        # The current directory when a cassette was last loaded, which messages show the
        # cassette's path relative to (``shown_file``); asking again inside a request
        # would be a blocking call on an event loop.
        self.cwd: str | None = None
        # Expired cassettes being recorded again: their created_at restarts when saved.
        self._renewing: set[str] = set()
        # Under ``rewrite``, a cassette recorded longer ago than this many seconds gets the
        # save's time as its created_at (``python -m llmcassette.workflow --older-than``):
        # kept, it would be chosen again by the next run, and the next.
        self.renew_older_than: float | None = None
        # Set by the pytest plugin under rewrite and all: the cassettes this pytest session
        # saved already. A later save of one of them adds to it instead of replacing it
        # (tests sharing one cassette file, see _merge).
        self.session_saves: SessionSaves | None = None
        # llmcassette.redact.Redactor: applied to every line written, then checked (fail closed).
        self.redactor = redactor
        self._headers: dict[str, dict[str, Any]] = {}
        # The cassette files as loaded (a digest, None when absent or empty): a save that
        # finds something else was preceded by another process's save (merged, see _merge).
        self._loaded: dict[str, str | None] = {}
        #: Set by ``use_cassette`` in record mode ``"none"``, which never saves: the files
        #: loaded are not summed (a CRC-32 of every byte, 4% of loading a corpus). A VCR
        #: of the user's own may open a cassette in another mode than it was configured in.
        self.replay_only = False
        self.lock_timeout = LOCK_TIMEOUT
        # What a body difference of a vcrpy-recorded interaction leads to (llmcassette._vcr.drift).
        self.drift = "warn"
        # Who uses the cassette (``configure``'s ``context``), for the hints of mismatches.
        self.context: Context = "vcr"
        # The pytest node id of the test using the cassette (the pytest plugin sets it):
        # hints that say to record again give the command for this test (rerecord_command).
        self.test: str | None = None
        # The configured ``llm_body`` matcher (``configure``): what tells that difference
        # when the suite's ``match_on`` leaves the body out.
        self.body_matcher: LlmBody | None = None

    def resolve(self, cassette_path: str | os.PathLike[str]) -> Path:
        """The ``.jsonl`` file a cassette path stands for; a vcrpy file's name stands for the
        ``.jsonl`` beside it once it is gone (``llmcassette convert``, the YAML deleted)."""
        path = Path(cassette_path)
        if self.swap_suffix and path.name.endswith(self.swap_suffix):
            return path.with_name(path.name[: -len(self.swap_suffix)] + jsonl.SUFFIX)
        if path.suffix in LEGACY_SERIALIZERS and not path.exists():
            converted = path.with_suffix(jsonl.SUFFIX)
            if converted.exists():
                return converted
        return path

    # vcrpy calls load_cassette(path, serializer=...) and save_cassette(path, dict, serializer=...)

    def load_cassette(
        self, cassette_path: str | os.PathLike[str], serializer: Any
    ) -> tuple[Any, ...]:
        """Return ``(requests, responses)`` or raise vcrpy's ``CassetteNotFoundError``."""
        self.cwd = os.getcwd()
        if serializer is not jsonl:
            read = tuple(self.fallback.load_cassette(cassette_path, serializer=serializer))
            if self.fallback not in (FilesystemPersister, None) and read:
                # A persister of the project's own read it (langchain's suites): who recorded
                # it cannot be told, so it replays as vcrpy's would, its drift reported.
                mark_legacy(read[0], os.fspath(cassette_path))
            return read
        path = self.resolve(cassette_path)
        # What the file held when loaded (``_load_one`` hashes the bytes it parses).
        self._loaded[os.fspath(path)] = _read_digest(path) if self.rewrite else None
        requests: list[Any] = []
        responses: list[Any] = []
        metadata: dict[str, Any] = {}
        found = False
        if not self.rewrite:
            loaded = self._load_one(path, main=True)
            if loaded is not None:
                found = True
                requests, responses, metadata = loaded
        self.owned[os.fspath(path)] = len(requests)
        named: list[tuple[str, int]] = []
        for extra in getattr(self.fallback, "extra_paths", ()):
            # A marker names another test's cassette as pytest-recording would (x.yaml):
            # its .jsonl, once converted or recorded, else the vcrpy file itself.
            extra_path = self.resolve(extra)
            loaded = self._load_one(extra_path)
            if loaded is not None:
                found = True
                requests += loaded[0]
                responses += loaded[1]
                named.append((_file_read(extra_path), len(loaded[0])))
        self.named[os.fspath(path)] = named
        if not found:
            raise CassetteNotFoundError()
        return (requests, responses, metadata) if metadata else (requests, responses)

    def _load_one(
        self, path: Path, *, main: bool = False
    ) -> tuple[list[Any], list[Any], dict[str, Any]] | None:
        """Load one file; ``main`` is the test's own cassette (the one expiry applies to)."""
        summed = main and not self.replay_only
        if path.suffix in LEGACY_SERIALIZERS and not _holds_jsonl(path):
            if summed:
                self._loaded[os.fspath(path)] = _read_digest(path)
            return self._legacy(path, main)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return self._load_legacy_sibling(path, main)
        if summed:
            self._loaded[os.fspath(path)] = _digest(data)
        if not data or data.isspace():
            _refuse_cut_short_convert(path, None)
            return None  # an empty file is recorded again, as vcrpy does
        raw_lines = cassette_file.split_lines(data, path)
        del data  # held once: as its lines, then as what they hold
        try:
            cassette = cassette_file.read_lines(raw_lines, path)
        except CassetteFormatError as error:
            _refuse_cut_short_convert(path, error)
            raise
        if main and not self._note_use(path, cassette.header, cassette.written_version):
            return None  # expired, and recorded again from scratch
        return self._to_vcr(path, cassette)

    def _legacy(self, path: Path, main: bool) -> tuple[list[Any], list[Any], dict[str, Any]] | None:
        loaded = _load_legacy(path, self._legacy_serializer(path.suffix))
        if loaded is not None:
            mark_legacy(loaded[0], os.fspath(path))
            if main:
                self.used.append(CassetteUse(os.fspath(path), None, 0))
        return loaded

    def _legacy_serializer(self, suffix: str) -> Any:
        """The serializer a vcrpy cassette with this suffix is read with: the one the VCR
        has registered under that name if any, else vcrpy's own."""
        registered = self.serializers.get("json" if suffix == ".json" else "yaml")
        return LEGACY_SERIALIZERS[suffix] if registered is None else registered

    def _note_use(self, path: Path, header: dict[str, Any], version: int) -> bool:
        """Remember the cassette and apply expiry; False when it is to be recorded again."""
        created_at = header.get("created_at")
        use = CassetteUse(
            os.fspath(path), created_at if isinstance(created_at, str) else None, version
        )
        self.used.append(use)
        if self.expiry is None or not self.expiry.is_expired(header):
            return True
        use.expired = True
        if self.expiry.rerecords():
            log.info("llmcassette: %s expired; recording it again", path)
            self._renewing.add(os.fspath(path))
            return False
        self.expiry.enforce(path, header, rerecord_command(self))
        return True

    def _to_vcr(
        self, path: Path, cassette: Cassette
    ) -> tuple[list[Any], list[Any], dict[str, Any]]:
        self._headers[os.fspath(path)] = cassette.header
        requests: list[Any] = []
        responses: list[Any] = []
        redactor = self.redactor
        if redactor is not None and not redactor.already_applied(cassette.header):
            redactor = None
        for item in cassette.interactions:
            request, response = vcr_bridge.to_vcr(item)
            request.redacted_by = redactor
            requests.append(request)
            responses.append(response)
        if cassette.header.get("converted_from"):
            mark_legacy(requests, os.fspath(path))  # vcrpy recorded it: no body was compared
        metadata = cassette.header.get("metadata")
        return requests, responses, metadata if isinstance(metadata, dict) else {}

    def _load_legacy_sibling(
        self, path: Path, main: bool = False
    ) -> tuple[list[Any], list[Any], dict[str, Any]] | None:
        if path.suffix != jsonl.SUFFIX:
            return None
        for suffix in LEGACY_SERIALIZERS:
            legacy = path.with_suffix(suffix)
            if legacy.is_file():
                log.info(
                    "llmcassette: %s does not exist; replaying vcrpy cassette %s", path, legacy
                )
                loaded = self._legacy(legacy, main)
                if main and loaded is not None:
                    self.read_instead[os.fspath(path)] = os.fspath(legacy)
                return loaded
        return None

    def save_cassette(
        self, cassette_path: str | os.PathLike[str], cassette_dict: dict[str, Any], serializer: Any
    ) -> None:
        """Write the cassette atomically; refuse to replace a file that cannot be read."""
        redactor = self.redactor
        if redactor is not None and redactor.config.enabled and redactor.config.fail_closed:
            from llmcassette.redact.scan import check_path

            # Before its lock and temporary files, which are named after it too.
            check_path(redactor.rules, self._target(cassette_path, serializer))
        if serializer is jsonl:
            self._save(self.resolve(cassette_path), cassette_dict)
        elif self.redactor is not None and self.redactor.config.enabled:
            self._save_vcrpy(Path(cassette_path), cassette_dict, serializer)
        else:
            self.fallback.save_cassette(cassette_path, cassette_dict, serializer=serializer)

    def _target(self, cassette_path: str | os.PathLike[str], serializer: Any) -> Path:
        """The file ``save_cassette`` writes for ``cassette_path``."""
        return self.resolve(cassette_path) if serializer is jsonl else Path(cassette_path)

    def _save_vcrpy(self, path: Path, cassette_dict: dict[str, Any], serializer: Any) -> None:
        """Save a cassette in a vcrpy serializer (YAML) with the same promise as JSONL: the
        responses redacted (requests were, as they were recorded), the text scanned."""
        redactor = self.redactor
        responses = [
            redactor.vcr_response(response, getattr(request, "uri", None))
            for request, response in zip(
                cassette_dict["requests"], cassette_dict["responses"], strict=True
            )
        ]
        # Again, now that the responses taught the redactor their credentials: a token a
        # response handed out and a later request sent back (an OAuth access token in a
        # path or a body) was not known yet when that request was redacted, as it was sent.
        requests = [redactor.vcr_request(_copied(request)) for request in cassette_dict["requests"]]
        redacted = {**cassette_dict, "requests": requests, "responses": responses}
        handed = _Handed(serializer)
        text = vcr_serialize(redacted, handed)
        if redactor.config.fail_closed:
            from llmcassette.redact.scan import check_vcrpy_data, check_vcrpy_text

            check_vcrpy_text(redactor.rules, text, path)
            if serializer not in (yamlserializer, jsonserializer):
                # A serializer of the user's own: its text may not show what it holds (a
                # compressed or encoded file), so what it was handed is read too.
                check_vcrpy_data(redactor.rules, handed.data, path)
        fallback = self.fallback
        if getattr(fallback, "save_cassette", None) is not FilesystemPersister.save_cassette:
            # a persister of the user's own (a bucket, a database, a save that trims what it
            # writes): it writes what was redacted
            fallback.save_cassette(path, redacted, serializer=serializer)
            return
        with locked(path, self.lock_timeout):
            tempfiles.remove_stale(path)
            tempfiles.atomic_write(path, text.encode("utf-8"))

    def _save(self, path: Path, cassette_dict: dict[str, Any]) -> None:
        """Under the cassette's lock: clean up after killed saves, merge, write."""
        with locked(path, self.lock_timeout) as last_pid:
            removed = tempfiles.remove_stale(path)
            if removed:
                log.info("llmcassette: removed temporary files of a killed save: %s", removed)
            written = self._save_locked(path, cassette_dict, last_pid)
            self._loaded[os.fspath(path)] = _digest(written)
            if self.session_saves is not None:
                self.session_saves.note_saved(path)
            self.read_instead.pop(os.fspath(path), None)

    def _merge(
        self,
        path: Path,
        cassette_dict: dict[str, Any],
        previous: Cassette | None,
        old_text: str | None,
        last_pid: int | None,
    ) -> dict[str, Any]:
        """What to save when another process saved ``path`` after this one loaded it, or
        when another test of this pytest session saved it already under rewrite or all.

        The file as it is now, then the interactions this run recorded: nothing either
        process recorded is lost, in every record mode (in ``all`` the result is every run
        that saved since this one loaded, then this run). Tests sharing one cassette in a
        session that records it from scratch leave every test's calls: the session's first
        save replaces the file, the later ones add to it, one test after another as well as
        in parallel. When the new interactions are not known (a save outside
        ``use_cassette``), ``CassetteLockError`` instead of a guess.
        """
        key = os.fspath(path)
        if key not in self._loaded or previous is None:
            return cassette_dict
        now = _digest(None if old_text is None else old_text.encode("utf-8"))
        saved_in_session = self.session_saves is not None and self.session_saves.saved(path)
        if now == self._loaded[key] and not saved_in_session:
            return cassette_dict
        new = _NEW_INTERACTIONS.get()
        if new is None:
            raise CassetteLockError(
                path,
                lock_path(path),
                last_pid,
                "another process saved this cassette after it was loaded here",
            )
        requests, responses, _ = self._to_vcr(path, previous)
        log.info(
            "llmcassette: %s was saved by %s; adding %d new interaction(s) to its %d",
            path,
            "another test of this session"
            if saved_in_session
            else f"process {last_pid} while this one recorded it",
            len(new),
            len(requests),
        )
        merged = dict(cassette_dict)
        merged["requests"] = requests + [request for request, _ in new]
        merged["responses"] = responses + [response for _, response in new]
        return merged

    def _save_locked(
        self, path: Path, cassette_dict: dict[str, Any], last_pid: int | None
    ) -> bytes | None:
        """Write the cassette; return the bytes the file now holds (None if left absent)."""
        previous, old_text = self._previous(path)
        cassette_dict = self._merge(path, cassette_dict, previous, old_text, last_pid)
        items = []
        for request, response in zip(
            cassette_dict["requests"], cassette_dict["responses"], strict=True
        ):
            item = vcr_bridge.from_vcr(request, response)
            if self.redactor is not None:
                # Recorded just now or loaded, a request these rules redacted is not redone.
                item.request_redacted = getattr(request, "redacted_by", None) is self.redactor
            items.append(item)
        created_at = None
        if previous is not None:
            created_at = previous.header.get("created_at")
        elif os.fspath(path) in self._headers:
            created_at = self._headers[os.fspath(path)].get("created_at")
        elif os.fspath(path) in self.read_instead:  # a vcrpy cassette's traffic, and more
            created_at = vcrpy_files.recorded_on(item.response_headers for item in items)
        if self._renews(path, previous) or self._too_old_to_keep(created_at):
            created_at = None  # recorded again because it was too old: its age restarts
        header = cassette_file.new_header(jsonl.RECORDED_BY, created_at)
        if cassette_dict.get("metadata"):
            header["metadata"] = cassette_dict["metadata"]
        # --- redaction (llmcassette.redact): redact every line, refuse to write a leak
        redactor = self.redactor
        if redactor is not None and not redactor.config.enabled:
            redactor = None
        if redactor is not None:
            header["redaction"] = redactor.header_field()
        text = cassette_file.write(
            Cassette(header, jsonl.stamp(items)), previous, redaction=redactor
        )
        if redactor is not None and redactor.config.fail_closed:
            from llmcassette.redact.scan import check_text

            # A second look, on its own: the rules against every line about to be written.
            check_text(redactor.rules, text, path)
        # --- end redaction
        data = text.encode("utf-8")
        if text == old_text:
            return data
        tempfiles.atomic_write(path, data)
        return data

    def _renews(self, path: Path, previous: Cassette | None) -> bool:
        """Whether this save records an expired cassette again (so ``created_at`` restarts)."""
        if os.fspath(path) in self._renewing:
            return True
        return (
            self.rewrite
            and previous is not None
            and self.expiry is not None
            and self.expiry.is_expired(previous.header)
        )

    def _too_old_to_keep(self, created_at: object) -> bool:
        """Whether a rewrite asked to renew cassettes past ``renew_older_than`` meets one."""
        if not self.rewrite or self.renew_older_than is None:
            return False
        from llmcassette.config import age_of

        age = age_of({"created_at": created_at})
        return age is not None and age > self.renew_older_than

    def _previous(self, path: Path) -> tuple[Cassette | None, str | None]:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None, None
        if not data.strip():
            return None, None
        try:
            previous = cassette_file.read(data, path)
            return previous, data.decode("utf-8")
        except CassetteFormatError as error:
            if self.rewrite:
                return None, None  # re-recording on purpose replaces a broken file
            raise CassetteFormatError(
                error.path,
                error.line,
                f"{error.problem}; refusing to overwrite a cassette that cannot be read",
                "fix or delete the file, or re-record it with --record-mode=rewrite",
            ) from error


class _Handed:
    """A vcrpy serializer that keeps the data it was handed to serialize."""

    def __init__(self, serializer: Any) -> None:
        self.serializer = serializer
        self.data: Any = None

    def serialize(self, data: Any) -> Any:
        self.data = data
        return self.serializer.serialize(data)


def _copied(request: Any) -> Any:
    """A deep copy of a vcrpy request, sharing the redactor it is marked with
    (``redacted_by``): a redactor holds a lock, which cannot be copied."""
    by = getattr(request, "redacted_by", None)
    return copy.deepcopy(request, {} if by is None else {id(by): by})


#: Set on a request loaded from a vcrpy cassette (or a .jsonl converted from one): the file.
LEGACY_ATTRIBUTE = "llmcassette_legacy_file"


def is_legacy(request: Any) -> bool:
    """Whether ``request`` was loaded from a vcrpy cassette (or one converted from it)."""
    return getattr(request, LEGACY_ATTRIBUTE, None) is not None


def mark_legacy(requests: list[Any], file: str) -> None:
    """Note that ``requests`` were recorded by vcrpy, which never compared bodies."""
    for request in requests:
        setattr(request, LEGACY_ATTRIBUTE, file)


def loaded_from(cassette: Any) -> list[tuple[str, int]]:
    """The other tests' cassettes a vcrpy cassette loaded after its own interactions (a
    marker named them): each file and how many interactions it gave, in order."""
    persister = getattr(cassette, "_persister", None)
    path = getattr(cassette, "_path", None)
    if not isinstance(persister, Persister) or path is None:
        return []
    return persister.named.get(os.fspath(persister.resolve(path)), [])


def _file_read(path: Path) -> str:
    """The file ``_load_one`` read for ``path``: itself, or the vcrpy cassette beside it."""
    if path.suffix == jsonl.SUFFIX and not path.is_file():
        for suffix in LEGACY_SERIALIZERS:
            if path.with_suffix(suffix).is_file():
                return os.fspath(path.with_suffix(suffix))
    return os.fspath(path)


def own_file(cassette: Any) -> Path | None:
    """The ``.jsonl`` file a vcrpy cassette saves to, when llmcassette's persister and
    serializer write it (None for a cassette kept in another serializer)."""
    persister = getattr(cassette, "_persister", None)
    path = getattr(cassette, "_path", None)
    if not isinstance(persister, Persister) or path is None:
        return None
    if getattr(cassette, "_serializer", None) is not jsonl:
        return None
    return persister.resolve(path)


def remove_unrecorded(path: Path, saves: SessionSaves, timeout: float = LOCK_TIMEOUT) -> bool:
    """Remove cassette ``path``, recorded from scratch (rewrite, all) by the one test of the
    session ``saves`` names that uses it, which passed without making a call: what the file
    holds are calls the code no longer makes, and kept they fail every replay as unused.

    Not when a save of this session wrote the file. True when a file was removed.
    """
    if not path.is_file():
        return False
    with locked(path, timeout):
        if saves.saved(path):
            return False
        tempfiles.remove_stale(path)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
    log.info("llmcassette: removed %s: its test passed without recording a call", path)
    return True


def never_recorded(cassette: Any) -> bool:
    """Whether a vcrpy cassette found no file to read (its own, or a vcrpy cassette it
    replays instead) and has recorded nothing since: a cassette that does not exist yet."""
    return not getattr(cassette, "rewound", False) and not len(cassette)


def owned_count(cassette: Any) -> int | None:
    """How many of a vcrpy cassette's loaded interactions came from its own file (None:
    not known, all of them count)."""
    persister = getattr(cassette, "_persister", None)
    path = getattr(cassette, "_path", None)
    if not isinstance(persister, Persister) or path is None:
        return None
    return persister.owned.get(os.fspath(persister.resolve(path)))


def display_path(cassette: Any) -> str | None:
    """The file a vcrpy cassette is read from and written to (pytest-recording names it
    .yaml, this persister may read and write .jsonl instead)."""
    path = getattr(cassette, "_path", None)
    if path is None:
        return None
    persister = getattr(cassette, "_persister", None)
    if isinstance(persister, Persister) and getattr(cassette, "_serializer", None) is jsonl:
        resolved = os.fspath(persister.resolve(path))
        # Read from the vcrpy cassette beside it (test_x.yaml): that is the file, until a
        # recording writes the .jsonl. Not asked of the filesystem: a mismatch names the
        # file inside a request, where a blocking call on an event loop is an error to
        # some suites (pydantic-ai's BlockBuster).
        return persister.read_instead.get(resolved, resolved)
    return str(os.fspath(path))


def shown_file(cassette: Any) -> str | None:
    """``display_path`` as messages show it (``shown_for``)."""
    path = display_path(cassette)
    return None if path is None else shown_for(cassette, path)


def shown_for(cassette: Any, path: str) -> str:
    """A file ``path`` that a message about ``cassette`` names, relative to the current
    directory when it is under it (``errors.shown_path``), with no call to the operating
    system: messages are made inside requests too."""
    cwd = getattr(getattr(cassette, "_persister", None), "cwd", None)
    return shown_path(path, cwd) if isinstance(cwd, str) else path


def _holds_jsonl(path: Path) -> bool:
    """Whether a file with a vcrpy suffix was written by llmcassette.

    ``use_cassette("x.yaml")`` without a suffix swap saves JSONL under that name; reading
    it back as YAML would fail, so the first line decides.
    """
    try:
        with path.open("rb") as handle:
            first = handle.readline()
        record = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("format") == cassette_file.FORMAT_MARKER


def _unreadable(error: Exception) -> str:
    """Why vcrpy could not read a cassette, without the file's values: a YAML error's marks
    quote its lines, and a value vcrpy refuses (a URL whose userinfo holds "[...]") is
    quoted by its error, a credential maybe. A parse error says its problem
    (``parse_problem``), a missing field its name; anything else is not shown."""
    if vcrpy_files.yaml_error(error) is not None or isinstance(error, json.JSONDecodeError):
        return vcrpy_files.parse_problem(error)
    if isinstance(error, KeyError):
        return f"no field {error}"
    if isinstance(error, vcrpy_files.AliasBombError):
        return str(error)
    return "a value in it is in no shape vcrpy reads (not shown: it may be a credential)"


def _refuse_cut_short_convert(path: Path, error: CassetteFormatError | None) -> None:
    """An empty (``error`` None) or unreadable ``x.jsonl`` beside a vcrpy ``x.yaml`` is
    what ``llmcassette convert`` cut short by a crash or power cut may leave: never
    recorded again in its place nor replayed, but refused, saying how to convert again."""
    legacy = vcrpy_files.source_beside(path)
    if legacy is None:
        return
    fix = vcrpy_files.convert_again(path, legacy)
    if error is None:
        raise CassetteFormatError(path, None, vcrpy_files.empty_beside(legacy), fix)
    if type(error) is CassetteFormatError:  # a subclass keeps its own code and hint
        hint = f"{error.hint}; if it was converted from {legacy.name}: {fix}" if error.hint else fix
        raise CassetteFormatError(error.path, error.line, error.problem, hint) from error


def _load_legacy(path: Path, serializer: Any) -> tuple[list[Any], list[Any], dict[str, Any]] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        problem = f"vcrpy cassette is not UTF-8 text ({error})"
        raise CassetteFormatError(path, None, problem) from None
    if not text.strip():
        return None
    try:
        if serializer is yamlserializer and "*" in text:  # aliases: not too many, no loop
            vcrpy_files.parse(text, json_file=False)
        requests, responses, *rest = vcr_deserialize(text, serializer)
    except Exception as error:
        raise CassetteFormatError(
            path,
            vcrpy_files.error_line(error),
            f"cannot read this vcrpy cassette: {type(error).__name__}: {_unreadable(error)}",
            "fix the file, or delete it to record the test again",
        ) from None
    return list(requests), list(responses), rest[0] if rest else {}


def node_id_of(cassette: Any) -> str | None:
    """The pytest node id of the test using ``cassette``, when the pytest plugin set it."""
    persister = getattr(cassette, "_persister", None)
    return persister.test if isinstance(persister, Persister) else None


def rerecord_command(persister: Any) -> str | None:
    """The command that records again the test using ``persister``'s cassettes, when the
    pytest plugin named the test: ``--llmcassette-record-mode`` where the test's own
    record_mode wins over ``--record-mode``."""
    if not isinstance(persister, Persister) or persister.test is None:
        return None
    return command_for_test(persister.test, "rewrite", forced=persister.context == "pytest_options")
