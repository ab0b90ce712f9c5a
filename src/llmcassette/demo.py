"""A two-minute tour: record a streamed completion, replay it offline, read it, break it.

Run it with ``python -m llmcassette.demo`` (needs the ``openai`` package). It starts the
bundled local provider on 127.0.0.1, so no API key and no network are needed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import llmcassette
from llmcassette.testing import LocalProvider

PROMPT = "Tell me about cassettes"


def _title(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}")


def _stream_answer(client: Any, prompt: str) -> tuple[str, int]:
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


def _show_cassette(path: Path, width: int = 110) -> None:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        kind = json.loads(line).get("type", "header")
        shown = line if len(line) <= width else line[: width - 1] + "…"
        print(f"{number:>3} {kind:<8} {shown}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns 0 when every step behaved as described."""
    parser = argparse.ArgumentParser(prog="python -m llmcassette.demo", description=__doc__)
    parser.add_argument(
        "--dir", type=Path, help="where to write the cassette (default: a temp dir)"
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
    cassette.unlink(missing_ok=True)

    provider = LocalProvider().start()
    client = openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-demo", max_retries=0)

    _title(f"1. Record: a streamed chat completion from the local provider ({provider.url})")
    with llmcassette.use_cassette(cassette, record_mode="once"):
        live_text, live_chunks = _stream_answer(client, PROMPT)
    print(f"answer: {live_text!r} ({live_chunks} stream chunks)")
    provider.stop()

    _title("2. Replay: the provider is stopped; the cassette answers")
    with llmcassette.use_cassette(cassette, record_mode="none"):
        replay_text, replay_chunks = _stream_answer(client, PROMPT)
    print(f"answer: {replay_text!r} ({replay_chunks} stream chunks)")
    same = (replay_text, replay_chunks) == (live_text, live_chunks)
    print("identical to the live call" if same else "DIFFERENT from the live call")

    _title(f"3. The cassette, one JSON object per line: {cassette}")
    _show_cassette(cassette)

    _title("4. A changed prompt does not silently replay the old answer")
    mismatch: BaseException | None = None
    try:
        with llmcassette.use_cassette(cassette, record_mode="none"):
            _stream_answer(client, "Tell me about floppy disks")
    except Exception as error:  # the SDK may wrap vcrpy's error; the message is on the chain
        mismatch = error
    if mismatch is None:
        print("the changed request was answered: that is a bug")
        return 1
    message = _root_message(mismatch)
    print(textwrap.indent(message.split("How to fix")[0].rstrip(), "  "))
    found_path = "body.messages[0].content" in message
    return 0 if same and found_path else 1


def _root_message(error: BaseException) -> str:
    seen: BaseException | None = error
    messages = []
    while seen is not None:
        messages.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    return max(messages, key=len)


if __name__ == "__main__":
    sys.exit(main())
