"""Call records made in batches: a call's event is built a few milliseconds after the call, together
with the others of that window, while the code that builds it is still warm.

Between two messages of a call the agent's client and the upstream run, and the daemon's code and data
are cold again: the same record costs several times in the daemon what it costs in a hot loop
(bench/README.md, issue 26 items 2-3). What a call's record holds is fixed when the call ends (its
times, outcome, sizes; the metrics are counted then); only building its event waits, at most
:data:`BATCH_S`, or until :data:`BATCH_CALLS` wait. Every event published later, from any thread,
first has the waiting records published before it (:meth:`RecordBatch.flush` is the bus's
``before_publish``), so the log's order is the order in which things happened.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

BATCH_S = 0.005
"""The longest a finished call's event waits to be built (a longer window's larger batches slow the
call they meet: bench/README.md)."""
BATCH_CALLS = 64
"""Records that are built at once, without waiting for the window (a burst of calls)."""

Build = Callable[[], object]


class RecordBatch:
    """Records waiting to be built, in the order their calls ended (any thread may flush them)."""

    __slots__ = ("_lock", "_loop", "_pending", "_timer")

    def __init__(self) -> None:
        self._pending: list[Build] = []
        self._lock = threading.RLock()  # re-entered: building a record publishes, which flushes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Batch from now on, on ``loop`` (the loop every call ends on); until then each record is
        built at once."""
        self._loop = loop

    def add(self, build: Build) -> None:
        """Build a finished call's record now, or within the window when batching."""
        loop = self._loop
        if loop is None or loop.is_closed():
            build()
            return
        with self._lock:
            self._pending.append(build)
            full = len(self._pending) >= BATCH_CALLS
            if not full and self._timer is None:
                self._timer = loop.call_later(BATCH_S, self._window_ended)
        if full:
            self.flush()

    def _window_ended(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Build every waiting record, in order (before any later event is published)."""
        if not self._pending:
            return
        with self._lock:
            pending, self._pending = self._pending, []
            for build in pending:
                try:
                    build()
                except Exception:  # one failing record must not cost the others theirs
                    log.exception("a call record failed: %r", build)
