"""The local provider reads a Gemini function's schema under each name the API accepts."""

from __future__ import annotations

import httpx
import pytest

from llmcassette.testing import LocalProvider

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


# Gemini's own Schema (upper-case types) under `parameters`; JSON schema under
# `parametersJsonSchema`, or `parameters_json_schema` as pydantic-ai's requests through
# google-genai 2.x write it (the API reads proto field names in either spelling).
@pytest.mark.parametrize(
    ("key", "schema"),
    [
        ("parameters", {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}),
        ("parametersJsonSchema", SCHEMA),
        ("parameters_json_schema", SCHEMA),
    ],
)
def test_function_call_arguments_follow_the_schema(
    provider: LocalProvider, key: str, schema: dict[str, object]
) -> None:
    declaration = {"name": "weather", key: schema}
    ask = {
        "contents": [{"role": "user", "parts": [{"text": "Paris"}]}],
        "tools": [{"functionDeclarations": [declaration]}],
    }
    url = f"{provider.gemini_base_url}/v1beta/models/gemini-2.0-flash:generateContent"
    body = httpx.post(url, json=ask, headers={"x-goog-api-key": "AIza-local"}).json()
    call = body["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call == {"name": "weather", "args": {"city": "Paris"}}
