"""Differences between two parsed bodies: one per place, a reordered list told once."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

import llmcassette
from llmcassette import CassetteMismatch
from llmcassette.matching.jsondiff import differences

TEXT = {"type": "text", "text": "What is in this picture?"}
IMAGE = {"type": "image", "source": {"type": "base64", "data": "iVBORw0KGgo"}}


def test_a_reordered_list_is_one_difference_that_names_its_items() -> None:
    (found,) = differences({"content": [TEXT, IMAGE]}, {"content": [IMAGE, TEXT]}, "body")
    assert (found.path, found.reordered) == ("body.content", True)
    assert (found.recorded, found.incoming) == ([TEXT, IMAGE], [IMAGE, TEXT])
    assert found.describe() == (
        "body.content: recorded ['text', 'image'], incoming ['image', 'text'] "
        "(the same 2 items, reordered)"
    )
    # items alike at a glance are shown themselves
    (same_type,) = differences([TEXT, {**TEXT, "text": "b"}], [{**TEXT, "text": "b"}, TEXT])
    assert "What is in this picture?" in same_type.describe()


@pytest.mark.parametrize(
    ("recorded", "incoming", "paths"),
    [
        ([1, 2, 3], [3, 2, 4], ["[0]", "[2]"]),  # not the same items
        ([1, 2], [1, 2, 2], ["[2]"]),  # not as many
        ([1, True], [True, 1], ["[0]", "[1]"]),  # JSON tells 1 from true
        ([TEXT, IMAGE], [TEXT, IMAGE], []),
    ],
)
def test_lists_that_are_not_reordered_differ_item_by_item(
    recorded: list[object], incoming: list[object], paths: list[str]
) -> None:
    found = differences(recorded, incoming)
    assert [d.path for d in found] == paths
    assert not any(d.reordered for d in found)


def test_a_mismatch_says_the_blocks_were_reordered(
    tmp_path: Path, any_server: tuple[str, list[str]]
) -> None:
    # llm-anthropic now sends the image before the text: six leaf differences before.
    url = f"{any_server[0]}/v1/messages"
    message = {"model": "m", "messages": [{"role": "user", "content": [TEXT, IMAGE]}]}
    with llmcassette.use_cassette(tmp_path / "c", record_mode="once"):
        httpx2.post(url, json=message)
    message["messages"][0]["content"] = [IMAGE, TEXT]  # type: ignore[index]
    with (
        pytest.raises(CassetteMismatch) as raised,
        llmcassette.use_cassette(tmp_path / "c", record_mode="none"),
    ):
        httpx2.post(url, json=message)
    (difference,) = raised.value.differences
    assert str(raised.value).startswith(
        "body.messages[0].content: recorded ['text', 'image'], incoming ['image', 'text'] "
        "(the same 2 items, reordered)"
    )
    assert difference.reordered
