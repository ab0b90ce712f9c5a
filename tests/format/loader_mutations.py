"""Mutated cassettes for fuzzing the loader, shared by ``test_loader_fuzz.py`` and ``nox -s fuzz``.

``mutate(rng, data)`` damages a real cassette the ways files get damaged or hand-edited:
byte flips, truncations, NUL bytes, lines duplicated, deleted or swapped, huge integers,
deep nesting, and a wrong value in any field of any line. ``outcome(data)`` loads the
result the ways llmcassette does and builds every body; it returns ``"load"`` or
``"format_error"`` and lets any other exception through: that is a bug.

Run directly for a timed fuzz: ``python tests/format/loader_mutations.py --minutes 10``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmcassette import CassetteFormatError
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.jsonl import Cassette, Interaction

ROOT = Path(__file__).resolve().parents[2]
PATH = "fuzzed.jsonl"


def _built_cassettes() -> list[bytes]:
    """Small cassettes covering every line and field kind the format has."""
    sse = (
        b'event: delta\nid: 7\nretry: 3000\ndata: {"text":"Hi"}\n\n'
        b": keep-alive\n\n"
        b'data: {"a": 1}\n\n'
        b"data: line one\ndata: line two\n\n"
        b"data: [DONE]\n\n"
    )
    items = [
        Interaction(
            "POST",
            "https://h/v1/chat",
            {"content-type": ["application/json"], "x-multi": ["a", "b"]},
            b'{"q":[1,2.5,{"deep":{"er":null}}],"n":-3}',
            200,
            "OK",
            {"content-type": ["text/event-stream"]},
            sse,
            event_times=[0.1, 0.2, 0.3, 0.4, 0.5],
            response_extra={"t": 0.05},
            end_extra={"recorded_at": "2024-01-01T00:00:00Z"},
        ),
        Interaction(
            "POST",
            "https://h/api/chat",
            {},
            b"{}",
            200,
            "OK",
            {"content-type": ["application/x-ndjson"]},
            b'{"m":"a","done":false}\n{"m": "b"}\nnot json\n{"done":true}',
            end_extra={"cut_short": True, "error": "RemoteProtocolError"},
        ),
        Interaction(
            "GET",
            "https://h/img?x=1",
            {},
            None,
            404,
            "Not Found",
            {"content-type": ["image/png"]},
            b"\x89PNG\r\n\x1a\n\xff",
        ),
        Interaction(
            "GET",
            "https://h/text",
            {},
            b"",
            204,
            "",
            {"content-type": ["application/json"]},
            b'{\n  "pretty": "Jos\\u00e9"\n}\n',
        ),
    ]
    header = cassette_file.new_header("fuzz", "2024-01-01T00:00:00Z")
    header["metadata"] = {"k": [1, "v"]}
    smallest = (
        b'{"format": "llmcassette", "format_version": 1}\n'
        b'{"type": "request", "method": "GET", "uri": "https://example.com/"}\n'
        b'{"type": "response", "status": 204}\n'
        b'{"type": "end", "events": 0}\n'
    )
    return [cassette_file.write(Cassette(header, items)).encode(), smallest]


def seed_cassettes() -> list[bytes]:
    """The project's example cassettes and the built ones: every one of them loads."""
    seeds = [path.read_bytes() for path in sorted((ROOT / "cassettes").rglob("*.jsonl"))]
    return seeds + _built_cassettes()


# ------------------------------------------------------------------ mutations

_LONG = ["1" * 301, "9" * 1001, "1" * 4301, "-" + "7" * 5000, "1e309", "-1e400", "1" * 400 + ".5"]


def _value(rng: random.Random) -> Any:
    """A value that is wrong, or just unusual, for most fields."""
    pool: list[Any] = [
        None,
        True,
        False,
        0,
        -5,
        99,
        600,
        99999999999999999999,
        1.5,
        -0.0,
        1e300,
        "",
        "12a",
        "\x00",
        "line\nbreak",
        "\ud800",
        "sse",
        "compact+nl",
        "indent9",
        [],
        {},
        ["a", 1],
        {"json": 1},
        {"text": 5},
        {"base64": "!!"},
        {"stream": "ws"},
        {"json": {"a": 1}, "layout": "nope"},
        float("nan"),
        float("inf"),
    ]
    return rng.choice(pool)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth if depth % 2 else '{"a": ' * depth + "1" + "}" * depth


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _pick(rng: random.Random, lines: list[bytes]) -> int:
    return rng.randrange(len(lines)) if lines else 0


def _flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        index = rng.randrange(len(out))
        out[index] = (
            rng.randrange(256) if rng.random() < 0.5 else out[index] ^ (1 << rng.randrange(8))
        )
    return bytes(out)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _nul(rng: random.Random, data: bytes) -> bytes:
    index = rng.randrange(len(data) + 1)
    return data[:index] + b"\x00" + data[index:]


