"""The circuit breaker as a pure state machine, and its owner actor's acknowledgements."""

from __future__ import annotations

import pytest

from harness.actors.asking import Ask
from harness.actors.breaker import BreakerActor
from harness.actors.snapshots import Published
from harness.events import CircuitClosed, CircuitOpened, Event
from harness.rules.breaker import (
    CLOSED,
    BreakerState,
    CallFailed,
    CallSucceeded,
    ClaimProbe,
    ProbeAbandoned,
    admit,
    evolve,
)

THRESHOLD, COOLDOWN = 5, 30.0


def run(state: BreakerState, *facts) -> BreakerState:
    for fact in facts:
        state = evolve(state, fact, THRESHOLD, COOLDOWN)
    return state


def test_five_consecutive_failures_open_the_breaker_and_the_sixth_call_is_refused():
    state = run(BreakerState(), *[CallFailed(at=100.0 + i) for i in range(4)])
    assert state.status == "closed" and admit(state, 104.0, COOLDOWN) == "forward"
    state = run(state, CallFailed(at=104.0))
    assert (state.status, state.failures, state.opened_at) == ("open", 5, 104.0)
    assert admit(state, 104.001, COOLDOWN) == "refuse"


def test_a_success_resets_the_count_of_consecutive_failures():
    state = run(BreakerState(), *[CallFailed(at=1.0)] * 4, CallSucceeded(), *[CallFailed(at=2.0)] * 4)
    assert state.status == "closed" and state.failures == 4


def test_after_the_cooldown_one_claimed_probe_closes_it_on_success():
    opened = run(BreakerState(), *[CallFailed(at=10.0)] * 5)
    assert admit(opened, 39.9, COOLDOWN) == "refuse"
    assert run(opened, ClaimProbe(at=39.9)) == opened  # too early: nothing to claim
    assert admit(opened, 40.0, COOLDOWN) == "probe"
    probing = run(opened, ClaimProbe(at=40.0))
    assert probing.status == "half_open" and admit(probing, 41.0, COOLDOWN) == "refuse"
    assert run(probing, CallSucceeded()) == CLOSED


def test_a_failed_probe_opens_it_for_another_cooldown():
    probing = run(BreakerState(), *[CallFailed(at=10.0)] * 5, ClaimProbe(at=45.0))
    reopened = run(probing, CallFailed(at=50.0))
    assert reopened.status == "open" and reopened.opened_at == 50.0
    assert admit(reopened, 79.0, COOLDOWN) == "refuse" and admit(reopened, 80.0, COOLDOWN) == "probe"


def test_an_abandoned_probe_lets_the_next_call_probe():
    probing = run(BreakerState(), *[CallFailed(at=10.0)] * 5, ClaimProbe(at=45.0))
    assert admit(run(probing, ProbeAbandoned()), 45.0, COOLDOWN) == "probe"


def test_the_actor_publishes_each_state_before_it_answers_and_the_opening_as_an_event():
    snapshot = Published(CLOSED)
    events: list[Event] = []
    ref = BreakerActor.start("up", THRESHOLD, COOLDOWN, snapshot, events.append)
    try:
        for i in range(5):
            answer = ref.ask(CallFailed(at=float(i)), timeout=5)
            assert snapshot.current == answer
        assert answer.status == "open"
        assert [type(e) for e in events] == [CircuitOpened]
        assert ref.proxy().statistics().get(timeout=5).failures == 5
        assert ref.ask(CallSucceeded(), timeout=5) == CLOSED
        assert [type(e) for e in events] == [CircuitOpened, CircuitClosed]
    finally:
        ref.stop()


def test_only_one_of_two_concurrent_probe_claims_is_granted():
    snapshot = Published(CLOSED)
    ref = BreakerActor.start("up", THRESHOLD, COOLDOWN, snapshot, lambda _e: None)
    try:
        for _ in range(5):
            ref.ask(CallFailed(at=0.0), timeout=5)
        assert [ref.ask(ClaimProbe(at=31.0), timeout=5) for _ in range(2)] == [True, False]
        assert snapshot.current.status == "half_open"
        ref.ask(ProbeAbandoned(), timeout=5)
        assert ref.ask(ClaimProbe(at=31.0), timeout=5) is True
    finally:
        ref.stop()


def test_the_actor_refuses_an_unknown_message_to_an_asker_and_keeps_running():
    ref = BreakerActor.start("up", THRESHOLD, COOLDOWN, Published(CLOSED), lambda _e: None)
    answers: list[tuple[object, BaseException | None]] = []
    try:
        ref.ask(Ask("what?", lambda value, exc: answers.append((value, exc))), timeout=5)
        assert answers and isinstance(answers[0][1], TypeError)
        assert ref.ask(CallSucceeded(), timeout=5) == CLOSED
    finally:
        ref.stop()


@pytest.mark.parametrize("told", ["garbage", 42])
def test_a_told_unknown_message_is_logged_not_fatal(told, caplog):
    ref = BreakerActor.start("up", THRESHOLD, COOLDOWN, Published(CLOSED), lambda _e: None)
    try:
        ref.tell(told)
        assert ref.ask(CallSucceeded(), timeout=5) == CLOSED
        assert any("refused a told message" in r.message for r in caplog.records)
    finally:
        ref.stop()
