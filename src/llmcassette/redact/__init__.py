"""Redaction: no secret reaches a cassette, an error message or a log.

``Redactor`` applies the rules; ``RedactionConfig`` configures them (also from
``[tool.llmcassette.redaction]`` in pyproject.toml); ``scan`` finds what a rule still matches.
"""

from __future__ import annotations

from ..errors import SecretLeakError
from .config import RedactionConfig, RedactionConfigError, project_config, resolve
from .engine import Redactor
from .rules import RULES_NAME, RULES_VERSION

__all__ = [
    "RULES_NAME",
    "RULES_VERSION",
    "RedactionConfig",
    "RedactionConfigError",
    "Redactor",
    "SecretLeakError",
    "project_config",
    "resolve",
]
