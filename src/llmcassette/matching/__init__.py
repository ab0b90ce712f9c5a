"""Request matching: canonical forms, path-level differences, vcrpy matchers."""

from .diff import Difference, differences
from .matchers import llm_body

__all__ = ["Difference", "differences", "llm_body"]
