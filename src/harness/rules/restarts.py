"""Restart policy of a supervised child (an upstream, a harness): backoff with jitter, reset after
a stable period, and flapping.

Defaults, and why:
- The restart delay (an upstream's ``restart_delay``, default 1 s; a harness's 1 s) doubles after
  each restart up to ``BACKOFF_CAP_S`` (30 s), with ±20 % jitter so many children restarted together
  do not stampede.
- The backoff resets once the child stayed up for ``STABLE_S`` (30 s).
- Flapping: more than ``MAX_RESTARTS`` (5) restarts within ``WINDOW_S`` (60 s) moves the child to
  ``failed`` (an upstream's calls fail fast with ``upstream_unavailable``) until a start,
  ``harness restart`` or a reload. This is OTP's MaxR/MaxT intensity with systemd's start-limit
  numbers (burst 5 within an interval), with a longer window than systemd's 10 s because the backoff
  spreads five restarts over 1 + 2 + 4 + 8 + 16 = 31 s: a server that crashes at start reaches
  ``failed`` in about half a minute, while one that crashes once an hour never does.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from harness.vocabulary import SupervisedStatus

BACKOFF_CAP_S = 30.0
JITTER = 0.2
STABLE_S = 30.0
MAX_RESTARTS = 5
WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class SupervisorState:
    """Supervision facts of one child. Times are monotonic seconds."""

    status: SupervisedStatus = "starting"
    attempt: int = 0
    """Restarts since the backoff was last reset."""
    restarts: tuple[float, ...] = ()
    """Times of recent restarts (within the flapping window)."""
    up_since: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do after an exit: restart after ``delay`` seconds, or give up (``failed``)."""

    state: SupervisorState
    delay: float | None


def initialized(state: SupervisorState, now: float) -> SupervisorState:
    """The child is up (an upstream answered its handshake, a harness process was spawned)."""
    return replace(state, status="up", up_since=now)


def exited(
    state: SupervisorState, now: float, base_delay: float, rng: Callable[[], float] = random.random
) -> Decision:
    """The child's process ended (or its session dropped) unexpectedly: restart or give up."""
    attempt = state.attempt
    if state.up_since is not None and now - state.up_since >= STABLE_S:
        attempt = 0
    recent = tuple(t for t in state.restarts if now - t < WINDOW_S)
    if len(recent) >= MAX_RESTARTS:
        return Decision(SupervisorState("failed", attempt, recent, None), None)
    delay = min(BACKOFF_CAP_S, base_delay * 2**attempt) * (1 + JITTER * (2 * rng() - 1))
    return Decision(SupervisorState("restarting", attempt + 1, (*recent, now), None), delay)


def reset() -> SupervisorState:
    """A fresh start (``harness restart`` or a reload): history forgotten."""
    return SupervisorState()


def stopped() -> SupervisorState:
    """The daemon stopped the child."""
    return SupervisorState(status="stopped")
