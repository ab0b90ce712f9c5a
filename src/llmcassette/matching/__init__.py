"""Request matching: canonical forms, path-level differences, vcrpy matchers."""

from .diff import Difference, differences
from .matchers import body

__all__ = ["Difference", "body", "differences"]
