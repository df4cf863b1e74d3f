"""Harness supervision in an in-process daemon with a short restart delay: a harness that keeps
failing is restarted with backoff until it flaps and is left ``failed``; a start clears that; a
stop while a restart waits out its backoff calls the restart off."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.config import load_config
from harness.events import Event, HarnessStateChanged
from harness.gateway.daemon import Daemon
from harness.gateway.harnesses import spawner
from harness.rules.access import Caller
from in_process import running_daemon
from support import await_until

OPERATOR = Caller(operator=True, harness=None, allow=frozenset({"read", "write"}), why="the test")


def test_a_harness_that_keeps_failing_flaps_to_failed_and_a_stop_calls_off_a_pending_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(spawner, "RESTART_DELAY_S", 0.01)
    config_path = tmp_path / "harness.toml"
    config_path.write_text('[harness.crashy]\nargv = ["sh", "-c", "exit 7"]\n')
    changes: list[tuple[str, int]] = []

    def seen(event: Event) -> None:
        assert isinstance(event, HarnessStateChanged)
        changes.append((event.state, event.restarts))

    async def scenario() -> None:
        daemon = Daemon(load_config(config_path), tmp_path / "state", config_path)
        daemon.bus.subscribe((HarnessStateChanged,), seen)
        ready = asyncio.Event()
        running = asyncio.create_task(daemon.run(ready=ready.set))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            procs = daemon.spawner
            assert procs is not None
            await await_until(lambda: procs.state_of("crashy") == "failed", timeout=20)
            assert changes == [("restarting", n) for n in range(1, 6)] + [("failed", 5)]
            with pytest.raises(ValueError, match="not running"):
                await daemon.control.answer("stop", {"name": "crashy"}, OPERATOR)
            monkeypatch.setattr(spawner, "RESTART_DELAY_S", 60.0)  # the next restart waits: stop it then
            await daemon.control.answer("start", {"name": "crashy"}, OPERATOR)  # forgets the history
            await await_until(lambda: procs.state_of("crashy") == "restarting", timeout=10)
            assert changes[-1] == ("restarting", 1)
            stopped = await daemon.control.answer("stop", {"name": "crashy"}, OPERATOR)
            assert stopped["was"] == "restarting" and procs.state_of("crashy") == "stopped"
            await asyncio.sleep(0.05)
            assert changes[-1] == ("restarting", 1)  # nothing further happened
        finally:
            daemon.request_stop()
            await asyncio.wait_for(running, 30)

    asyncio.run(scenario())


def test_a_restart_starting_its_process_when_the_daemon_stops_is_called_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(spawner, "RESTART_DELAY_S", 0.01)
    pids = tmp_path / "pids"
    config_path = tmp_path / "harness.toml"
    config_path.write_text(f'[harness.crashy]\nargv = ["sh", "-c", "echo $$ >> {pids}; exit 7"]\n')

    async def scenario() -> tuple[asyncio.Task[object], list[object]]:
        in_flight: list[asyncio.Task[object]] = []
        started: list[object] = []
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            procs = daemon.spawner
            assert procs is not None
            respawn, stop_all = procs._respawn, procs.stop_all
            stopping, entered = asyncio.Event(), asyncio.Event()

            async def stalled(
                cfg: object,
            ) -> None:  # past its backoff, starting the process as the stop begins
                in_flight.append(asyncio.current_task())
                entered.set()
                await stopping.wait()
                started.append(await respawn(cfg))

            async def shutdown_begins() -> None:
                stopping.set()
                await stop_all()

            procs._respawn = stalled
            procs.stop_all = shutdown_begins
            await asyncio.wait_for(entered.wait(), 10)
        await asyncio.gather(*in_flight, return_exceptions=True)
        return in_flight[0], started

    task, started = asyncio.run(scenario())
    assert task.cancelled() and started == []  # no harness started after the daemon stopped
    assert len(pids.read_text().split()) == 1  # the first run only


def test_a_start_that_fails_after_its_token_was_registered_leaves_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    env_file = tmp_path / "agent.env"
    env_file.write_text("A=1\n")
    config_path = tmp_path / "harness.toml"
    config_path.write_text(
        f'[harness.agent]\nargv = ["sleep", "60"]\nautostart = false\nenv_file = "{env_file}"\n'
    )

    def broken_wiring(spawn: object) -> object:
        raise RuntimeError("the adapter could not write its client config")

    async def scenario() -> None:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            monkeypatch.setattr(spawner, "wire", broken_wiring)
            with pytest.raises(RuntimeError, match="client config"):
                await daemon.control.answer("start", {"name": "agent"}, OPERATOR)
            await await_until(lambda: not daemon.routing.current.identities, timeout=10)
            monkeypatch.undo()
            env_file.unlink()  # unreadable at start: refused before any token exists
            with pytest.raises(Exception, match="cannot read"):
                await daemon.control.answer("start", {"name": "agent"}, OPERATOR)
            await daemon.control.answer("status", {}, OPERATOR)  # the daemon still answers
            assert not daemon.routing.current.identities

    asyncio.run(scenario())
