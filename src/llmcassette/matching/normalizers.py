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


# Fields whose value is what the model reads as data: a tool call's arguments, a tool's
# result, a JSON schema (tools, structured output). Inside them an empty value is not an
# SDK's default but part of the prompt (``find(query="")`` is not ``find()``, a schema's
# ``"default": ""`` is told to the model), so ``empty_is_absent`` keeps them whole. Named
# as each API spells them: Anthropic ``input`` / ``input_schema``, Gemini ``args`` /
# ``response`` / ``parameters`` / ``responseSchema``, OpenAI ``parameters`` / ``schema``,
# Bedrock ``input`` / ``json`` / ``inputSchema``, Ollama ``arguments`` / ``format``.
_DATA_FIELDS = frozenset(
    {
        "input",
        "args",
        "arguments",
        "response",
        "json",
        "format",
        "parameters",
        "parameter_definitions",
        "schema",
        "json_schema",
        "input_schema",
        "inputSchema",
        "response_schema",
        "responseSchema",
        "response_json_schema",
        "responseJsonSchema",
        "parameters_json_schema",
        "parametersJsonSchema",
    }
)


def empty_is_absent(body: Any) -> Any:
    """A field whose value is ``null``, ``""``, ``[]`` or ``{}`` means the same as no field,
    in every object of the body (a list keeps its items), except inside the fields that
    hold the model's data (``_DATA_FIELDS``: tool arguments and results, JSON schemas).

    SDK releases change which defaults they spell out: ollama's client sent ``"format":
    ""``, ``"options": {}`` and ``"keep_alive": null`` and later left them out, and now
    sends ``"tools": []``. The API reads both alike.
    """
    if isinstance(body, dict):
        kept = {}
        for key, value in body.items():
            if key not in _DATA_FIELDS or not isinstance(value, dict):
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
