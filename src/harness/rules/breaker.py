"""The circuit breaker of one upstream, as a pure state machine (its owner is ``BreakerActor``).

Closed: calls go through; ``failures`` counts consecutive transport errors and timeouts. At
``threshold`` it opens for ``cooldown`` seconds: calls are refused with ``circuit_open`` without
reaching the upstream. After the cooldown one call claims the probe (half-open); its success closes
the breaker, its failure opens it again for another cooldown, its cancellation hands the probe to
the next call. Tool errors (``isError``) are successful transport, and a caller's cancellation is
neither success nor failure. Times are monotonic seconds carried by the facts, so the machine has
no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from harness.rules.facts import AtTime
from harness.vocabulary import BreakerStatus

Admission = Literal["forward", "probe", "refuse"]


@dataclass(frozen=True, slots=True)
class BreakerState:
    """What the breaker knows. ``opened_at`` is a monotonic time."""

    status: BreakerStatus = "closed"
    failures: int = 0
    opened_at: float = 0.0


CLOSED = BreakerState()


@dataclass(frozen=True, slots=True)
class CallSucceeded:
    """Fact: an upstream answered a call (result or tool error)."""


class CallFailed(AtTime):
    """Fact: a call ended in a transport error or a timeout at monotonic time ``at``."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ProbeAbandoned:
    """Fact: the probe's caller cancelled it; the next call may probe instead."""


class ClaimProbe(AtTime):
    """Command: a call at monotonic time ``at`` wants to be the probe; answered granted or not."""

    __slots__ = ()


Fact = CallSucceeded | CallFailed | ClaimProbe | ProbeAbandoned


def admit(state: BreakerState, now: float, cooldown: float) -> Admission:
    """What to do with a new call: forward it, let it claim the probe, or refuse it."""
    if state.status == "closed":
        return "forward"
    if state.status == "open" and now - state.opened_at >= cooldown:
        return "probe"
    return "refuse"


def evolve(state: BreakerState, fact: Fact, threshold: int, cooldown: float) -> BreakerState:
    """The breaker after one fact."""
    if isinstance(fact, CallSucceeded):
        return CLOSED
    if isinstance(fact, ClaimProbe):
        if admit(state, fact.at, cooldown) == "probe":
            return replace(state, status="half_open")
        return state
    if isinstance(fact, ProbeAbandoned):
        return replace(state, status="open") if state.status == "half_open" else state
    failures = state.failures + 1
    if state.status == "half_open" or failures >= threshold:
        return BreakerState("open", failures, fact.at)
    return replace(state, failures=failures)
