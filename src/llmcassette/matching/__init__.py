"""Request matching: canonical forms, path-level differences, vcrpy matchers."""

from typing import TYPE_CHECKING, Any

from llmcassette.matching.matchers import llm_body

if TYPE_CHECKING:
    from llmcassette.matching.jsondiff import Difference, differences

__all__ = ["Difference", "differences", "llm_body"]


def __getattr__(name: str) -> Any:
    # The differences are computed only when a request does not match: imported then.
    if name in ("Difference", "differences"):
        from llmcassette.matching import jsondiff as diff

        return getattr(diff, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
