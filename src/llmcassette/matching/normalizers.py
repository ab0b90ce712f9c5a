"""Normalizers for clients that write the same request differently.

Pass them in ``match={"normalizers": [...]}``. ``stream_false_is_absent``,
``empty_is_absent`` and ``cache_key_left_out`` are applied by default
(``MatchConfig.sdk_defaults``); the others are opt-in because they are specific to one
provider's API.
"""

from __future__ import annotations

from typing import Any


def stream_false_is_absent(body: Any) -> Any:
    """``"stream": false`` means the same as no ``stream`` field (the API's default).

    langchain-openai sends it on plain calls, the openai SDK leaves it out; ``"stream":
    true`` is kept, so a streamed request never gets a plain recording.
    """
    if isinstance(body, dict) and body.get("stream") is False:
        return {key: value for key, value in body.items() if key != "stream"}
    return body


def empty_is_absent(body: Any) -> Any:
    """A field whose value is ``null``, ``""``, ``[]`` or ``{}`` means the same as no field,
    in every object of the body (a list keeps its items).

    SDK releases change which defaults they spell out: ollama's client sent ``"format":
    ""``, ``"options": {}`` and ``"keep_alive": null`` and later left them out, and now
    sends ``"tools": []``. The API reads both alike.
    """
    if isinstance(body, dict):
        kept = {}
        for key, value in body.items():
            value = empty_is_absent(value)
            if value is None or value == "" or value == [] or value == {}:
                continue
            kept[key] = value
        return kept
    if isinstance(body, list):
        return [empty_is_absent(item) for item in body]
    return body


def cache_key_left_out(body: Any) -> Any:
    """No ``prompt_cache_key``: it steers OpenAI's prompt cache, not the answer, and the
    OpenAI Agents SDK makes up a new one for every run (``agents-sdk:run:<id>``)."""
    if isinstance(body, dict) and "prompt_cache_key" in body:
        return {key: value for key, value in body.items() if key != "prompt_cache_key"}
    return body


def text_blocks(body: Any) -> Any:
    """An Anthropic message's string ``content`` as the one text block it stands for.

    litellm's anthropic route always sends ``[{"type": "text", "text": ...}]``; the
    anthropic SDK sends the string it was given. Anthropic reads both as the same message.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return body
    messages = [
        {**message, "content": [{"type": "text", "text": message["content"]}]}
        if isinstance(message, dict) and isinstance(message.get("content"), str)
        else message
        for message in body["messages"]
    ]
    return {**body, "messages": messages}
