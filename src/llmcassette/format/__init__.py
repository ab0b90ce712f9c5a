"""The JSONL cassette format: lines, bodies, stream events, compression and migrations."""

from .cassette_file import Cassette, Interaction, read, write
from .migrations import FORMAT_VERSION

__all__ = ["FORMAT_VERSION", "Cassette", "Interaction", "read", "write"]
