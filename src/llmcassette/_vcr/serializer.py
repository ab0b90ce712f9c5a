"""llmcassette's JSONL format as a vcrpy serializer (``serialize`` / ``deserialize``).

vcrpy calls these with its own cassette dict. llmcassette's persister does not go through
them (it reads and writes files itself, so errors can name the file); they exist so the
format also works with any persister, e.g. ``my_vcr.register_serializer("jsonl", serializer)``.
"""

from __future__ import annotations

from typing import Any

from llmcassette._vcr import bridge as vcr_bridge
from llmcassette._version import __version__
from llmcassette.cassette import jsonl as cassette_file
from llmcassette.cassette.jsonl import Cassette, Interaction

NAME = "jsonl"
SUFFIX = ".jsonl"
RECORDED_BY = f"llmcassette {__version__}"

#: Redaction used by ``serialize``: None = the project's settings, False = off, or a config.
REDACTION: Any = None


def stamp(items: list[Interaction]) -> list[Interaction]:
    """Give interactions recorded just now their ``recorded_at`` time."""
    now = cassette_file.now_iso()
    for item in items:
        item.end_extra.setdefault("recorded_at", now)
    return items


def serialize(cassette_dict: dict[str, Any]) -> str:
    """Write vcrpy's ``{"interactions": [{"request", "response"}]}`` dict as JSONL text."""
    items = [
        vcr_bridge.from_vcr(entry["request"], entry["response"])
        for entry in cassette_dict.get("interactions", [])
    ]
    header = cassette_file.new_header(RECORDED_BY)
    # llmcassette.redact: redact with the project's rules and refuse to return a leak
    from llmcassette.config import resolve_redaction
    from llmcassette.redact import Redactor
    from llmcassette.redact.scan import check_text

    config = resolve_redaction(REDACTION)
    if not config.enabled:
        return cassette_file.write(Cassette(header, stamp(items)))
    redactor = Redactor(config)
    header["redaction"] = redactor.header_field()
    text = cassette_file.write(Cassette(header, stamp(items)), redaction=redactor)
    if config.fail_closed:
        check_text(redactor.rules, text, "<cassette>")
    return text


def deserialize(cassette_string: str) -> dict[str, Any]:
    """Read JSONL text into vcrpy's cassette dict."""
    cassette = cassette_file.read(cassette_string.encode("utf-8"), "<cassette>")
    interactions = []
    for item in cassette.interactions:
        request, response = vcr_bridge.to_vcr(item)
        interactions.append({"request": request._to_dict(), "response": response})
    return {"version": 1, "interactions": interactions}
