"""Coalescing writes: what one burst of input causes goes out in one write per transport.

Input callbacks (a bridge connection's or an upstream's ``data_received``) run inside
``with OUTBOX:``; writes made meanwhile are gathered per transport and flushed when the outermost
callback returns, so eight calls arriving in one read leave in one ``write`` and no extra loop turn
is spent. A write made outside any callback goes out at once.

Work that must not delay an answer (recording a finished call) is handed to :meth:`Outbox.after`:
it runs once the callback's writes are out, in the order it was handed over.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)


class Outbox:
    """Per-transport buffers for the duration of an input callback (single-threaded: the loop's)."""

    __slots__ = ("_after", "_depth", "_pending")

    def __init__(self) -> None:
        self._depth = 0
        self._pending: dict[asyncio.WriteTransport, list[bytes]] = {}
        self._after: list[tuple[Callable[..., object], tuple[Any, ...]]] = []

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

    def after(self, work: Callable[..., object], *args: Any) -> None:
        """Run ``work(*args)`` once the current input callback's writes went out (now, outside one)."""
        if self._depth == 0:
            work(*args)
        else:
            self._after.append((work, args))

    def __enter__(self) -> None:
        self._depth += 1

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth:
            return
        if self._pending:
            pending, self._pending = self._pending, {}
            for transport, chunks in pending.items():
                if not transport.is_closing():
                    transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        if self._after:
            after, self._after = self._after, []
            for work, args in after:
                try:
                    work(*args)
                except Exception:  # one failing record must not cost the others theirs
                    log.exception("deferred work failed: %r", work)


OUTBOX = Outbox()
"""The loop's outbox (the daemon runs one loop)."""
