"""Measure what redaction costs on a 1000-interaction streamed cassette (not a test).

Run: .venv/bin/python tests/redact/bench_redaction.py
Prints the time to serialize without redaction, with redaction, and with redaction plus
the fail-closed scan, and the ratios. The bar: redaction costs < 2x serializing.
"""

from __future__ import annotations

import json
import time

from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.jsonl import Cassette, Interaction
from llmcassette.redact import Redactor
from llmcassette.redact.scan import check_text

WORDS = [
    "The",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "the",
    "model",
    "streams",
]


def _interaction(index: int) -> Interaction:
    chunks = []
    for n in range(12):
        chunk = {
            "id": f"chatcmpl-{index:08d}abcdefghijkl",
            "object": "chat.completion.chunk",
            "created": 1700000000 + index,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_0ba0d124f1",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": " " + WORDS[n]},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
            "obfuscation": "Zx1" + str(n),
        }
        chunks.append(f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n")
    chunks.append("data: [DONE]\n\n")
    body = {
        "model": "gpt-4o-mini",
        "stream": True,
        "messages": [{"role": "user", "content": f"Question number {index}: tell me a story."}],
    }
    return Interaction(
        method="POST",
        uri="https://api.openai.com/v1/chat/completions",
        request_headers={
            "authorization": ["Bearer <REDACTED:openai-api-key>"],
            "content-type": ["application/json"],
            "user-agent": ["OpenAI/Python 3.57.0"],
            "x-stainless-lang": ["python"],
        },
        request_body=json.dumps(body, separators=(",", ":")).encode(),
        status=200,
        reason="OK",
        response_headers={
            "content-type": ["text/event-stream; charset=utf-8"],
            "openai-organization": ["user-abc123"],
            "x-request-id": [f"req_{index:032x}"],
            "set-cookie": ["__cf_bm=abcdefghijklmnop; path=/; HttpOnly"],
        },
        response_body="".join(chunks).encode(),
    )


def main() -> None:
    items = [_interaction(i) for i in range(1000)]
    header = cassette_file.new_header("bench")

    def best(fn: object, repeat: int = 5) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()  # type: ignore[operator]
            times.append(time.perf_counter() - start)
        return min(times)

    plain = best(lambda: cassette_file.write(Cassette(header, items)))

    def redacted() -> str:
        redactor = Redactor(environ={})
        return cassette_file.write(Cassette(header, items), redaction=redactor)

    def redacted_checked() -> None:
        redactor = Redactor(environ={})
        text = cassette_file.write(Cassette(header, items), redaction=redactor)
        check_text(redactor.rules, text, "bench.jsonl")

    with_redaction = best(redacted)
    with_check = best(redacted_checked)
    print(f"serialize only:           {plain * 1000:8.1f} ms")
    print(
        f"serialize + redact:       {with_redaction * 1000:8.1f} ms  ({with_redaction / plain:.2f}x)"
    )
    print(f"serialize + redact + scan:{with_check * 1000:8.1f} ms  ({with_check / plain:.2f}x)")
    print(f"redaction cost / serialize cost: {(with_redaction - plain) / plain:.2f}")
    print(f"redaction+scan cost / serialize cost: {(with_check - plain) / plain:.2f}")


if __name__ == "__main__":
    main()
