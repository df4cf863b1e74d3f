"""BreakerActor: the one owner of an upstream's circuit breaker (the rules are ``rules.breaker``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pykka
from pydantic import BaseModel, ConfigDict

from harness.actors.asking import AnswersAsks
from harness.actors.snapshots import Published
from harness.events import CircuitClosed, CircuitOpened, Event
from harness.rules.breaker import (
    BreakerState,
    CallFailed,
    CallSucceeded,
    ClaimProbe,
    ProbeAbandoned,
    evolve,
)
from harness.vocabulary import BreakerStatus


class BreakerStatistics(BaseModel):
    """The breaker's current state, for tests and ``harness doctor``."""

    model_config = ConfigDict(frozen=True)

    upstream: str
    status: BreakerStatus
    failures: int


class BreakerActor(AnswersAsks, pykka.ThreadingActor):
    """Owns one upstream's breaker. Each new state is published to ``snapshot`` (which the loop reads
    per call, without asking) before the message is answered; a change of status is published as
    ``circuit.opened`` / ``circuit.closed``. ``ClaimProbe`` is answered True for the one call granted
    the probe."""

    def __init__(
        self,
        upstream: str,
        threshold: int,
        cooldown: float,
        snapshot: Published[BreakerState],
        publish: Callable[[Event], None],
    ) -> None:
        super().__init__()
        self._upstream = upstream
        self._threshold = threshold
        self._cooldown = cooldown
        self._snapshot = snapshot
        self._publish = publish
        self._state = snapshot.current

    def handle(self, message: Any) -> Any:
        """Evolve on a fact; answer with the new state, or for ``ClaimProbe`` whether it was granted."""
        if not isinstance(message, CallSucceeded | CallFailed | ClaimProbe | ProbeAbandoned):
            raise TypeError(f"BreakerActor: unhandled message {message!r}")
        old = self._state
        new = evolve(old, message, self._threshold, self._cooldown)
        if new != old:
            self._state = new
            self._snapshot.current = new
            if new.status != old.status:
                self._transition(message, old, new)
        if isinstance(message, ClaimProbe):
            return old.status == "open" and new.status == "half_open"
        return new

    def _transition(self, fact: object, old: BreakerState, new: BreakerState) -> None:
        if new.status == "open" and isinstance(fact, CallFailed):
            self._publish(
                CircuitOpened(
                    ts=time.time(), upstream=self._upstream, failures=new.failures, cooldown_s=self._cooldown
                )
            )
        elif new.status == "closed":
            self._publish(CircuitClosed(ts=time.time(), upstream=self._upstream))

    def statistics(self) -> BreakerStatistics:
        """The current state."""
        s = self._state
        return BreakerStatistics(upstream=self._upstream, status=s.status, failures=s.failures)