def _duplicate(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = _pick(rng, lines)
    lines.insert(index, lines[index] if lines else b"")
    return b"\n".join(lines)


def _delete(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if lines:
        del lines[_pick(rng, lines)]
    return b"\n".join(lines)


def _swap(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    if len(lines) > 1:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    return b"\n".join(lines)


def _edit_record(
    rng: random.Random, data: bytes, change: Callable[[random.Random, dict[str, Any]], str | None]
) -> bytes:
    """Change one parsed line; ``change`` returns text to put in place of a marker, if any."""
    lines = _lines(data)
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    if not candidates:
        return data
    index = rng.choice(candidates)
    try:
        record = json.loads(lines[index])
        if not isinstance(record, dict):
            return data
        text = change(rng, record)
        line = json.dumps(record, ensure_ascii=rng.random() < 0.5)
    except (ValueError, RecursionError):  # a line an earlier mutation damaged
        return data
    if text is not None:
        line = line.replace('"@@MARK@@"', text, 1)
    lines[index] = line.encode("utf-8", "surrogatepass")
    return b"\n".join(lines)


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside a record, the record first."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            out.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return out


def _set_somewhere(rng: random.Random, record: dict[str, Any], value: Any) -> None:
    target = rng.choice(_containers(record)) if rng.random() < 0.4 else record
    if isinstance(target, dict):
        keys = [*target, "status", "events", "t", "retry", "format_version", "x"]
        target[rng.choice(keys)] = value
    elif target:
        target[rng.randrange(len(target))] = value
    else:
        target.append(value)


def _wrong_type(rng: random.Random, data: bytes) -> bytes:
    def change(rng: random.Random, record: dict[str, Any]) -> None:
        if rng.random() < 0.15 and record:
            del record[rng.choice(list(record))]
        else:
            _set_somewhere(rng, record, _value(rng))

    return _edit_record(rng, data, change)


def _huge_number(rng: random.Random, data: bytes) -> bytes:
    def change(rng: random.Random, record: dict[str, Any]) -> str:
        _set_somewhere(rng, record, "@@MARK@@")
        return rng.choice(_LONG)

    return _edit_record(rng, data, change)


def _deep(rng: random.Random, data: bytes) -> bytes:
    def change(rng: random.Random, record: dict[str, Any]) -> str:
        _set_somewhere(rng, record, "@@MARK@@")
        return _nested(rng.choice([100, 126, 127, 128, 129, 500, 1000, 10_001, 100_000]))

    return _edit_record(rng, data, change)


def _line_noise(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = _pick(rng, lines)
    noise = rng.choice([b"", b"   ", b"[]", b'"s"', b"null", b"{", b"\xef\xbb\xbf{}", b"\r", b"{}"])
    lines.insert(index, noise)
    return b"\n".join(lines)


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "flip": _flip,
    "truncate": _truncate,
    "nul": _nul,
    "duplicate": _duplicate,
    "delete": _delete,
    "swap": _swap,
    "wrong_type": _wrong_type,
    "huge_number": _huge_number,
    "deep": _deep,
    "line_noise": _line_noise,
}


def mutate(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one to three mutations applied."""
    names = list(MUTATIONS)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        data = MUTATIONS[rng.choice(names)](rng, data)
    return data


def outcome(data: bytes) -> str:
    """``"load"`` or ``"format_error"``; anything else propagates (and is a bug).

    After a load every body and every time is there, well typed: format errors are raised
    at load, never when a stream is played.
    """
    try:
        cassette = cassette_file.read(data, PATH)
    except CassetteFormatError as error:
        failure = error
    else:
        failure = None
    if failure is not None:
        assert failure.path == PATH
        assert failure.hint
        assert failure.line is None or 1 <= failure.line <= data.count(b"\n") + 1
        return "format_error"
    for item in cassette.interactions:
        assert item.request_body is None or isinstance(item.request_body, bytes)
        assert isinstance(item.response_body, bytes)
        times = item.event_times
        assert times is None or all(isinstance(t, float) for t in times)
        assert 100 <= item.status <= 599
    return "load"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    seeds = seed_cassettes()
    counts: collections.Counter[str] = collections.Counter()
    failures: dict[str, str] = {}
    deadline = time.monotonic() + args.minutes * 60
    while time.monotonic() < deadline:
        data = mutate(rng, rng.choice(seeds))
        counts["inputs"] += 1
        try:
            counts[outcome(data)] += 1
        except Exception as error:  # what the fuzz is looking for
            counts["other_exception"] += 1
            where = traceback.extract_tb(error.__traceback__)[-1]
            key = f"{type(error).__name__} at {where.filename}:{where.lineno}"
            failures.setdefault(key, traceback.format_exc()[-3000:] + repr(data[:300]))
    counts.setdefault("other_exception", 0)
    print(f"seed {seed}, {args.minutes:g} minutes, {len(seeds)} seed cassettes")
    for name in ("inputs", "load", "format_error", "other_exception"):
        print(f"{name}: {counts[name]}")
    for name, text in failures.items():
        print(f"--- first {name}:\n{text}")
    return 1 if counts["other_exception"] else 0


if __name__ == "__main__":
    sys.exit(main())
