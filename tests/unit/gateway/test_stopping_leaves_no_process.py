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

from harness.config import load_config
from harness.gateway.daemon import Daemon
from support import FAULTY_UPSTREAM, PY, await_until, toml_list


def _config(pid_file: Path, *extra: str) -> str:
    argv = [PY, str(FAULTY_UPSTREAM), "--ignore-sigterm", "--pid-file", str(pid_file), *extra]
    return f"[mcp.stubborn]\nargv = {toml_list(argv)}\n"


@pytest.mark.slow
def test_an_upstream_a_reload_is_stopping_is_stopped_when_the_daemon_stops_meanwhile(tmp_path: Path):
    old_pids, config_path = tmp_path / "old.json", tmp_path / "harness.toml"
    config_path.write_text(_config(old_pids))
    old: list[int] = []

    async def scenario() -> None:
        daemon = Daemon(load_config(config_path), tmp_path / "state", config_path)
        ready = asyncio.Event()
        running = asyncio.create_task(daemon.run(ready=ready.set))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            await await_until(old_pids.exists, timeout=10)
            old.append(json.loads(old_pids.read_text())["pid"])
            config_path.write_text(_config(tmp_path / "new.json", "--numbered-tools", "1"))
            os.kill(os.getpid(), signal.SIGHUP)  # a reload: the changed upstream is stopped, then started
            await await_until(lambda: "stubborn" not in daemon.upstreams, timeout=10)
        finally:
            daemon.request_stop()  # while the old one is still being stopped (it takes 5 s)
            await asyncio.wait_for(running, 30)

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
        daemon = Daemon(load_config(config_path), tmp_path / "state", config_path)
        ready = asyncio.Event()
        running = asyncio.create_task(daemon.run(ready=ready.set))
        try:
            await asyncio.wait_for(ready.wait(), 30)
            procs = daemon.spawner
            assert procs is not None
            await await_until(lambda: procs.state_of("leaver") == "exited", timeout=10)
            await await_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=10)
            left.append(int(pid_file.read_text()))
            assert psutil.pid_exists(left[0])
        finally:
            daemon.request_stop()
            await asyncio.wait_for(running, 30)

    try:
        asyncio.run(scenario())
        assert not psutil.pid_exists(left[0])  # killed with its group, and reaped
    finally:
        with contextlib.suppress(psutil.Error, IndexError):
            psutil.Process(left[0]).kill()
