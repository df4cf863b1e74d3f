"""Fixtures for end-to-end runs: a real `harness daemon` process on a config written per test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil
import pytest

HERE = Path(__file__).parent
PY = sys.executable
UPSTREAM = [PY, "-m", "harness.demo.upstream", "--test-tools"]


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def probe_argv(out: Path, *extra: str) -> list[str]:
    return [PY, str(HERE / "probe_agent.py"), "--out", str(out), *extra]


@dataclass
class RunningDaemon:
    proc: subprocess.Popen[bytes]
    config: Path
    state: Path
    stderr_lines: list[str] = field(default_factory=list)

    @property
    def db(self) -> Path:
        return self.state / "harness.db"

    def harness_cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [PY, "-m", "harness", *args, "--state-dir", str(self.state), "--config", str(self.config)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=check)

    def calls(self) -> list[dict]:
        out = self.harness_cli("calls", "--json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def descendants(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            return psutil.Process(self.proc.pid).children(recursive=True)
        return []

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.05) -> object:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[Callable[[str], RunningDaemon]]:
    started: list[RunningDaemon] = []

    def start(config_text: str) -> RunningDaemon:
        config = tmp_path / "harness.toml"
        config.write_text(config_text)
        state = tmp_path / "state"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        proc = subprocess.Popen(
            [PY, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(state)],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        daemon = RunningDaemon(proc, config, state)
        started.append(daemon)
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline().decode(errors="replace")
            if not line:
                raise AssertionError(f"daemon exited before ready: {daemon.stderr_lines}")
            daemon.stderr_lines.append(line)
            if line.strip() == "ready":
                threading.Thread(target=_drain, args=(proc.stderr, daemon.stderr_lines), daemon=True).start()
                return daemon
        raise AssertionError("daemon not ready within 60 s")

    yield start
    for daemon in started:
        leftovers = daemon.descendants()
        with contextlib.suppress(Exception):
            daemon.stop()
        for p in leftovers:
            with contextlib.suppress(psutil.Error):
                p.kill()
        if daemon.proc.stderr is not None:
            daemon.proc.stderr.close()


def _drain(stream: IO[bytes], into: list[str]) -> None:
    """Keep reading the daemon's stderr so it never blocks on a full pipe."""
    with contextlib.suppress(ValueError, OSError):
        for line in stream:
            into.append(line.decode(errors="replace"))
