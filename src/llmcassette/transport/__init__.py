"""What the client sees on the wire: streams recorded as they arrive, paced replay, fault
responses, and the integrity rules that say whether a stream ended properly.

The httpx/httpx2 stubs that plug this into vcrpy live in ``llmcassette._vcr.stubs``.
"""

from llmcassette.transport.pace import Pace

__all__ = ["Pace"]
