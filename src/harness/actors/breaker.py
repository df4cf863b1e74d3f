"""The circuit breaker of one upstream: a pure state machine, and the actor that owns it.

Closed: calls go through; ``failures`` counts consecutive transport errors and timeouts. At
``threshold`` it opens for ``cooldown`` seconds: calls are refused with ``circuit_open`` without
reaching the upstream. After the cooldown one call is admitted as a probe (half-open); its success
closes the breaker, its failure opens it again for another cooldown. Tool errors (``isError``) are
successful transport, and a caller's cancellation is neither success nor failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import pykka
from pydantic import BaseModel, ConfigDict

from harness.actors.asking import AnswersAsks

Status = Literal["closed", "open", "half_open"]
Admission = Literal["forward", "probe", "refuse"]


@dataclass(frozen=True, slots=True)
class BreakerState:
    """What the breaker knows. ``opened_at`` is a monotonic time."""

    status: Status = "closed"
    failures: int = 0
    opened_at: float = 0.0


@dataclass(frozen=True, slots=True)
class CallSucceeded:
    """Fact: an upstream answered a call (result or tool error)."""


@dataclass(frozen=True, slots=True)
class CallFailed:
    """Fact: a call ended in a transport error or a timeout at monotonic time ``at``."""

    at: float


@dataclass(frozen=True, slots=True)
class ProbeStarted:
    """Fact: after the cooldown, one call was admitted as the probe."""


@dataclass(frozen=True, slots=True)
class ProbeAbandoned:
    """Fact: the probe's caller cancelled it; the next call may probe instead."""


Fact = CallSucceeded | CallFailed | ProbeStarted | ProbeAbandoned


def evolve(state: BreakerState, fact: Fact, threshold: int) -> BreakerState:
    """The breaker after one fact."""
    if isinstance(fact, CallSucceeded):
        return BreakerState() if state != BreakerState() else state
    if isinstance(fact, ProbeStarted):
        return replace(state, status="half_open") if state.status == "open" else state
    if isinstance(fact, ProbeAbandoned):
        return replace(state, status="open") if state.status == "half_open" else state
    failures = state.failures + 1
    if state.status == "half_open" or failures >= threshold:
        return BreakerState("open", failures, fact.at)
    return replace(state, failures=failures)


def admit(state: BreakerState, now: float, cooldown: float) -> Admission:
    """What to do with a new call: forward it, make it the probe, or refuse it."""
    if state.status == "closed":
        return "forward"
    if state.status == "open" and now - state.opened_at >= cooldown:
        return "probe"
    return "refuse"


class BreakerStatistics(BaseModel):
    """The breaker's current state, for tests and ``harness doctor``."""

    model_config = ConfigDict(frozen=True)

    upstream: str
    status: Status
    failures: int


class BreakerActor(AnswersAsks, pykka.ThreadingActor):
    """Owns one upstream's breaker; publishes each new state through ``publish`` before answering."""

    def __init__(
        self,
        upstream: str,
        threshold: int,
        publish: Callable[[BreakerState], None],
        on_transition: Callable[[str, BreakerState, BreakerState], None] | None = None,
    ) -> None:
        super().__init__()
        self._upstream = upstream
        self._threshold = threshold
        self._publish = publish
        self._on_transition = on_transition
        self._state = BreakerState()

    def handle(self, message: Any) -> Any:
        """Evolve on a fact; answer with the new state (the answer is the acknowledgement)."""
        if not isinstance(message, CallSucceeded | CallFailed | ProbeStarted | ProbeAbandoned):
            raise TypeError(f"unhandled message {message!r}")
        old = self._state
        new = evolve(old, message, self._threshold)
        if new != old:
            self._state = new
            self._publish(new)
            if self._on_transition is not None and new.status != old.status:
                self._on_transition(self._upstream, old, new)
        return new

    def statistics(self) -> BreakerStatistics:
        """The current state."""
        s = self._state
        return BreakerStatistics(upstream=self._upstream, status=s.status, failures=s.failures)


def monotonic() -> float:
    """The breaker's clock (monotonic seconds); injectable in tests by passing ``now``."""
    return time.monotonic()
