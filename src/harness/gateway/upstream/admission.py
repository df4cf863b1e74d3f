"""Admitting calls to one upstream: its breaker (read from the owner's snapshot) and its
concurrency slots.

The breaker's state is owned by its ``BreakerActor``. Per call the gate reads the published snapshot
(no ask). Two rare moments are acknowledged hand-offs, so what a caller observes is always what the
owner decided: claiming the half-open probe, and reporting a failure (the caller hears of its failure
only after the breaker counted it: the call right after the N-th failure is refused even when the
agent retries at once). A success is told only when there is something to reset.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pykka

from harness.actors.asking import tell_then
from harness.actors.snapshots import Published
from harness.rules.breaker import BreakerState, CallFailed, CallSucceeded, ClaimProbe, ProbeAbandoned, admit

log = logging.getLogger(__name__)

Admission = Callable[[bool], None]


class BreakerGate:
    """The loop's side of one upstream's breaker."""

    def __init__(
        self,
        actor: pykka.ActorRef[Any],
        snapshot: Published[BreakerState],
        cooldown: float,
        clock: Callable[[], float],
    ) -> None:
        self._actor = actor
        self._snapshot = snapshot
        self._cooldown = cooldown
        self._clock = clock

    @property
    def state(self) -> BreakerState:
        """The owner's latest published state."""
        return self._snapshot.current

    def admit(self, then: Admission) -> bool | None:
        """True: forward now. False: refuse (open). None: a probe claim went to the owner and
        ``then(granted)`` runs on the loop once it decided."""
        decision = admit(self._snapshot.current, self._clock(), self._cooldown)
        if decision == "forward":
            return True
        if decision == "refuse":
            return False
        self._ask(ClaimProbe(self._clock()), lambda granted: then(granted is True))
        return None

    def succeeded(self, probe: bool, then: Callable[[], None]) -> None:
        """An answer came back; a probe's success is counted before ``then`` runs."""
        if probe:
            self._ask(CallSucceeded(), lambda _state: then())
            return
        if self._snapshot.current.failures:
            self._actor.tell(CallSucceeded())
        then()

    def failed(self, then: Callable[[], None]) -> None:
        """A transport error or timeout: counted by the owner before ``then`` runs."""
        self._ask(CallFailed(self._clock()), lambda _state: then())

    def abandoned(self) -> None:
        """The probe's caller cancelled: the next call may probe."""
        self._actor.tell(ProbeAbandoned())

    def _ask(self, message: object, then: Callable[[Any], None]) -> None:
        def continue_(value: Any, exc: BaseException | None) -> None:
            if exc is not None:
                log.error("breaker failed on %r: %s", message, exc)
            then(value)

        tell_then(self._actor, message, continue_)


class Slots:
    """``max_concurrency`` slots; callers beyond them wait in arrival order (within their deadline)."""

    __slots__ = ("_active", "_limit", "_waiting")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._active = 0
        self._waiting: dict[int, Callable[[], None]] = {}

    def acquire(self, uid: int, start: Callable[[], None]) -> None:
        """Run ``start`` now if a slot is free, else when one frees (unless withdrawn first)."""
        if self.take():
            start()
        else:
            self._waiting[uid] = start

    def take(self) -> bool:
        """Take a slot if one is free now (True), without queueing."""
        if self._active < self._limit:
            self._active += 1
            return True
        return False

    def withdraw(self, uid: int) -> bool:
        """Stop waiting; True if ``uid`` was waiting."""
        return self._waiting.pop(uid, None) is not None

    def release(self) -> None:
        """A call ended: its slot goes to the longest waiter, if any."""
        self._active -= 1
        while self._waiting and self._active < self._limit:
            uid = next(iter(self._waiting))
            start = self._waiting.pop(uid)
            self._active += 1
            start()

    def drain(self) -> list[int]:
        """Forget every waiter (the upstream went away); their ids."""
        waiting, self._waiting = self._waiting, {}
        return list(waiting)

    @property
    def active(self) -> int:
        """Calls holding a slot."""
        return self._active

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot."""
        return len(self._waiting)


class Deadlines:
    """Each call's deadline (loop time) by upstream id, in submission order: the timeout is the
    link's, so the first is the earliest. One timer, at the first deadline, serves them all (a timer
    per call cost a heap push and a cancel per call)."""

    def __init__(self, passed: Callable[[int], None]) -> None:
        self._passed = passed
        self._due: dict[int, float] = {}
        self._sweep: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, uid: int, timeout: float) -> None:
        """``uid``'s deadline is ``timeout`` seconds from now."""
        loop = self._loop
        if loop is None:  # the link's loop, found once: each lookup is a getpid() system call
            loop = self._loop = asyncio.get_running_loop()
        due = self._due[uid] = loop.time() + timeout
        if self._sweep is None:
            self._sweep = loop.call_at(due, self._sweep_due)

    def discard(self, uid: int) -> None:
        """``uid`` ended otherwise."""
        self._due.pop(uid, None)

    def clear(self) -> None:
        """Every call ended otherwise."""
        self._due.clear()

    def _sweep_due(self) -> None:
        """The first deadline is due: tell of every one that passed (skipping calls that ended
        otherwise), then wait for the next one."""
        self._sweep = None
        due_at = self._due
        loop = self._loop or asyncio.get_running_loop()
        while due_at:
            uid = next(iter(due_at))
            due = due_at[uid]
            if due > loop.time():
                self._sweep = loop.call_at(due, self._sweep_due)
                return
            del due_at[uid]
            self._passed(uid)
