"""Coalescing writes: what one burst of input causes goes out in one write per transport.

Input callbacks (a bridge connection's or an upstream's ``data_received``) run inside
``with OUTBOX:``; writes made meanwhile are gathered per transport and flushed when the outermost
callback returns, so eight calls arriving in one read leave in one ``write`` and no extra loop turn
is spent. A write made outside any callback goes out at once.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class Outbox:
    """Per-transport buffers for the duration of an input callback (single-threaded: the loop's)."""

    __slots__ = ("_depth", "_pending")

    def __init__(self) -> None:
        self._depth = 0
        self._pending: dict[asyncio.WriteTransport, list[bytes]] = {}

    def write(self, transport: asyncio.WriteTransport, data: bytes) -> None:
        """Write now, or after the current input callback if one is running."""
        if self._depth == 0:
            transport.write(data)
            return
        chunks = self._pending.get(transport)
        if chunks is None:
            self._pending[transport] = [data]
        else:
            chunks.append(data)

    def __enter__(self) -> None:
        self._depth += 1

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth == 0 and self._pending:
            pending, self._pending = self._pending, {}
            for transport, chunks in pending.items():
                if not transport.is_closing():
                    transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))


OUTBOX = Outbox()
"""The loop's outbox (the daemon runs one loop)."""
