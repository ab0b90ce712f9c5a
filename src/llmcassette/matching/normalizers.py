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


# Fields that hold a tool call's arguments or a tool's result: Anthropic and Bedrock
# ``input``, Gemini ``args`` and ``response``, Ollama ``arguments``, Bedrock ``json``. What
# is in them came from the model or the caller, never from an SDK's defaults, and the
# model reads it back: ``find(query="")`` is not ``find()``. ``empty_is_absent`` keeps them
# whole.
_ARGUMENT_FIELDS = frozenset({"input", "args", "arguments", "response", "json"})
# Fields that hold a JSON schema (tools, structured output), as each API spells them.
# Inside one, an empty keyword is an SDK's spelling (``"required": []``, ``"properties":
# {}``), but the values the model is told (``_SCHEMA_VALUES``) and the names of properties
# (``_SCHEMA_NAMES``) count even when empty.
_SCHEMA_FIELDS = frozenset(
    {
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
_SCHEMA_VALUES = frozenset({"default", "const", "enum", "examples", "example"})
_SCHEMA_NAMES = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "parameter_definitions"}
)


def empty_is_absent(body: Any) -> Any:
    """A field whose value is ``null``, ``""``, ``[]`` or ``{}`` means the same as no field,
    in every object of the body (a list keeps its items), except where the model reads
    the empty value: inside a tool call's arguments or a tool's result (kept whole), and
    a JSON schema's ``default``, ``const``, ``enum`` and examples, and its property names.

    SDK releases change which defaults they spell out: ollama's client sent ``"format":
    ""``, ``"options": {}`` and ``"keep_alive": null`` and later left them out, and now
    sends ``"tools": []``. The API reads both alike.
    """
    if isinstance(body, dict):
        kept = {}
        for key, value in body.items():
            if isinstance(value, dict) and key in _ARGUMENT_FIELDS:
                pass
            elif isinstance(value, dict) and key in _SCHEMA_FIELDS:
                value = _schema_names(value) if key in _SCHEMA_NAMES else _schema(value)
            else:
                value = empty_is_absent(value)
            if not _empty(value):
                kept[key] = value
        return kept
    if isinstance(body, list):
        return [empty_is_absent(item) for item in body]
    return body


def _schema(value: Any) -> Any:
    """A JSON schema with its empty keywords left out, but not its values or names."""
    if isinstance(value, list):
        return [_schema(item) for item in value]
    if not isinstance(value, dict):
        return value
    kept = {}
    for key, item in value.items():
        if key in _SCHEMA_VALUES:
            kept[key] = item  # "default": "" is told to the model
            continue
        item = _schema_names(item) if key in _SCHEMA_NAMES else _schema(item)
        if not _empty(item):
            kept[key] = item
    return kept


def _schema_names(value: Any) -> Any:
    """``properties`` and its kin: each name counts, even with an empty schema (``{"q":
    {}}`` tells the model there is a ``q``)."""
    if not isinstance(value, dict):
        return _schema(value)
    return {name: _schema(item) for name, item in value.items()}


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


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
