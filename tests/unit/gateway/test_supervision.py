"""The one supervision shape (``gateway/supervision.py``) with an injected clock: the moves of
``vocabulary.SUPERVISED_MOVES``, the restart rules of ``rules.restarts`` and the restart timer."""

from __future__ import annotations

import asyncio

from harness.gateway.supervision import Change, Supervisor
from harness.rules.restarts import MAX_RESTARTS
from harness.vocabulary import SUPERVISED_MOVES
from support import await_until


def no_jitter() -> float:
    return 0.5  # 1 + 0.2 * (2 * 0.5 - 1) == 1


class Child:
    """What a supervisor is told to do: the changes it published and the restarts it asked for."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.restarts = 0
        self.now = 0.0

    async def restart(self) -> None:
        self.restarts += 1

    def supervisor(self, delay: float = 1.0) -> Supervisor:
        return Supervisor(
            restart=self.restart,
            changed=self.changes.append,
            delay=lambda: delay,
            clock=lambda: self.now,
            rng=no_jitter,
        )

    def seen(self) -> list[tuple[str, int, float | None, str]]:
        return [(c.state.status, c.state.attempt, c.delay, c.reason) for c in self.changes]


def test_the_supervisor_publishes_every_move_backs_off_gives_up_and_a_reset_forgets_the_history():
    child = Child()

    async def scenario() -> None:
        supervisor = child.supervisor()
        supervisor.up()
        for _ in range(MAX_RESTARTS + 1):
            child.now += 0.1
            supervisor.exited()
            supervisor.call_off()  # the test's clock, not the timer, moves it on
        assert supervisor.status == "failed" and not supervisor.restart_pending
        supervisor.reset("restart requested")
        supervisor.up()

    asyncio.run(scenario())
    assert child.seen() == [
        ("up", 0, None, "initialized"),
        *(("restarting", n, 2.0 ** (n - 1), "exited") for n in range(1, MAX_RESTARTS + 1)),
        ("failed", MAX_RESTARTS, None, "flapping"),
        ("starting", 0, None, "restart requested"),
        ("up", 0, None, "initialized"),
    ]


def test_a_late_fact_about_a_failed_or_stopped_child_is_ignored_until_it_starts_afresh():
    child = Child()

    async def scenario() -> None:
        supervisor = child.supervisor()
        for _ in range(MAX_RESTARTS + 1):
            supervisor.exited()
            supervisor.call_off()
        assert supervisor.status == "failed"
        supervisor.up()  # a handshake answered after it gave up
        supervisor.exited()  # an exit reported after it
        assert supervisor.status == "failed" and not supervisor.restart_pending
        supervisor.stopped("daemon stopping")
        supervisor.up()
        supervisor.exited()
        supervisor.stopped("daemon stopping")
        assert supervisor.status == "stopped" and not supervisor.restart_pending
        supervisor.reset("start")
        assert supervisor.status == "starting"

    asyncio.run(scenario())
    statuses = [c.state.status for c in child.changes]
    assert statuses == ["restarting"] * MAX_RESTARTS + ["failed", "stopped", "starting"]
    assert all(b in SUPERVISED_MOVES[a] for a, b in zip(["starting", *statuses], statuses, strict=False))


def test_a_restart_runs_once_its_backoff_is_over_and_a_call_off_cancels_it():
    child = Child()

    async def scenario() -> None:
        supervisor = child.supervisor(delay=0.01)
        supervisor.up()
        supervisor.exited()
        assert supervisor.restart_pending
        await await_until(lambda: child.restarts == 1, timeout=5)
        await await_until(lambda: not supervisor.restart_pending, timeout=5)
        supervisor.up()
        supervisor.exited()
        cancelled = supervisor.call_off()
        assert cancelled is not None and not supervisor.restart_pending
        await asyncio.gather(cancelled, return_exceptions=True)
        assert cancelled.cancelled() and child.restarts == 1

    asyncio.run(scenario())
