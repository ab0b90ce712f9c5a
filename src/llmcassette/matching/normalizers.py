"""Normalizers for clients that write the same request differently.

Pass them in ``match={"normalizers": [...]}``. ``stream_false_is_absent`` is applied by
default (``MatchConfig.sdk_defaults``); the others are opt-in because they are specific to
one provider's API.
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
