"""What the log writer could not do yet: events its full intake dropped (recorded later as one
``log.gap``), and a store that refuses writes (a stall, shown while it lasts)."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import apsw

from harness.events import Event, LogGap

log = logging.getLogger("harness.log_writer")

ANNOUNCE_EVERY_S = 60.0
"""While the log is stalled, one line on stderr at most this often."""

_CAUSES: tuple[tuple[type[apsw.Error], str], ...] = (
    (apsw.BusyError, "locked by another writer"),
    (apsw.LockedError, "locked by another writer"),
    (apsw.FullError, "disk full"),
    (apsw.IOError, "I/O error"),
    (apsw.ReadOnlyError, "read-only"),
    (apsw.CantOpenError, "cannot be opened"),
)


def store_error(exc: apsw.Error) -> str:
    """A short reason for a failed write: ``disk full (database or disk is full)``."""
    detail = str(exc).split(": ", 1)[-1]
    cause = next((text for kind, text in _CAUSES if isinstance(exc, kind)), type(exc).__name__)
    return f"{cause} ({detail})"


class DropTally:
    """Events the full intake dropped since the last ``log.gap``, by stored name, with their time
    range. Added to on the loop's thread, taken on the writer's: a lock guards both (the rare path)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._first = self._last = 0.0

    def add(self, event: Event) -> None:
        """Count one dropped event."""
        with self._lock:
            if not self._counts:
                self._first = event.ts
            self._counts[event.STORED_NAME] += 1
            self._last = event.ts

    def take(self, store_error: str | None) -> LogGap | None:
        """The ``log.gap`` of everything counted so far (and start counting afresh), if anything was."""
        if (
            not self._counts
        ):  # the common case, without the lock (a drop counted meanwhile waits for the next take)
            return None
        with self._lock:
            counts, self._counts = self._counts, Counter()
            first, last = self._first, self._last
        if not counts:
            return None
        names = tuple(sorted(counts))
        return LogGap(
            ts=time.time(),
            events=sum(counts.values()),
            names=names,
            counts=tuple(counts[n] for n in names),
            first_ts=first,
            last_ts=last,
            store_error=store_error,
        )


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LogHealth:
    """Whether the writer is writing, as status readers see it. The writer's thread sets it; any
    thread reads it (``status``), never waiting on the writer, which may be inside a busy wait."""

    def __init__(self, pending: Callable[[], int], dropped: Callable[[], int]) -> None:
        self._pending = pending
        self._dropped = dropped
        self.stalled_since: float | None = None
        self.reason: str | None = None
        """The store error of the current stall, else of the last one (``last_stall``)."""
        self.held = 0
        self.failures = 0
        self.recovered_at: float | None = None
        self._announced = 0.0

    def failed(self, reason: str, held: int) -> None:
        """A group could not be written: it is held for the next attempt. Says so on stderr at the
        first failure and then at most once every ``ANNOUNCE_EVERY_S``."""
        now = time.time()
        if self.stalled_since is None:
            self.stalled_since = now
            self._announced = 0.0
        self.reason, self.held = reason, held
        self.failures += 1
        if now - self._announced >= ANNOUNCE_EVERY_S:
            self._announced = now
            log.warning(
                "call log: not written since %s: the store is %s; %d events waiting, %d dropped so far; "
                "retrying",
                _iso(self.stalled_since),
                reason,
                held + self._pending(),
                self._dropped(),
            )

    def wrote(self) -> None:
        """A group was written: if the log was stalled, it is writing again (said once on stderr)."""
        if self.stalled_since is None:
            return
        now = time.time()
        log.warning(
            "call log: writing again after %.0f s (the store was %s); %d events dropped so far",
            now - self.stalled_since,
            self.reason,
            self._dropped(),
        )
        self.stalled_since, self.held, self.recovered_at = None, 0, now

    def status(self) -> dict[str, Any]:
        """The ``call_log`` part of ``harness status``."""
        stalled = self.stalled_since
        return {
            "state": "writing" if stalled is None else "stalled",
            "since": None if stalled is None else _iso(stalled),
            "reason": self.reason,
            "waiting": self.held + self._pending(),
            "dropped": self._dropped(),
            "recovered": None if self.recovered_at is None else _iso(self.recovered_at),
        }


def describe(state: Mapping[str, Any]) -> str:
    """One line for a ``call_log`` status: ``writing`` or the stall, its reason and the drops."""
    dropped = f", {state['dropped']:,} events dropped (recorded as log.gap)" if state["dropped"] else ""
    if state["state"] == "stalled":
        return (
            f"stalled since {state['since']}: the store is {state['reason']}; "
            f"{state['waiting']:,} events waiting{dropped}"
        )
    if state["recovered"]:
        return f"writing again since {state['recovered']} (the store was {state['reason']}){dropped}"
    return f"writing{dropped}"
