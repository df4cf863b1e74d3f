"""One supervision shape for every supervised child: an upstream's connection and a harness's process.

A :class:`Supervisor` owns one child's status and restart history (the state machine of
``rules.restarts``, moving only as ``vocabulary.SUPERVISED_MOVES`` allows) and its restart timer.
The child's side supplies what differs: how to start it again (``restart``) and what a change of
status publishes (``changed``: an upstream its snapshot and ``upstream.state_changed``, a harness
its ``harness.state_changed``). It lives on the loop, as the child does.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from harness.rules.restarts import SupervisorState, exited, initialized, reset, stopped
from harness.vocabulary import SUPERVISED_MOVES, SupervisedStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Change:
    """The child's new supervision state, why it changed, and the delay of the restart it awaits."""

    state: SupervisorState
    reason: str
    delay: float | None = None


class Supervisor:
    """One child's supervision: its status, restart history and restart timer."""

    def __init__(
        self,
        *,
        restart: Callable[[], Awaitable[object]],
        changed: Callable[[Change], None],
        delay: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        """``restart`` starts the child again once a backoff is over (keeping the history);
        ``changed`` publishes each change; ``delay`` is the first restart's delay, read at each exit."""
        self._restart, self._changed, self._delay = restart, changed, delay
        self._clock, self._rng = clock, rng
        self.state = SupervisorState()
        self._pending: asyncio.Task[None] | None = None

    @property
    def status(self) -> SupervisedStatus:
        """Where the child is (:data:`~harness.vocabulary.SupervisedStatus`)."""
        return self.state.status

    @property
    def restart_pending(self) -> bool:
        """A restart is waiting out its backoff, or past it and starting the child."""
        return self._pending is not None

    def _move(self, state: SupervisorState, reason: str, delay: float | None = None) -> bool:
        """Take the new state if the move is allowed (else a late fact: ignored) and publish it."""
        if state.status not in SUPERVISED_MOVES[self.state.status]:
            log.debug("supervisor: %s → %s ignored (%s)", self.state.status, state.status, reason)
            return False
        self.state = state
        self._changed(Change(state, reason, delay))
        return True

    def up(self) -> None:
        """The child is up: an upstream answered its handshake, a harness process was spawned."""
        self._move(initialized(self.state, self._clock()), "initialized")

    def exited(self) -> None:
        """The child ended unasked: restart it after a backoff, or give up (``failed``)."""
        decision = exited(self.state, self._clock(), self._delay(), self._rng)
        if decision.delay is None:
            self._move(decision.state, "flapping")
        elif self._move(decision.state, "exited", decision.delay):
            self._pending = asyncio.get_running_loop().create_task(self._restart_later(decision.delay))

    def reset(self, reason: str) -> None:
        """A start afresh (a start, ``harness restart``): the history is forgotten."""
        self._move(reset(), reason)

    def stopped(self, reason: str) -> None:
        """The daemon stopped the child."""
        self._move(stopped(), reason)

    def call_off(self) -> asyncio.Task[None] | None:
        """Call off the pending restart, waiting or starting the child (not from inside it: the
        restart's own start runs in it); the cancelled task, for the caller to await."""
        task = self._pending
        if task is None or task is asyncio.current_task():
            return None
        self._pending = None
        task.cancel()
        return task

    async def _restart_later(self, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            await self._restart()
        finally:
            if self._pending is asyncio.current_task():
                self._pending = None
