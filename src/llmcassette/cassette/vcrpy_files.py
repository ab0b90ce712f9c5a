"""Reading vcrpy's own cassette files (YAML, or JSON from its json serializer).

vcrpy writes ``{"interactions": [{"request": ..., "response": ...}], "version": 1}``. Its
serializers are handed ``{"requests": [...], "responses": [...]}``, and a custom serializer
that dumps that mapping as it is (langchain's gzip-compressed ``*.yaml.gz`` cassettes) gives
a file with those two parallel lists instead: ``interactions_of`` reads both layouts.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from llmcassette.errors import shown_path

# The name of the layout with two parallel lists, for messages.
PARALLEL_LISTS = "requests/responses"


def parse(text: str, *, json_file: bool) -> Any:
    """The data of a vcrpy cassette's text, parsed with a safe loader; parse errors propagate."""
    if json_file:
        return json.loads(text)
    import yaml

    try:
        from yaml import CSafeLoader as Loader
    except ImportError:  # pragma: no cover - PyYAML without libyaml
        from yaml import SafeLoader as Loader  # type: ignore[assignment]
    loaded = yaml.load(text, Loader=Loader)
    if may_hold_aliases(text):
        check_aliases(loaded)
    return loaded


def may_hold_aliases(text: str) -> bool:
    """Whether YAML ``text`` may hold an alias: False when it holds no ``&``, for an alias
    (``*id001``) stands for a value an anchor (``&id001``) named, and PyYAML refuses one
    whose anchor is not in the file. Without aliases the data is a tree, which
    ``check_aliases`` passes: it is not walked (most cassettes; the walk is a few percent
    of converting them)."""
    return "&" in text


#: What aliases may add to a YAML file read as a tree, in values, beyond the values it
#: holds: PyYAML writes one for an object a cassette holds twice (``&id001``, ``*id001``),
#: but nested aliases can stand for billions ("billion laughs"), which every reader that
#: walks the tree (convert, scan, a replayed body) would spend hours and all memory on.
MAX_ALIASED_VALUES = 1_000_000


class AliasBombError(ValueError):
    """A YAML file whose aliases stand for more values than ``MAX_ALIASED_VALUES``, or
    refer to a value that holds them (a tree without end)."""


def _children(value: Any) -> Iterable[Any]:
    return value.values() if isinstance(value, dict) else value


def check_aliases(loaded: Any) -> None:
    """``AliasBombError`` when walking ``loaded`` as a tree would meet more than
    ``MAX_ALIASED_VALUES`` values beyond those it holds, or never end; in time linear in
    the values it holds (each shared one is counted once, its tree size remembered).

    The values it holds are those its mappings and lists hold, each mapping or list once:
    a tree holds every value it meets, however many (a list of a million numbers is no
    bomb)."""
    containers = (dict, list, tuple)
    if not isinstance(loaded, containers):
        return
    sizes: dict[int, int] = {}  # a container's id: how many values its tree holds
    held = 1  # the values the data holds: itself, and what each container holds, once
    on_path = {id(loaded)}
    stack = [(loaded, iter(_children(loaded)))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            if isinstance(child, containers) and id(child) not in sizes:
                if id(child) in on_path:
                    raise AliasBombError(
                        "a YAML alias refers to a value that holds it: a tree without end"
                    )
                on_path.add(id(child))
                stack.append((child, iter(_children(child))))
                break
        else:
            stack.pop()
            on_path.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in _children(node))
            held += len(node)
    added = sizes[id(loaded)] - held
    if added > max(MAX_ALIASED_VALUES, held):
        raise AliasBombError(
            f"its YAML aliases stand for {added} more values than the file holds (at most "
            f"{max(MAX_ALIASED_VALUES, held)}): a file built to exhaust memory, not a cassette"
        )


def layout(loaded: Any) -> str | None:
    """``"interactions"`` or ``PARALLEL_LISTS`` for the data of a vcrpy cassette, None for
    data that is no vcrpy cassette."""
    if not isinstance(loaded, dict):
        return None
    if isinstance(loaded.get("interactions"), list):
        return "interactions"
    if isinstance(loaded.get("requests"), list) and isinstance(loaded.get("responses"), list):
        return PARALLEL_LISTS
    return None


