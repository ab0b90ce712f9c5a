"""A local, deterministic fake LLM provider for tests, demos and offline use.

`LocalProvider` serves OpenAI (Chat Completions, Responses, models), Anthropic (Messages) and
Ollama (`/api/chat`, `/api/generate`) wire formats on 127.0.0.1, using only the standard library.
"""

from __future__ import annotations

from llmcassette.testing.provider import LocalProvider, ReceivedRequest, StreamBehaviour

__all__ = ["LocalProvider", "ReceivedRequest", "StreamBehaviour"]
