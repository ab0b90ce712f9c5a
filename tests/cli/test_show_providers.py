"""``show`` assembling other providers' streams: names repeated per delta, Azure's opening
chunk, Responses tool names, Cohere v2 typed events, Gemini thoughts and snake_case parts;
indented answers."""

from __future__ import annotations

import json
from typing import Any

from llmcassette.cassette.jsonl import Interaction
from llmcassette.cli.show import Answer, Shown, assemble_events, render, summarize


def _chunk(delta: dict[str, Any], **extra: Any) -> tuple[None, dict[str, Any]]:
    return None, {"object": "chat.completion.chunk", "choices": [{"delta": delta}], **extra}


def test_a_tool_name_repeated_in_every_delta_is_kept_once() -> None:
    # OpenRouter and Novita send the whole name again with each piece of the arguments.
    calls = [
        {"index": 0, "function": {"name": "llm_version", "arguments": args}}
        for args in ('{"a"', ": 1}")
    ]
    payloads = [_chunk({"tool_calls": [call]}) for call in calls] + [(None, "[DONE]")]
    answer = assemble_events(payloads)
    assert answer.tool_calls == [{"name": "llm_version", "arguments": '{"a": 1}'}]


def test_azure_opening_prompt_filter_chunk_does_not_hide_the_answer() -> None:
    azure_first = (None, {"object": "", "choices": [], "prompt_filter_results": [{}]})
    answer = assemble_events([azure_first, _chunk({"content": "Hi"}), (None, "[DONE]")])
    assert (answer.kind, answer.text) == ("openai-chat", "Hi")


def test_responses_stream_takes_the_tool_name_from_output_item_added() -> None:
    item = {"type": "function_call", "id": "fc_1", "name": "multiply", "arguments": ""}
    payloads: list[tuple[str | None, Any]] = [
        ("response.output_item.added", {"type": "response.output_item.added", "item": item}),
        (None, {"type": "response.function_call_arguments.delta", "item_id": "fc_1"}),
        (
            None,
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_1",
                "arguments": '{"a":1231,"b":2331}',
            },
        ),
    ]
    answer = assemble_events(payloads)
    assert answer.tool_calls == [{"name": "multiply", "arguments": '{"a":1231,"b":2331}'}]


def test_cohere_v2_typed_events() -> None:
    def event(kind: str, message: dict[str, Any], **delta: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "delta": {"message": message, **delta}}

    answer = assemble_events(
        [
            event("message-start", {"role": "assistant"}),
            event("content-delta", {"content": {"text": "Par"}}),
            event("content-delta", {"content": {"text": "is"}}),
            event("tool-call-start", {"tool_calls": {"function": {"name": "f", "arguments": ""}}}),
            event("tool-call-delta", {"tool_calls": {"function": {"arguments": "{}"}}}),
            event("message-end", {}, usage={"tokens": {"output_tokens": 2}}),
        ]
    )
    assert (answer.text, answer.tool_calls) == ("Paris", [{"name": "f", "arguments": "{}"}])
    assert answer.usage == {"tokens": {"output_tokens": 2}}


def test_gemini_thoughts_are_reasoning_and_function_calls_have_names() -> None:
    parts = [{"text": "think", "thought": True}, {"text": "say"}]
    call = {"functionCall": {"name": "get_capital", "args": {"country": "France"}}}
    chunks: list[tuple[str | None, Any]] = [
        (None, {"candidates": [{"content": {"parts": parts}}]}),
        (None, {"candidates": [{"content": {"parts": [call]}}], "usageMetadata": {"x": 1}}),
    ]
    answer = assemble_events(chunks)
    assert (answer.reasoning, answer.text) == ("think", "say")
    assert answer.tool_calls == [{"name": "get_capital", "arguments": '{"country": "France"}'}]


