"""Where a transport delivers what it reads and how it reports its end (``transports.py``,
``http_client.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class OnMessage(Protocol):
    """Where a transport delivers each message (``related``: the id of the request whose response
    stream carried it, when the transport knows one)."""

    def __call__(self, message: dict[str, Any], related: int | None = None) -> None: ...


OnClosed = Callable[[int | None, str], None]
"""The connection ended: (return code if a process exited, why)."""
