"""Harnesses and upstreams are supervised in one shape: a harness process and an upstream
connection that keep crashing, in one in-process daemon, each under a ``Supervisor`` that runs the
same restart rules, say the same moves (restarting 1 to 5 with the same backoff, then failed)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.config import load_config
from harness.events import Event, HarnessStateChanged, UpstreamStateChanged
from harness.gateway.daemon import Daemon
from harness.gateway.harnesses import spawner
from harness.gateway.supervision import Supervisor
from harness.rules.restarts import MAX_RESTARTS
from support import await_until

CRASH = '["sh", "-c", "exit 7"]'


def test_a_crash_looping_harness_and_upstream_back_off_and_fail_by_the_same_rules_on_one_supervisor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(spawner, "RESTART_DELAY_S", 0.01)
    config_path = tmp_path / "harness.toml"
    config_path.write_text(
        f'[harness.crashy]\nargv = {CRASH}\n\n[mcp.broken]\nargv = {CRASH}\nrestart_delay = "10ms"\n'
    )
    moves: dict[str, list[tuple[str, int, float | None]]] = {"harness": [], "upstream": []}

    def heard(event: Event) -> None:
        assert isinstance(event, HarnessStateChanged | UpstreamStateChanged)
        side = "harness" if isinstance(event, HarnessStateChanged) else "upstream"
        if event.state in ("restarting", "failed"):  # an upstream also says starting and up
            base = None if event.delay_s is None else round(event.delay_s / 0.01 / 2 ** (event.restarts - 1))
            moves[side].append((event.state, event.restarts, base))

    async def scenario() -> None:
        daemon = Daemon(load_config(config_path), tmp_path / "state", config_path)
        daemon.bus.subscribe((HarnessStateChanged, UpstreamStateChanged), heard)  # from the first exit
        ready = asyncio.Event()
        running = asyncio.create_task(daemon.run(ready=ready.set))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            procs, upstream = daemon.spawner, daemon.upstreams["broken"]
            assert procs is not None
            await await_until(lambda: procs.state_of("crashy") == "failed", timeout=20)
            await await_until(lambda: upstream.link.status == "failed", timeout=20)
            supervisors = (procs._supervisors["crashy"], upstream.supervisor)
            assert {type(s) for s in supervisors} == {Supervisor}
            assert {(s.status, s.state.attempt) for s in supervisors} == {("failed", MAX_RESTARTS)}
        finally:
            daemon.request_stop()
            await asyncio.wait_for(running, 30)

    asyncio.run(scenario())
    restarting = [("restarting", n, 1) for n in range(1, MAX_RESTARTS + 1)]  # 10 ms doubled, ±20 %
    assert moves["harness"] == moves["upstream"] == [*restarting, ("failed", MAX_RESTARTS, None)]
