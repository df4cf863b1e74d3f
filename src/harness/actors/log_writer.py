"""The only writer of the store: appends event batches and folds them into projections, one txn each."""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pykka
from pydantic import BaseModel, ConfigDict

from harness.actors.asking import AnswersAsks
from harness.actors.intake import DEFAULT_CAPACITY, GROUP_EVENTS, EventIntake, Flush
from harness.actors.log_stall import LogHealth, store_error
from harness.events import Envelope, Event
from harness.projections import (
    Projection,
    all_projections,
    compact_folded,
    fold,
    fold_appended,
    install,
)
from harness.store import (
    StoreError,
    append_values,
    event_values,
    last_position,
    open_for_writing,
    read_rows,
    to_envelope,
    transaction,
    tune_for_writer,
)
from harness.store.checkpoints import BackgroundCheckpoints
from harness.store.giving_way import giving_way
from harness.store.retention import CompactionResult

log = logging.getLogger("harness.log_writer")

__all__ = [  # the intake's names stay importable from here (tests, benchmarks run on older code)
    "DEFAULT_CAPACITY",
    "GROUP_EVENTS",
    "GROUP_WINDOW_S",
    "MAX_BATCH",
    "Compact",
    "EventIntake",
    "LogWriterActor",
    "WaitFlushed",
    "WriterStatistics",
]

MAX_BATCH = 4_096
"""Events per transaction at most; a larger backlog commits in several groups."""

GROUP_WINDOW_S = 0.05
"""When woken with fewer than GROUP_EVENTS queued, the writer waits up to GROUP_WINDOW_S for more
first (any message ends the wait: an ask, a stop, the intake reaching GROUP_EVENTS), so a steady
trickle of calls costs one commit per window, not one per call. A commit costs the same CPU however
few events it holds, so the window sets the writer's CPU per call at ordinary rates; a longer window
makes each commit longer, and a call that arrives while one runs waits for a CPU behind it (the
figures that chose 50 ms: bench/README.md). What a kill -9 can lose is the last ≈ 50 ms of calls
(docs/dataset.md)."""


RETRY_FIRST_S = 0.1
RETRY_MAX_S = 2.0
"""A group the store refused is retried after RETRY_FIRST_S, doubling up to RETRY_MAX_S (on top of
the store's busy timeout, which a locked store waits out in each attempt)."""


@dataclass(frozen=True)
class WaitFlushed:
    """Command: drain everything emitted so far; answered with the last committed position."""


class _Retry:
    """Message: try the held group again (the retry timer's)."""


_RETRY = _Retry()


@dataclass(frozen=True)
class Compact:
    """Command: remove events (and call-log rows) older than ``older_than`` (event time, epoch s).

    Told to the writer (``writer_ref.tell(Compact(older_than=...))``); run in its thread by
    ``harness.store.retention.compact``, draining the intake between steps, and recorded as a
    ``retention.compacted`` event. Asked instead of told, the answer is the ``CompactionResult``.
    """

    older_than: float


class WriterStatistics(BaseModel):
    """What the writer has done so far."""

    model_config = ConfigDict(frozen=True)

    last_position: int
    events_written: int
    batches: int
    dropped: int
    pending: int
    compactions: int = 0


