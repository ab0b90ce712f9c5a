"""How every ``llmcassette`` command finds the files it is given and opens each one.

``cassettes(paths, command, kinds)`` is the one loop of the commands: files named on the
command line are opened as they are, folders are searched recursively for the same
``SUFFIXES``, and each file comes back either ``Opened`` (read, decoded and classified) or
as a ``CassetteFormatError`` that names the file (and line, when known) and says what is
wrong with it. A folder or file that cannot be read is reported, never skipped; a folder in
which nothing was found says so on stderr.

``open_file`` classifies one file:

- unreadable (``UnreadableError``, a ``CassetteFormatError``: exit 2 in every command);
- empty, binary (not UTF-8 text, or NUL bytes), damaged gzip data;
- llmcassette JSONL (read strictly: truncated or damaged files fail with their line);
- a vcrpy cassette (YAML or JSON, also gzip-compressed): a mapping with an
  ``interactions`` list, or with parallel ``requests`` and ``responses`` lists (read as
  interactions: ``Opened.vcrpy`` always has ``interactions``); malformed YAML/JSON fails
  with its line;
- an overrides sidecar (``*.overrides.json``), which only ``check`` validates;
- anything else is "not a cassette" (skipped quietly when it was found in a folder and
  parses as JSON or YAML: folders of cassettes also hold other data files).

Nothing here imports vcrpy.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from llmcassette.cli.output import terminal_safe
from llmcassette.errors import CassetteFormatError
from llmcassette.faults.sidecar import SUFFIX as SIDECAR_SUFFIX

if TYPE_CHECKING:
    from llmcassette.cassette.jsonl import Cassette

SUFFIXES = (".jsonl", ".yaml", ".yml", ".json")  # what a folder is searched for
# ... also gzip-compressed (langchain's ``*.yaml.gz`` cassettes).
COMPRESSED_SUFFIXES = tuple(suffix + ".gz" for suffix in SUFFIXES)

JSONL = "llmcassette JSONL cassette"
VCRPY = "vcrpy cassette"
SIDECAR = "overrides sidecar"
ALL_KINDS = (JSONL, VCRPY, SIDECAR)

R = TypeVar("R")


class UnreadableError(CassetteFormatError):
    """A file or folder that cannot be opened at all (permissions, missing, a device)."""

    code = "LC103 unreadable"


class EmptyFileError(CassetteFormatError):
    """A file with nothing (or only white space) in it."""

    code = "LC104 empty-file"


@dataclass
class Opened:
    """One file, read and classified."""

    path: Path
    kind: str  # JSONL, VCRPY or SIDECAR
    data: bytes  # the bytes on disk
    text: str  # decoded (and decompressed) text
    cassette: Cassette | None = None  # JSONL: read strictly
    vcrpy: dict[str, Any] | None = None  # VCRPY: the parsed file
    compressed: bool = False  # gzip on disk


# Indirections the tests replace to simulate unreadable files and folders (root ignores
# file modes, so chmod 000 cannot).
def _read_bytes(path: Path) -> bytes:
    return path.read_bytes()


def _list_dir(path: Path) -> list[os.DirEntry[str]]:
    with os.scandir(path) as entries:
        return list(entries)


def _unreadable(
    path: str | os.PathLike[str], error: OSError, what: str = "read"
) -> UnreadableError:
    return UnreadableError(path, None, f"cannot {what}: {error.strerror or error}")


def _binary(name: str, raw: bytes, start: int) -> CassetteFormatError:
    line = raw.count(b"\n", 0, start) + 1
    column = start - (raw.rfind(b"\n", 0, start) + 1) + 1
    return CassetteFormatError(
        name,
        line,
        f"binary data, not a cassette (byte {raw[start]:#04x} at column {column} is not "
        + ("text)" if raw[start] == 0 else "UTF-8 text)"),
        "restore the file from version control, or re-encode it as UTF-8",
    )


def _decode(name: str, raw: bytes) -> str:
    nul = raw.find(b"\0")
    if nul >= 0:
        raise _binary(name, raw, nul)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _binary(name, raw, error.start) from None


def read_text(path: Path) -> str:
    """The text of any file, as ``show --raw`` prints it: an empty file is "", a file that
    cannot be read or is not UTF-8 text raises ``CassetteFormatError``."""
    name = os.fspath(path)
    try:
        data = _read_bytes(path)
    except OSError as error:
        raise _unreadable(name, error) from None
    return _decode(name, data)


def _starts_as_jsonl(text: str) -> bool:
    first = text.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
    return first.startswith("{") and '"llmcassette"' in first and '"format"' in first


def _parse_error(name: str, error: Exception, json_file: bool) -> CassetteFormatError:
    from llmcassette.cassette.vcrpy_files import AliasBombError, error_line, parse_problem

    what = "JSON" if json_file else "YAML"
    detail = parse_problem(error)  # never the file's text a YAML error quotes
    return CassetteFormatError(
        name,
        error_line(error),
        detail if isinstance(error, AliasBombError) else f"not valid {what}: {detail}",
        "restore the file from version control, or record the cassette again",
    )


def open_file(path: Path, *, in_folder: bool = False) -> Opened | None:
    """``path`` read and classified; None for a data file found in a folder (``in_folder``)
    that parses but is no cassette. Raises ``CassetteFormatError`` naming the file."""
    from llmcassette.cassette import jsonl as cassette_file
    from llmcassette.cassette import vcrpy_files

    name = os.fspath(path)
    try:
        data = _read_bytes(path)
    except OSError as error:
        raise _unreadable(name, error) from None
    raw, compressed = data, data[:2] == b"\x1f\x8b"
    if compressed:
        from llmcassette.cassette.compression import DecodedTooLarge, gunzip

        try:
            raw = gunzip(data)
        except DecodedTooLarge as error:
            raise CassetteFormatError(name, None, f"the file {error.problem}", error.hint) from None
        except (OSError, EOFError, zlib.error) as error:
            raise CassetteFormatError(name, None, f"damaged gzip data ({error})") from None
    if not raw.strip():
        source = vcrpy_files.source_beside(path)
        if source is not None:  # what a convert cut short leaves, not a cassette to record
            fix = vcrpy_files.convert_again(path, source)
            raise EmptyFileError(name, None, vcrpy_files.empty_beside(source), fix)
        raise EmptyFileError(
            name, None, "the file is empty, not a cassette", "delete it to record it again"
        )
    text = _decode(name, raw)
    base = name[:-3] if name.endswith(".gz") else name
    if base.endswith(SIDECAR_SUFFIX):
        return Opened(path, SIDECAR, data, text, compressed=compressed)
    if base.endswith(".jsonl") or _starts_as_jsonl(text):
        cassette = cassette_file.read(raw, name)  # strict: names the line that is wrong
        return Opened(path, JSONL, data, text, cassette=cassette, compressed=compressed)
    json_file = base.endswith(".json")
    try:
        loaded = vcrpy_files.parse(text, json_file=json_file)
    except Exception as error:  # YAMLError, JSONDecodeError, RecursionError, ...
        if in_folder and "interactions" not in text and "responses" not in text:
            return None  # a data file of another kind (mkdocs.yml's !!python tags), skipped
        raise _parse_error(name, error, json_file) from None
    if vcrpy_files.layout(loaded) is not None:
        interactions = vcrpy_files.interactions_of(loaded)
        as_read = {**loaded, "interactions": interactions}
        return Opened(path, VCRPY, data, text, vcrpy=as_read, compressed=compressed)
    if in_folder:
        return None
    raise CassetteFormatError(
        name,
        None,
        "not a cassette: neither llmcassette JSONL nor a vcrpy cassette (a mapping with an "
        "'interactions' list, or with 'requests' and 'responses' lists)",
    )


def files_under(
    folder: Path, suffixes: Collection[str] = SUFFIXES + COMPRESSED_SUFFIXES
) -> Iterator[Path | UnreadableError]:
    """The files under ``folder`` (recursively, sorted, links to folders not followed) whose
    name ends in ``suffixes``, and an ``UnreadableError`` for each folder that cannot be
    listed."""
    endings = tuple(suffixes)
    found: list[tuple[str, Path | UnreadableError]] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            entries = _list_dir(current)
        except OSError as error:
            found.append((os.fspath(current), _unreadable(current, error, "list this folder")))
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                # A link to a folder is not followed (as find and git do not): it may lead
                # out of the tree, where migrate, heal and redact would write, or to itself.
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file()
            except OSError as error:
                found.append((entry.path, _unreadable(path, error)))
                continue
            if is_dir:
                pending.append(path)
            elif is_file and entry.name.endswith(endings):
                found.append((entry.path, path))
    found.sort(key=lambda item: Path(item[0]).parts)
    for _, item in found:
        yield item


def wrong_kind_problem(path: Path, kind: str, command: str) -> CassetteFormatError:
    """The problem of a file named on the command line that ``command`` does not take."""
    if kind == VCRPY and command == "convert":
        return CassetteFormatError(
            path,
            None,
            "already a vcrpy cassette",
            f"llmcassette convert {path} (without --to vcrpy-json) converts it to JSONL",
        )
    if kind == VCRPY:
        return CassetteFormatError(
            path,
            None,
            f"a vcrpy cassette; llmcassette {command} reads llmcassette JSONL cassettes",
            f"llmcassette convert {path} writes one",
        )
    if kind == JSONL and command == "convert":
        return CassetteFormatError(
            path,
            None,
            "already an llmcassette JSONL cassette",
            f"llmcassette convert --to vcrpy-json {path} converts it back to a vcrpy cassette",
        )
    return CassetteFormatError(path, None, f"an {kind}; llmcassette {command} does not read it")


@dataclass(frozen=True)
class Found:
    """A file to open: named on the command line (``folder`` None), or found in ``folder``."""

    path: Path
    folder: Path | None = None


@dataclass(frozen=True)
class FolderDone:
    """Comes after the files found in ``folder``: where none of them was taken, the
    command says so (``each_file``)."""

    folder: Path


def files_of(
    paths: Iterable[str | os.PathLike[str]],
) -> Iterator[Found | FolderDone | UnreadableError]:
    """The files of ``paths``: each file named, then each folder's files (``files_under``)
    and a ``FolderDone``; an ``UnreadableError`` for a folder that cannot be listed."""
    for raw in paths:
        given = Path(raw)
        if not given.is_dir():
            yield Found(given)
            continue
        for item in files_under(given):
            yield item if isinstance(item, CassetteFormatError) else Found(item, given)
        yield FolderDone(given)


def open_found(
    found: Found,
    command: str,
    kinds: Collection[str] = ALL_KINDS,
    wrong_kind: Callable[[Path, str, str], CassetteFormatError] = wrong_kind_problem,
) -> Opened | CassetteFormatError | None:
    """``found`` opened, or the problem that keeps it from being read; None for a file
    found in a folder that is not of ``kinds`` (left out). A file of another kind named on
    the command line is a problem (``wrong_kind``)."""
    try:
        opened = open_file(found.path, in_folder=found.folder is not None)
    except CassetteFormatError as error:
        return error
    if found.folder is not None:
        return opened if opened is not None and opened.kind in kinds else None
    assert opened is not None
    return opened if opened.kind in kinds else wrong_kind(found.path, opened.kind, command)


def cassettes(
    paths: Iterable[str | os.PathLike[str]],
    command: str,
    kinds: Collection[str] = ALL_KINDS,
    *,
    wrong_kind: Callable[[Path, str, str], CassetteFormatError] = wrong_kind_problem,
) -> Iterator[Opened | CassetteFormatError]:
    """Every file of ``paths`` that ``command`` takes (``kinds``), opened, or the problem
    that keeps it from being read (see ``open_found``). A folder in which nothing was found
    says so on stderr."""
    return each_file(
        paths,
        command,
        functools.partial(open_found, command=command, kinds=kinds, wrong_kind=wrong_kind),
    )


def each_file(
    paths: Iterable[str | os.PathLike[str]],
    command: str,
    work: Callable[[Found], R | None],
    *,
    jobs: int = 1,
) -> Iterator[R | UnreadableError]:
    """``work(found)`` for every file of ``paths`` (``files_of``), in their order, and the
    folders that cannot be listed; a None from ``work`` is left out (a file found in a
    folder that the command does not take). A folder none of whose files was taken says
    so on stderr.

    With ``jobs`` above 1 and enough work (``_mapped``), ``work`` runs in up to that many
    processes (it and what it returns must pickle); the results still come in the files'
    order.
    """
    items = list(files_of(paths))
    found = [item for item in items if isinstance(item, Found)]
    results = _mapped(work, found, jobs)
    in_folder = 0
    for item in items:
        if isinstance(item, FolderDone):
            if not in_folder:
                print(
                    f"llmcassette {command}: no cassettes found in {item.folder}", file=sys.stderr
                )
            in_folder = 0
            continue
        result = next(results) if isinstance(item, Found) else item
        if result is None:
            continue
        if not isinstance(item, Found) or item.folder is not None:
            in_folder += 1
        yield result


#: What opening, converting and writing one file costs beyond its bytes, counted in bytes
#: that take as long (on the pydantic-ai corpus: about 4 ms a file, 15 ms a MB).
FILE_COST = 256 * 1024

#: Less work than this per process (about a quarter of a second) does not pay for starting
#: one: a spawned process pays its imports first (about 0.15 s).
WORK_PER_JOB = 16 * 1024 * 1024


def _work_of(found: list[Found]) -> int:
    """How much work ``found`` is, in bytes (``FILE_COST``): its sizes, and a cost per file."""
    total = 0
    for item in found:
        with contextlib.suppress(OSError):  # opening it will say what is wrong
            total += item.path.stat().st_size
        total += FILE_COST
    return total


def _mapped(work: Callable[[Found], R], found: list[Found], jobs: int) -> Iterator[R]:
    processes = min(jobs, len(found), _work_of(found) // WORK_PER_JOB) if jobs > 1 else 1
    if processes < 2:
        yield from map(work, found)
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    # "spawn": a fresh interpreter on every platform (forking a process that has threads,
    # a progress bar's, may deadlock); it costs each process its imports, once.
    context = get_context("spawn")
    with ProcessPoolExecutor(processes, mp_context=context) as pool:
        yield from pool.map(work, found)


def default_jobs() -> int:
    """How many processes a command working on many files uses: one per CPU it may use."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def report(error: CassetteFormatError) -> None:
    """One line ``PATH[:LINE]: problem`` on stderr (and the hint, indented, below it)."""
    print(terminal_safe(str(error)), file=sys.stderr)  # CassetteFormatError's message is that
