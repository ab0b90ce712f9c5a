"""Which recorded client a live client replays, without labels: binding by first-call order.

Each SDK client object owns its own httpx transport, and llmcassette's stubs see the
transport of every request. While a cassette is in use its clients are numbered in the
order of their first call (1, 2, ...), in a weak mapping, so a client dropped by the code
is not kept alive by the cassette. Recording stores the number on the request line
(``"client": 2``); replay numbers the live clients the same way and binds live client n to
recorded client n. Among identical unplayed interactions, ``lookup`` plays one recorded by
the bound client first.

A client stays bound to the recorded client of the last interaction it was given: when the
content of a request picks another client's recording (a follow-up carrying an answer that
conversation was served, a sub-agent handed another agent's plan), the live client goes on
as that recorded client.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_ATTRIBUTE = "_llmcassette_clients"
_LOCK = threading.Lock()  # numbering a client is one step, whatever thread asks


class LiveClient:
    """A client object in use with a cassette: its number and the recorded client it plays."""

    __slots__ = ("bound", "number")

    def __init__(self, number: int) -> None:
        self.number = number
        # The recorded client whose interactions go first; records are stored under it, so
        # a cassette extended (new_episodes) goes on numbering as it was recorded.
        self.bound = number


class _Numbering:
    """The clients of one cassette in use, by transport, numbered in first-call order."""

    def __init__(self) -> None:
        self.clients: weakref.WeakKeyDictionary[Any, LiveClient] = weakref.WeakKeyDictionary()
        self.count = 0  # not len(clients): a dropped client keeps its number taken


def live_client(cassette: Any, transport: Any) -> LiveClient | None:
    """The live client that sends through ``transport`` (numbered on its first call), or
    None when the transport cannot be referred to weakly."""
    attributes = cassette.__dict__
    with _LOCK:
        numbering: _Numbering | None = attributes.get(_ATTRIBUTE)
        if numbering is None:
            numbering = attributes[_ATTRIBUTE] = _Numbering()
        try:
            found = numbering.clients.get(transport)
            if found is None:
                found = LiveClient(numbering.count + 1)
                numbering.clients[transport] = found
                numbering.count += 1
        except TypeError:  # no weak reference (__slots__ without __weakref__)
            return None
        return found


def played(client: LiveClient | None, recorded_client: int | None) -> None:
    """``client`` was given an interaction recorded by ``recorded_client``: bind it there."""
    if client is not None and recorded_client is not None:
        client.bound = recorded_client
