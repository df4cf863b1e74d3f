"""The daemon's stop leaves no process behind (in-process daemon, real children, a real SIGHUP): not
an upstream a reload was stopping, not what a harness that exited earlier left in its group."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

from in_process import running_daemon
from support import FAULTY_UPSTREAM, PY, await_until, toml_list


def _config(pid_file: Path, *extra: str) -> str:
    argv = [PY, str(FAULTY_UPSTREAM), "--ignore-sigterm", "--pid-file", str(pid_file), *extra]
    return f"[mcp.stubborn]\nargv = {toml_list(argv)}\n"


def test_an_upstream_a_reload_is_stopping_is_stopped_when_the_daemon_stops_meanwhile(tmp_path: Path):
    old_pids, config_path = tmp_path / "old.json", tmp_path / "harness.toml"
    config_path.write_text(_config(old_pids))
    old: list[int] = []

    async def scenario() -> None:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            await await_until(old_pids.exists, timeout=10)
            old.append(json.loads(old_pids.read_text())["pid"])
            config_path.write_text(_config(tmp_path / "new.json", "--numbered-tools", "1"))
            os.kill(os.getpid(), signal.SIGHUP)  # a reload: the changed upstream is stopped, then started
            await await_until(lambda: "stubborn" not in daemon.upstreams, timeout=10)
        # the block's end stops the daemon while the old upstream is still being stopped (5 s)

    try:
        asyncio.run(scenario())
        assert not psutil.pid_exists(old[0])
    finally:
        with contextlib.suppress(psutil.Error, IndexError):
            psutil.Process(old[0]).kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adopting orphans is Linux's")
def test_what_a_harness_that_exited_earlier_left_in_its_group_is_killed_at_stop(tmp_path: Path):
    pid_file, config_path = tmp_path / "left.pid", tmp_path / "harness.toml"
    script = f"sleep 600 & echo $! > {pid_file}; exit 0"  # the leader exits 0 (no restart); sleep stays
    config_path.write_text(f"[harness.leaver]\nargv = {toml_list(['sh', '-c', script])}\n")
    left: list[int] = []

    async def scenario() -> None:
        async with running_daemon(config_path, tmp_path / "state") as daemon:
            procs = daemon.spawner
            assert procs is not None
            await await_until(lambda: procs.state_of("leaver") == "exited", timeout=10)
            await await_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=10)
            left.append(int(pid_file.read_text()))
            assert psutil.pid_exists(left[0])

    try:
        asyncio.run(scenario())
        assert not psutil.pid_exists(left[0])  # killed with its group, and reaped
    finally:
        with contextlib.suppress(psutil.Error, IndexError):
            psutil.Process(left[0]).kill()
