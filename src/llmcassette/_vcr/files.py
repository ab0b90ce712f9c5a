"""Writing vcrpy's own cassette files (YAML or JSON), with vcrpy's serializers."""

from __future__ import annotations

from typing import Any

from vcr.serializers import jsonserializer, yamlserializer


def vcrpy_text(data: dict[str, Any], *, json_file: bool) -> str:
    """The text vcrpy writes for a loaded cassette's ``data`` (``{"interactions": [...]}``)."""
    module: Any = jsonserializer if json_file else yamlserializer
    text: str = module.serialize(data)
    return text