def interactions_of(loaded: dict[str, Any]) -> list[Any]:
    """The interactions of a vcrpy cassette's data in either layout, as
    ``{"request": ..., "response": ...}`` entries; those of the parallel-lists layout hold
    the very request and response mappings of ``loaded`` (changing one changes ``loaded``).
    A request without a response (or the reverse) is an entry without that key."""
    if layout(loaded) == PARALLEL_LISTS:
        requests, responses = loaded["requests"], loaded["responses"]
        entries: list[Any] = []
        for index in range(max(len(requests), len(responses))):
            entry: dict[str, Any] = {}
            if index < len(requests):
                entry["request"] = requests[index]
            if index < len(responses):
                entry["response"] = responses[index]
            entries.append(entry)
        return entries
    found = loaded.get("interactions")
    return found if isinstance(found, list) else []


# What PyYAML quotes in a problem: a character or a token's name, kept (``'\\t'``,
# ``'<scalar>'``); anything longer is text of the file, a tag or an alias (``!Hk82...``, an
# unquoted credential that begins with ``!``), never printed.
_QUOTED = re.compile(r"'([^'\n]*)'")
_KEPT_QUOTE = re.compile(r"\\?.|<[a-z ]+>")


def _unquoted(problem: str) -> str:
    return _QUOTED.sub(
        lambda m: m.group(0) if _KEPT_QUOTE.fullmatch(m.group(1)) else "(not shown)", problem
    )


def yaml_error(error: BaseException) -> BaseException | None:
    """The PyYAML error ``error`` is, or was raised from (vcrpy wraps a tag it cannot
    construct in a ``ValueError``); None when it is none."""
    for cause in (error, error.__cause__):
        if cause is not None and isinstance(getattr(cause, "problem", None), str):
            return cause
    return None


def parse_problem(error: BaseException) -> str:
    """What a YAML or JSON parse error says is wrong, on one line, without the text of the
    file it may quote: PyYAML names the tag or alias it could not read (``could not
    determine a constructor for the tag '!...'``), which is a value of the file when an
    unquoted value begins with ``!`` (its marks and their snippets are left out too)."""
    found = yaml_error(error)
    if found is not None:
        return _unquoted(" ".join(str(getattr(found, "problem", "")).split()))
    detail = getattr(error, "msg", None) or str(error)  # JSONDecodeError: msg, no snippet
    return " ".join(str(detail).split())


def error_line(error: BaseException) -> int | None:
    """The 1-based line a YAML or JSON parse error points at, if it says."""
    line = getattr(getattr(yaml_error(error), "problem_mark", None), "line", None)
    if isinstance(line, int):
        return line + 1  # PyYAML counts from 0
    lineno = getattr(error, "lineno", None)
    return lineno if isinstance(lineno, int) else None


def recorded_on(response_headers: Iterable[Mapping[str, Any]]) -> str | None:
    """When vcrpy-recorded traffic was recorded, as its servers said (vcrpy keeps no time):
    the earliest response ``Date`` header, as a cassette header's ``created_at``; None when
    no response has a readable one. A date after now (a server's clock ahead) counts as now.
    """
    dates = []
    for headers in response_headers:
        for name, values in headers.items():
            if name.lower() != "date":
                continue
            for value in [values] if isinstance(values, str) else values:
                with contextlib.suppress(TypeError, ValueError, IndexError):
                    dates.append(email.utils.parsedate_to_datetime(value))
    aware = [date for date in dates if date.tzinfo is not None]
    if not aware:
        return None
    now = datetime.datetime.now(datetime.timezone.utc)
    return min(*aware, now).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: The suffixes of a vcrpy cassette (its serializers' defaults), in the order looked for.
SUFFIXES = (".yaml", ".yml", ".json")


def source_beside(converted: Path) -> Path | None:
    """The vcrpy cassette a ``.jsonl`` file may have been converted from: one of the same
    name beside it; None if there is none (or ``converted`` is no ``.jsonl`` file)."""
    if converted.suffix != ".jsonl":
        return None
    return next(
        (converted.with_suffix(s) for s in SUFFIXES if converted.with_suffix(s).is_file()), None
    )


def convert_again(converted: Path, source: Path) -> str:
    """How to fix a ``.jsonl`` file a convert cut short left beside ``source``."""
    return (
        f"convert it again (llmcassette convert --force {shown_path(source)}), "
        f"or delete {converted.name} to replay {source.name}"
    )


def empty_beside(source: Path) -> str:
    """The problem of an empty ``.jsonl`` file beside the vcrpy cassette ``source``."""
    return (
        f"the file is empty and {source.name} beside it is a vcrpy cassette: "
        "a convert cut short (a crash or a power cut) leaves such a file"
    )
