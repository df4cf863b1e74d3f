"""UpstreamActor: the one owner of an upstream's supervised state (the rules are ``rules.restarts``).

The link tells it what happened to the connection; it evolves the state, publishes the status the
loop reads per call (``Published[UpstreamStatus]``), publishes ``upstream.state_changed``, and
answers ``Exited`` with the decision (restart after a delay, or failed).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pykka
from pydantic import BaseModel, ConfigDict

from harness.actors.asking import AnswersAsks
from harness.actors.snapshots import Published
from harness.events import Event, UpstreamStateChanged
from harness.rules.facts import AtTime
from harness.rules.restarts import Decision, SupervisorState, exited, initialized, reset
from harness.vocabulary import StopReason, UpstreamStatus


class Initialized(AtTime):
    """Fact: the upstream answered its handshake at monotonic time ``at``."""

    __slots__ = ()


class Exited(AtTime):
    """Fact: the upstream's process ended or its session dropped, at monotonic time ``at``."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Restarted:
    """Command: forget the history and start again (``harness restart``)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Stopped:
    """Fact: the daemon stopped the upstream for good, and why."""

    reason: StopReason = "daemon stopping"


class UpstreamStatistics(BaseModel):
    """The upstream's supervision state."""

    model_config = ConfigDict(frozen=True)

    upstream: str
    status: UpstreamStatus
    restarts: int


class UpstreamActor(AnswersAsks, pykka.ThreadingActor):
    """Single owner of an upstream's status and restart history."""

    def __init__(
        self,
        upstream: str,
        restart_delay: float,
        status: Published[UpstreamStatus],
        publish: Callable[[Event], None],
        rng: Callable[[], float] = random.random,
    ) -> None:
        super().__init__()
        self._upstream, self._delay, self._rng = upstream, restart_delay, rng
        self._status, self._publish = status, publish
        self._state = SupervisorState()
        status.current = self._state.status

    def _changed(self, reason: str, delay: float | None = None) -> None:
        """Publish the new status: first the snapshot the loop reads, then the event."""
        state = self._state
        self._status.current = state.status
        fields = {"upstream": self._upstream, "state": state.status, "restarts": state.attempt}
        delay_s = None if delay is None else round(delay, 3)
        self._publish(UpstreamStateChanged(ts=time.time(), **fields, delay_s=delay_s, reason=reason))

    def handle(self, message: Any) -> Any:
        """Facts and commands; ``Exited`` is answered with the decision."""
        if isinstance(message, Initialized):
            self._state = initialized(self._state, message.at)
            self._changed("initialized")
            return None
        if isinstance(message, Exited):
            decision: Decision = exited(self._state, message.at, self._delay, self._rng)
            self._state = decision.state
            if decision.delay is None:
                self._changed("flapping")
            else:
                self._changed("exited", decision.delay)
            return decision
        if isinstance(message, Restarted):
            self._state = reset()
            self._changed(message.reason)
            return None
        if isinstance(message, Stopped):
            self._state = SupervisorState(status="stopped")
            self._changed(message.reason)
            return None
        raise TypeError(f"UpstreamActor: unhandled message {message!r}")

    def statistics(self) -> UpstreamStatistics:
        """The current supervision state."""
        return UpstreamStatistics(
            upstream=self._upstream, status=self._state.status, restarts=self._state.attempt
        )