def test_a_many_line_answer_is_indented_under_its_field() -> None:
    shown = Shown(1, "POST", "http://x/" + "p" * 100, 200, None, ["user: hi"], [],
                  Answer(text="one\ntwo\n\nthree"), 0, None, None, False)  # fmt: skip
    lines = render(shown).split("\n")
    assert lines[2:6] == ["  answer: one", "          two", "", "          three"]
    assert max(map(len, lines)) <= 80


def test_long_answers_and_usage_wrap_to_80_columns() -> None:
    usage = {f"field_{n}": n for n in range(20)}
    answer = Answer(text="word " * 60, usage=usage)
    shown = Shown(1, "POST", "http://x/", 200, None, [], [], answer, 0, None, None, False)
    lines = render(shown).split("\n")
    assert max(map(len, lines)) <= 80
    answer_lines = [line for line in lines if line.startswith(("  answer: ", " " * 10 + "w"))]
    assert " ".join(line.split(":", 1)[-1] for line in answer_lines).split() == ["word"] * 60


def test_bedrock_converse_stream_event_dicts() -> None:
    # The shape botocore hands out for ConverseStream, one dict per event-stream frame.
    use = {"toolUse": {"toolUseId": "t1", "name": "get_capital"}}
    payloads: list[tuple[str | None, Any]] = [
        (None, {"messageStart": {"role": "assistant"}}),
        (None, {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}}),
        (None, {"contentBlockStart": {"contentBlockIndex": 1, "start": use}}),
        (
            None,
            {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{}"}}}},
        ),
        (None, {"messageStop": {"stopReason": "tool_use"}}),
        (None, {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 2}}}),
    ]
    answer = assemble_events(payloads)
    assert (answer.kind, answer.text) == ("bedrock-converse", "Hi")
    assert answer.tool_calls == [{"name": "get_capital", "arguments": "{}"}]
    assert answer.usage == {"inputTokens": 3, "outputTokens": 2}


def interaction(
    request: Any,
    response: bytes,
    content_type: str = "application/json",
    uri: str = "https://api.example.com/v1/responses",
) -> Interaction:
    """One POST of ``request`` (JSON) answered 200 with ``response``."""
    return Interaction(
        "POST",
        uri,
        {"content-type": ["application/json"]},
        json.dumps(request).encode(),
        200,
        "OK",
        {"Content-Type": [content_type]},
        response,
    )


def test_gemini_parts_in_snake_case_and_an_answer_of_tool_calls_only() -> None:
    # Gemini takes its proto's field names in either spelling; llm-gemini sends snake_case.
    call = {"function_call": {"name": "namer", "args": {}}, "thoughtSignature": "c2ln"}
    result = {"function_response": {"name": "namer", "response": {"output": "Charles"}}}
    request = {
        "contents": [
            {"role": "user", "parts": [{"text": "Two names for a pet pelican"}]},
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": [result]},
        ]
    }
    answer = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "Naming it.\n\n\n", "thought": True},
                        {"functionCall": {"name": "namer", "args": {}}},
                    ]
                }
            }
        ]
    }
    uri = "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent"
    item = interaction(request, json.dumps(answer).encode(), uri=uri)
    lines = render(summarize(1, item)).split("\n")
    assert lines[1:] == [
        "  model: m",
        "  user: Two names for a pet pelican",
        "  assistant: [tool call namer]",
        "  user: [tool result]",
        "  reasoning: Naming it.",  # the blank lines it ended with are not shown
        "  tool call: namer({})",  # no empty answer line above it
    ]


def test_media_is_named_not_printed() -> None:
    """Images and files sent or made are tags; a binary response is its type and size."""
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4
    downloaded = render(summarize(1, interaction({}, jpeg, "image/jpeg; q=1")))
    assert "  answer: [1,035 bytes of image/jpeg]" in downloaded.split("\n")
    request = {
        "input": [
            {"role": "user", "content": [{"type": "input_image", "image_url": "data:..."}]},
            {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "Look."}]},
        ],
        "contents": [{"role": "user", "parts": [{"inline_data": {"mime_type": "audio/wav"}}]}],
        "messages": [{"role": "user", "content": [{"image": {"format": "png"}}]}],  # Bedrock
    }
    made = {"object": "response", "output": [{"type": "image_generation_call", "result": "..."}]}
    lines = render(summarize(1, interaction(request, json.dumps(made).encode()))).split("\n")
    assert lines[1:] == [
        "  user: [image]",  # Bedrock's messages come first in the listing
        "  user: [audio/wav]",
        "  user: [image]",
        "  assistant: [reasoning] Look.",
        "  answer: [image]",
    ]


