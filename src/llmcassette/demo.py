"""A one-minute tour: record a streamed completion, read the cassette, replay it offline,
change the prompt, cut a stream.

Run it with python -m llmcassette.demo (needs the openai package). It starts the
bundled local provider on 127.0.0.1, so no API key and no network are needed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import llmcassette
from llmcassette.testing import LocalProvider, StreamBehaviour

PROMPT = "Tell me about cassettes"
CHANGED_PROMPT = "Tell me about floppy disks"
API_KEY = "sk-demo"
CUT_AFTER = 3  # events the local provider sends before it drops the connection in step 5
WIDTH = 100


def _title(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}")


def _done(text: str) -> None:
    """The one line that says what the step just showed."""
    print(f"=> {text}")


def _stream_answer(client: Any, prompt: str) -> tuple[str, int]:
    """The streamed answer's text and how many chunks the SDK yielded."""
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt}],
        stream=True,
    )
    pieces: list[str] = []
    chunks = 0
    for chunk in stream:
        chunks += 1
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    return "".join(pieces), chunks


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _cut(text: str) -> str:
    return text if len(text) <= WIDTH - 13 else text[: WIDTH - 14] + "…"


def _redacted_headers(line: dict[str, Any]) -> list[str]:
    """``name: value`` for each header of a request or response line holding a placeholder."""
    shown = []
    for name, value in line.get("headers", {}).items():
        for one in value if isinstance(value, list) else [value]:
            if "<REDACTED:" in one:
                shown.append(f"{name}: {one}")
    return shown


def _show_cassette(path: Path) -> None:
    """Each line of the cassette, cut to the width; redacted headers in full; the middle
    of a long run of event lines elided."""
    raw = path.read_text(encoding="utf-8").splitlines()
    parsed = [json.loads(line) for line in raw]
    events = [number for number, line in enumerate(parsed) if line.get("type") == "event"]
    hidden = set(events[2:-1])
    for number, (text, line) in enumerate(zip(raw, parsed, strict=True)):
        if number in hidden:
            if number == events[2]:
                print(f"{'':>3} {'':<8} … {len(hidden)} more event lines")
            continue
        kind = line.get("type", "header")
        print(f"{number + 1:>3} {kind:<8} {_cut(text)}")
        for header in _redacted_headers(line):
            print(f"{'':>3} {'':<8}   {header}")


def _mismatch(error: BaseException) -> Any:
    """The ``CassetteMismatch`` on the chain of ``error`` (the SDK wraps it), if any."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, llmcassette.CassetteMismatch):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns 0 when every step behaved as described."""
    parser = argparse.ArgumentParser(prog="python -m llmcassette.demo", description=__doc__)
    parser.add_argument(
        "--dir", type=Path, help="where to write the cassettes (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    try:
        import openai
    except ImportError:
        print("The demo drives the real openai SDK: pip install openai", file=sys.stderr)
        return 2

    workdir = args.dir or Path(tempfile.mkdtemp(prefix="llmcassette-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cassette = workdir / "demo.jsonl"
    cut_cassette = workdir / "cut.jsonl"
    cassette.unlink(missing_ok=True)
    cut_cassette.unlink(missing_ok=True)
    ok = True

    provider = LocalProvider().start()
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key=API_KEY, max_retries=0)
    _title(f"1. Record: a streamed chat completion from the local provider ({provider.url})")
    with llmcassette.use_cassette(cassette, record_mode="once"):
        live_text, live_chunks = _stream_answer(client, PROMPT)
    provider.stop()
    lines = _lines(cassette)
    stored = [line for line in lines if line.get("type") == "event"]
    terminators = sum(1 for line in stored if line.get("text") == "[DONE]")
    end = next(line for line in lines if line.get("type") == "end")
    print(f"answer: {live_text!r}")
    _done(
        f"recorded to {cassette.name}: {len(stored)} stream events, the {live_chunks} chunks "
        f"the SDK yielded and the data: [DONE] that ends the stream (the end line: "
        f'"events":{end["events"]})'
    )
    ok &= live_chunks + terminators == len(stored) == end["events"]

    _title(f"2. The cassette, one JSON object per line: {cassette}")
    _show_cassette(cassette)
    text = cassette.read_text(encoding="utf-8")
    placeholders = sum(len(_redacted_headers(line)) for line in lines)
    leaked = [secret for secret in (API_KEY, "org-local") if secret in text]
    _done(
        f"the API key, the organization id and the cookie were written as {placeholders} "
        f"<REDACTED:...> placeholders; {API_KEY!r} appears "
        + ("in the file: that is a bug" if leaked else "nowhere in the file")
    )
    ok &= placeholders >= 3 and not leaked

    _title("3. Replay: the provider is stopped; the cassette answers")
    with llmcassette.use_cassette(cassette, record_mode="none"):
        replay_text, replay_chunks = _stream_answer(client, PROMPT)
    print(f"answer: {replay_text!r}")
    same = (replay_text, replay_chunks) == (live_text, live_chunks)
    _done(
        f"replayed offline: the same answer in the same {replay_chunks} chunks as the live call"
        if same
        else "the replay DIFFERS from the live call: that is a bug"
    )
    ok &= same

    _title("4. A changed prompt does not silently replay the old answer")
    mismatch = None
    try:
        with llmcassette.use_cassette(cassette, record_mode="none"):
            _stream_answer(client, CHANGED_PROMPT)
    except Exception as error:  # the SDK wraps the mismatch in its own error
        mismatch = _mismatch(error)
    if mismatch is None:
        _done("the changed request was answered: that is a bug")
        return 1
    print(textwrap.indent(str(mismatch), "  "))
    first = mismatch.differences[0]
    _done(
        f"{type(mismatch).__name__}: {first.path} was {first.recorded!r} when recorded and "
        f"is {first.incoming!r} now"
    )
    ok &= first.path == "body.messages[0].content"

    _title(f"5. A stream cut short: the provider drops the connection after {CUT_AFTER} events")
    provider = LocalProvider().start()
    provider.behaviour = StreamBehaviour(cut_after=CUT_AFTER)
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key=API_KEY, max_retries=0)
    live_error = replay_error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", llmcassette.IncompleteStreamWarning)
        try:
            with llmcassette.use_cassette(cut_cassette, record_mode="once"):
                _stream_answer(client, PROMPT)
        except openai.APIConnectionError as error:
            live_error = error
    provider.stop()
    reported = [w for w in caught if issubclass(w.category, llmcassette.IncompleteStreamWarning)]
    for warning in reported:
        print(f"warning: {warning.category.__name__}: {warning.message}")
    print(f"the SDK raised: {type(live_error).__name__}: {live_error}")
    cut_end = _lines(cut_cassette)[-1]
    print(f"end line: {cut_cassette.read_text(encoding='utf-8').splitlines()[-1]}")
    try:
        with llmcassette.use_cassette(cut_cassette, record_mode="none"):
            _stream_answer(client, PROMPT)
    except openai.APIConnectionError as error:
        replay_error = error
    print(f"replayed, the SDK raises: {type(replay_error).__name__}: {replay_error}")
    _done(
        f"reported: a warning while recording, an end line marked incomplete after "
        f"{cut_end.get('events')} events, and a replay that fails as the live call did "
        "instead of passing a partial answer off as whole"
    )
    ok &= bool(reported) and "incomplete" in cut_end and replay_error is not None
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
