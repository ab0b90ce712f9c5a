"""Redaction: no secret reaches a cassette, an error message or a log.

``Redactor`` applies the rules; ``RedactionConfig`` configures them (also from
``[tool.llmcassette.redaction]`` in pyproject.toml); ``scan`` finds what a rule still matches.
"""

from __future__ import annotations

from llmcassette.config import RULES_NAME, RedactionConfig
from llmcassette.errors import SecretLeakError
from llmcassette.redact.redactor import Redactor
from llmcassette.redact.rules import RULES_VERSION

__all__ = [
    "RULES_NAME",
    "RULES_VERSION",
    "RedactionConfig",
    "Redactor",
    "SecretLeakError",
]
