"""A local, deterministic fake LLM provider for tests, demos and offline use.

`LocalProvider` serves OpenAI (Chat Completions, Responses, models), Azure OpenAI (a
deployment's chat completions), Anthropic (Messages), Gemini, Bedrock (Converse and
InvokeModel, streamed as AWS event-stream frames), Groq, Cohere and Ollama wire formats on
127.0.0.1, using only the standard library.
"""

from __future__ import annotations

from llmcassette.testing.provider import LocalProvider, ReceivedRequest, StreamBehaviour

__all__ = ["LocalProvider", "ReceivedRequest", "StreamBehaviour"]
