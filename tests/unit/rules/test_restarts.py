"""Restart policy with an injected clock: backoff, reset after a stable period, flapping → failed."""

from __future__ import annotations

import pytest

from harness.rules.restarts import (
    BACKOFF_CAP_S,
    MAX_RESTARTS,
    STABLE_S,
    SupervisorState,
    exited,
    initialized,
)


def no_jitter() -> float:
    return 0.5  # 1 + 0.2 * (2 * 0.5 - 1) == 1


def test_the_delay_doubles_from_restart_delay_and_is_capped():
    state, delays, now = SupervisorState(), [], 0.0
    for _ in range(MAX_RESTARTS):
        decision = exited(state, now, 1.0, no_jitter)
        delays.append(decision.delay)
        state, now = decision.state, now + 100.0  # far apart: never flapping
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert exited(SupervisorState(attempt=10), 0.0, 1.0, no_jitter).delay == BACKOFF_CAP_S


def test_jitter_stays_within_twenty_percent():
    low = exited(SupervisorState(), 0.0, 10.0, lambda: 0.0).delay
    high = exited(SupervisorState(), 0.0, 10.0, lambda: 0.999999).delay
    assert low == pytest.approx(8.0) and high == pytest.approx(12.0, rel=1e-4)


def test_the_backoff_resets_only_after_a_stable_period_up():
    state = SupervisorState(attempt=4, restarts=(0.0,))
    short = exited(initialized(state, 100.0), 100.0 + STABLE_S - 1, 1.0, no_jitter)
    assert short.delay == 16.0
    stable = exited(initialized(state, 100.0), 100.0 + STABLE_S, 1.0, no_jitter)
    assert stable.delay == 1.0


def test_a_crash_looping_upstream_reaches_failed_per_the_documented_defaults():
    state, now, delays = SupervisorState(), 0.0, []
    while True:
        decision = exited(state, now, 1.0, no_jitter)
        state = decision.state
        if decision.delay is None:
            break
        delays.append(decision.delay)
        now += decision.delay + 0.05  # it crashes right after each start
    assert state.status == "failed"
    assert len(delays) == MAX_RESTARTS
    assert now < 60  # about half a minute of crash-looping, then it stops spawning
