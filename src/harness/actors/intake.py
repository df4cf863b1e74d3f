"""The loop's side of the log writer: a bounded intake that never blocks, and the wake-up it tells."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pykka

from harness.actors.log_stall import DropTally
from harness.events import Event

DEFAULT_CAPACITY = 65_536
"""Events the intake holds before it drops (and counts) new ones."""

GROUP_EVENTS = 256
"""Events that make a group: the intake tells the writer again when it holds this many."""

INTAKE_ENV = "HARNESS_LOG_INTAKE"
"""Environment variable that sets the daemon's intake capacity (events), for tests of overflow."""


def intake_capacity() -> int:
    """The daemon's intake capacity: ``HARNESS_LOG_INTAKE`` if set to a positive integer, else the default."""
    value = os.environ.get(INTAKE_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_CAPACITY


class Flush:
    """Message: drain the intake into the store."""


FLUSH = Flush()


class EventIntake:
    """The loop's side of the writer: a bounded queue that never blocks the caller.

    ``emit`` appends and, when the writer is not already woken, tells it to flush. A full intake
    drops the event and counts it (``dropped``, ``on_drop`` — the daemon's
    ``harness_mcp_call_log_dropped_total`` — and ``gap``, which the writer records as a ``log.gap``
    with its next group). Only a full intake drops an event.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY, on_drop: Callable[[], object] | None = None) -> None:
        self.capacity = capacity
        self.dropped = 0
        self.gap = DropTally()
        self._on_drop = on_drop
        self._queue: deque[Event] = deque()
        self._woken = False
        self._writer: pykka.ActorRef[Any] | None = None

    def attach(self, writer: pykka.ActorRef[Any]) -> None:
        """Connect the intake to its writer actor."""
        self._writer = writer

    def emit(self, event: Event) -> None:
        """Hand one event to the writer; never blocks."""
        if len(self._queue) >= self.capacity:
            self._drop(event)
            return
        pending = self._queue
        pending.append(event)
        if self._writer is None:
            return
        if not self._woken:
            self._woken = True
            self._writer.tell(FLUSH)
        elif len(pending) == GROUP_EVENTS:  # a group is ready: end the writer's wait for one now
            self._writer.tell(FLUSH)

    def lose(self, events: Sequence[Event]) -> None:
        """Count events that will never be written (the store still refused them at stop) as dropped."""
        for event in events:
            self._drop(event)

    def _drop(self, event: Event) -> None:
        self.dropped += 1
        self.gap.add(event)
        if self._on_drop is not None:
            self._on_drop()

    def take(self, limit: int) -> list[Event]:
        """Writer side: clear the wake flag, then pop up to ``limit`` events in order."""
        self._woken = False
        queue = self._queue
        count = min(limit, len(queue))
        return [queue.popleft() for _ in range(count)]

    @property
    def told(self) -> bool:
        """Whether the writer has been told of what the intake holds since it last took from it."""
        return self._woken

    def __len__(self) -> int:
        return len(self._queue)
