"""The circuit breaker as a pure state machine, and its actor's acknowledgements."""

from __future__ import annotations

from harness.actors.breaker import (
    BreakerActor,
    BreakerState,
    CallFailed,
    CallSucceeded,
    ProbeAbandoned,
    ProbeStarted,
    admit,
    evolve,
)

THRESHOLD, COOLDOWN = 5, 30.0


def run(state: BreakerState, *facts) -> BreakerState:
    for fact in facts:
        state = evolve(state, fact, THRESHOLD)
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


def test_after_the_cooldown_one_probe_closes_it_on_success():
    opened = run(BreakerState(), *[CallFailed(at=10.0)] * 5)
    assert admit(opened, 39.9, COOLDOWN) == "refuse"
    assert admit(opened, 40.0, COOLDOWN) == "probe"
    probing = run(opened, ProbeStarted())
    assert probing.status == "half_open" and admit(probing, 41.0, COOLDOWN) == "refuse"
    assert run(probing, CallSucceeded()) == BreakerState()


def test_a_failed_probe_opens_it_for_another_cooldown():
    probing = run(BreakerState(), *[CallFailed(at=10.0)] * 5, ProbeStarted())
    reopened = run(probing, CallFailed(at=50.0))
    assert reopened.status == "open" and reopened.opened_at == 50.0
    assert admit(reopened, 79.0, COOLDOWN) == "refuse" and admit(reopened, 80.0, COOLDOWN) == "probe"


def test_an_abandoned_probe_lets_the_next_call_probe():
    probing = run(BreakerState(), *[CallFailed(at=10.0)] * 5, ProbeStarted())
    assert admit(run(probing, ProbeAbandoned()), 45.0, COOLDOWN) == "probe"


def test_the_actor_publishes_the_new_state_before_it_answers():
    published: list[BreakerState] = []
    moves: list[tuple[str, str]] = []
    ref = BreakerActor.start(
        "up", THRESHOLD, published.append, lambda _u, old, new: moves.append((old.status, new.status))
    )
    try:
        for i in range(5):
            answer = ref.ask(CallFailed(at=float(i)), timeout=5)
            assert published[-1] == answer
        assert answer.status == "open"
        assert moves == [("closed", "open")]
        assert ref.proxy().statistics().get(timeout=5).failures == 5
    finally:
        ref.stop()
