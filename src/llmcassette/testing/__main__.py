"""`python -m llmcassette.testing --port 8000`: run the local provider in the foreground."""

from __future__ import annotations

import argparse
import sys
import threading

from llmcassette.testing.provider import LocalProvider, StreamBehaviour


def banner(provider: LocalProvider) -> list[str]:
    """Where each wire format's client points, one line each (every format it speaks)."""
    url = provider.url
    return [
        f"OpenAI:       base_url={provider.openai_base_url}",
        f"Azure OpenAI: azure_endpoint={provider.azure_endpoint}",
        f"Anthropic:    base_url={provider.anthropic_base_url}",
        f"Gemini:       HttpOptions(base_url={provider.gemini_base_url})",
        f"Bedrock:      endpoint_url={provider.bedrock_endpoint_url}",
        f"Groq:         base_url={url}",
        f"Cohere:       base_url={url}",
        f"Mistral:      server_url={url}",
        f"Ollama:       host={provider.ollama_base_url}",
    ]


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted (Ctrl-C)."""
    parser = argparse.ArgumentParser(
        prog="python -m llmcassette.testing", description="Run the llmcassette local provider."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--event-delay", type=float, default=0.0, help="seconds between events")
    parser.add_argument("--events", type=int, default=None, help="content events per stream")
    args = parser.parse_args(argv)

    provider = LocalProvider(args.host, args.port)
    provider.behaviour = StreamBehaviour(event_delay=args.event_delay, events=args.events)
    try:
        provider.start()
    except OSError as error:
        print(
            f"python -m llmcassette.testing: cannot listen on {args.host}:{args.port}: "
            f"{error.strerror or error}; choose another --port (0 picks a free one)",
            file=sys.stderr,
        )
        return 2
    with provider:
        print(f"llmcassette local provider on {provider.url}", flush=True)
        for line in banner(provider):
            print(f"  {line}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        try:
            # Event.wait() with a timeout keeps Ctrl-C responsive on every platform.
            forever = threading.Event()
            while not forever.wait(3600):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