def test_leading_and_trailing_blank_lines_are_not_shown() -> None:
    answer = Answer(text="\n\nok\n", reasoning="\nthinking\n\n")
    shown = Shown(1, "POST", "http://x/", 200, None, [], [], answer, 0, None, None, False)
    assert render(shown).split("\n")[1:] == ["  reasoning: thinking", "  answer: ok"]


def test_openai_functions_refusals_and_completions() -> None:
    """The functions API's ``function_call``, a ``refusal``, and the Completions API's
    ``text``, whole and streamed (OpenLLMetry's OpenAI and langchain cassettes showed
    each as an empty ``answer:``)."""
    call = {"name": "get_weather", "arguments": '{"city": "Boston"}'}
    whole = [
        {"choices": [{"message": {"content": None, "function_call": call}}]},
        {"object": "chat.completion", "choices": [{"message": {"refusal": "I can't."}}]},
        {"object": "text_completion", "choices": [{"text": "Knock knock."}]},
    ]
    answers = [summarize(1, interaction({}, json.dumps(body).encode())).answer for body in whole]
    assert answers[0].tool_calls == [call]
    assert [a.text for a in answers] == ["", "[refusal] I can't.", "Knock knock."]
    streamed_call = assemble_events(
        [_chunk({"function_call": {"name": "get_weather", "arguments": ""}})]
        + [_chunk({"function_call": {"arguments": piece}}) for piece in ('{"city"', ': "Boston"}')]
    )
    assert streamed_call.tool_calls == [call]
    refused = assemble_events([_chunk({"refusal": "I "}), _chunk({"refusal": "can't."})])
    assert refused.text == "[refusal] I can't."
    completion = [(None, {"object": "text_completion", "choices": [{"text": t}]}) for t in "ab"]
    assert assemble_events(completion).text == "ab"


def test_a_response_without_a_body_says_so() -> None:
    shown = summarize(1, interaction({"batch": []}, b"", "application/json"))
    assert render(shown).split("\n")[-1] == "  answer: [no body]"


def test_replicate_output_events_and_model() -> None:
    """Replicate streams plain text in ``event: output`` events, and names its model in
    the path as owner and name (OpenLLMetry's Replicate cassettes showed nothing)."""
    stream = (
        b": hi\n\nevent: output\nid: 1:0\ndata: Sure\n\nevent: output\nid: 1:1\ndata: , here\n\n"
    )
    item = interaction({}, stream + b"event: done\ndata: {}\n\n", "text/event-stream")
    item.stream = "sse"
    assert summarize(1, item).answer.text == "Sure, here"
    created = interaction(
        {"input": {"prompt": "hi"}},
        b'{"id": "p1", "output": null}',
        uri="https://api.replicate.com/v1/models/meta/llama-2-70b-chat/predictions",
    )
    assert summarize(1, created).model == "meta/llama-2-70b-chat"
    gemini = interaction({}, b"{}", uri="https://x/v1beta/models/gemini-2.0-flash:generateContent")
    assert summarize(1, gemini).model == "gemini-2.0-flash"


def test_an_azure_request_without_a_model_is_named_after_its_deployment() -> None:
    # LangChain's AzureChatOpenAI sends no model: the deployment in the path names it.
    request = {"messages": [{"role": "user", "content": "Hi"}]}
    answer = {"choices": [{"message": {"role": "assistant", "content": "Hello"}}]}
    uri = "https://x.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=1"
    item = interaction(request, json.dumps(answer).encode(), uri=uri)
    assert summarize(1, item).model == "gpt-4o-prod"
