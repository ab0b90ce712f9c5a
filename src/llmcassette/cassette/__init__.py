"""The JSONL cassette format: lines, bodies, stream events, compression and migrations."""

from llmcassette.cassette.jsonl import Cassette, Interaction, read, write
from llmcassette.cassette.migrations import FORMAT_VERSION

__all__ = ["FORMAT_VERSION", "Cassette", "Interaction", "read", "write"]