class _WakingInbox(queue.Queue[Any]):
    """The writer's inbox: each message also sets ``arrived``, which ends the writer's wait for a
    group, so an ask (``wait_flushed``, ``statistics``), a stop or a full group is served at once
    rather than after the window."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Event()

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        self.arrived.set()


class LogWriterActor(AnswersAsks, pykka.ThreadingActor):
    """Owns the store's single write connection; group-commits whatever the intake holds when woken.

    A group the store refuses (locked by another writer, disk full, an I/O error) is kept and
    retried with backoff while the intake absorbs new events; ``health`` says so meanwhile. Events
    are lost only when the intake overflows, and those are recorded as a ``log.gap``.
    """

    @staticmethod
    def _create_actor_inbox() -> _WakingInbox:
        return _WakingInbox()

    def _wait_for_group(self) -> None:
        """Let events gather for up to GROUP_WINDOW_S, unless a message arrives first."""
        inbox = self.actor_inbox
        assert isinstance(inbox, _WakingInbox)
        inbox.arrived.clear()
        if inbox.empty():  # a message put after this check sets ``arrived``: the wait ends at once
            inbox.arrived.wait(GROUP_WINDOW_S)

    def __init__(
        self,
        path: Path,
        intake: EventIntake,
        projections: Sequence[Projection] | None = None,
        on_commit: Callable[[int], None] | None = None,
        health: LogHealth | None = None,
    ) -> None:
        """``on_commit`` is called in the writer's thread after each commit, with the last position.

        The store is opened here, in the starting thread: one that cannot be opened for writing
        raises ``StoreError`` from ``start``, before the caller starts anything else.
        """
        super().__init__()
        self._on_commit = on_commit
        self._compactions = 0
        self._path = path
        self._intake = intake
        self._projections = tuple(projections) if projections is not None else all_projections()
        self.health = health or LogHealth(intake.__len__, lambda: intake.dropped)
        self._held: list[Event] = []
        """A group the store refused, written before anything newer."""
        self._held_error: str | None = None
        """The store error since the last group taken from the intake (for its ``log.gap``)."""
        self._retry_delay = RETRY_FIRST_S
        self._timer: threading.Timer | None = None
        self._checkpoints: BackgroundCheckpoints | None = None
        self._written = 0
        self._batches = 0
        conn = open_for_writing(path)
        try:
            tune_for_writer(conn)
            self._lowest = install(conn, self._projections)
            self._next = last_position(conn) + 1
        except apsw.Error as exc:
            conn.close()
            raise StoreError(f"{path}: cannot prepare the store for writing: {store_error(exc)}") from exc
        self._conn: apsw.Connection | None = conn

    def on_start(self) -> None:
        """Fold anything the projections have not seen yet; start background checkpoints."""
        conn = self._conn
        assert conn is not None
        if self._lowest < self._next - 1:
            self._catch_up(conn, self._lowest)
        self._checkpoints = BackgroundCheckpoints(self._path, conn)
        self._checkpoints.start()

    def _catch_up(self, conn: apsw.Connection, after: int) -> None:
        batch: list[Envelope] = []
        for row in read_rows(conn, after=after):
            batch.append(to_envelope(row))
            if len(batch) >= MAX_BATCH:
                with conn:
                    fold(conn.cursor(), self._projections, batch)
                batch = []
        with conn:
            fold(conn.cursor(), self._projections, batch)

    def handle(self, message: Any) -> Any:
        """A flush wake-up or a ``Compact`` command (a failing one is logged; the writer goes on)."""
        if isinstance(message, _Retry):
            self._timer = None
            self._drain()
            return None
        if isinstance(message, Flush):
            if self._held:  # the store refused a group: the retry timer wakes the writer
                return None
            queued = len(self._intake)
            if not queued:  # told while a drain already took its events
                return None
            if queued < GROUP_EVENTS:
                self._wait_for_group()  # the wake flag stays set: the intake tells again only when full
            self._drain(backlog_only=True)
            return None
        if isinstance(message, WaitFlushed):
            return self.wait_flushed()
        if isinstance(message, Compact):
            try:
                return self.compact(message.older_than)
            except apsw.Error as exc:
                log.warning(
                    "retention compaction stopped: the store is %s; it runs again later", store_error(exc)
                )
                return None
            except Exception:  # a told command must not stop the only writer
                log.exception("retention compaction failed; the log is as the last finished step left it")
                return None
        raise TypeError(f"LogWriterActor: unhandled message {message!r}")

    def compact(self, older_than: float) -> CompactionResult:
        """Run retention now (see ``Compact``); the intake is drained between its steps."""
        conn = self._conn
        assert conn is not None
        if not math.isfinite(older_than):
            raise ValueError(f"older_than must be a finite time, not {older_than!r}")
        self._drain()
        result = compact_folded(
            conn, older_than=older_than, projections=self._projections, between_steps=self._drain
        )
        self._next = result.position + 1
        if self._checkpoints is not None:
            self._checkpoints.after_commit()
        self._written += 1
        self._batches += 1
        self._compactions += 1
        if self._on_commit is not None:
            self._on_commit(result.position)
        return result

    def _drain(self, *, backlog_only: bool = False) -> bool:
        """Write groups until the intake is empty; False when the store refused one (it is held and
        a retry is scheduled). ``backlog_only``: stop at less than a group that has told the writer
        again (events that came during the last commit): they wait for their window like any
        trickle rather than cost a commit of their own right after it."""
        while group := self._held or self._next_group():
            try:
                self.write(group)
            except apsw.Error as exc:
                self._hold(group, store_error(exc))
                return False
            self._held = []
            self._retry_delay = RETRY_FIRST_S
            self.health.wrote()
            if backlog_only and len(self._intake) < GROUP_EVENTS and self._intake.told:
                break
        return True

    def _next_group(self) -> list[Event]:
        """Up to MAX_BATCH events from the intake, after the ``log.gap`` of any it dropped."""
        events = self._intake.take(MAX_BATCH)
        gap = self._intake.gap.take(self._held_error)
        self._held_error = None
        return events if gap is None else [gap, *events]

    def _hold(self, group: list[Event], reason: str) -> None:
        """Keep a refused group for the next attempt, after a backoff."""
        self._held, self._held_error = group, reason
        self.health.failed(reason, len(group))
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self._retry_delay, self._tell_retry)
        self._timer.daemon = True
        self._timer.start()
        self._retry_delay = min(self._retry_delay * 2, RETRY_MAX_S)

    def _tell_retry(self) -> None:
        try:
            self.actor_ref.tell(_RETRY)
        except pykka.ActorDeadError:  # stopped meanwhile
            pass

    def write(self, events: Sequence[Event]) -> int:
        """Append and fold a batch in one transaction; return the last position written."""
        conn = self._conn
        assert conn is not None
        first = self._next
        values = event_values(events, first)  # each event serialized once, before the transaction
        # a trickle beside live calls gives way to them; a backlog is drained at full speed
        with giving_way(conn) if len(events) < GROUP_EVENTS else nullcontext(), transaction(conn) as cursor:
            append_values(cursor, values)
            fold_appended(cursor, self._projections, events, first)
        if self._checkpoints is not None:
            self._checkpoints.after_commit()
        self._next += len(events)
        self._written += len(events)
        self._batches += 1
        if self._on_commit is not None:
            self._on_commit(self._next - 1)
        return self._next - 1

    def wait_flushed(self) -> int:
        """Drain everything emitted so far and return the last committed position."""
        self._drain()
        return self._next - 1

    def statistics(self) -> WriterStatistics:
        """Counters for tests, benchmarks and ``harness doctor``."""
        return WriterStatistics(
            last_position=self._next - 1,
            events_written=self._written,
            batches=self._batches,
            dropped=self._intake.dropped,
            pending=len(self._intake),
            compactions=self._compactions,
        )

    def on_stop(self) -> None:
        """Commit what is still queued (what the store still refuses is counted as dropped, and
        said), then close the connection."""
        if self._timer is not None:
            self._timer.cancel()
        if self._conn is not None:
            if not self._drain():
                lost = [*self._held, *self._intake.take(len(self._intake))]
                self._intake.lose(lost)
                log.error(
                    "call log: %d events not written at stop: the store is %s", len(lost), self.health.reason
                )
            if self._checkpoints is not None:
                self._checkpoints.stop()
                self._checkpoints = None
            self._conn.close()
            self._conn = None
