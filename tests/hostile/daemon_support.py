"""A real daemon for the hostile tests, and raw sessions through a real `harness mcp` bridge that
present a spawned harness's own token (read from the environment that harness was given)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil

from devtools.children import end_child
from devtools.spawned import env_dumper, env_with, harness_vars, toml_list  # noqa: F401 - re-exported
from support import assert_stored_args_parse

PY = sys.executable
FIXTURES = Path(__file__).parents[1] / "fixtures"


def faulty(*flags: str) -> list[str]:
    return [PY, str(FIXTURES / "faulty_upstream.py"), *flags]


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    config: Path
    state: Path
    stderr: list[str] = field(default_factory=list)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [PY, "-m", "harness", *args, "--state-dir", str(self.state), "--config", str(self.config)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=check)

    def calls(self) -> list[dict[str, Any]]:
        out = self.cli("calls", "--json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(20)


def start_daemon(
    tmp_path: Path,
    config_text: str,
    *,
    state: Path | None = None,
    cwd: Path | None = None,
    ready_within: float = 60.0,
) -> Daemon:
    config = tmp_path / "harness.toml"
    config.write_text(config_text)
    state = state if state is not None else tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.Popen(
        [PY, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(state)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    daemon = Daemon(proc, config, (cwd / state) if cwd and not state.is_absolute() else state)
    assert proc.stderr is not None
    deadline = time.monotonic() + ready_within
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode(errors="replace")
        if not line:
            raise AssertionError(f"daemon exited before ready: {daemon.stderr}")
        daemon.stderr.append(line)
        if line.strip() == "ready":
            threading.Thread(target=_drain, args=(proc.stderr, daemon.stderr), daemon=True).start()
            return daemon
    raise AssertionError(f"daemon not ready within {ready_within} s: {daemon.stderr}")


@contextlib.contextmanager
def running(tmp_path: Path, config_text: str, **kwargs: Any) -> Iterator[Daemon]:
    daemon = start_daemon(tmp_path, config_text, **kwargs)
    try:
        yield daemon
    finally:
        leftovers: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            leftovers = psutil.Process(daemon.proc.pid).children(recursive=True)
        with contextlib.suppress(Exception):
            daemon.stop()
        for p in leftovers:
            with contextlib.suppress(psutil.Error):
                p.kill()
        if daemon.proc.stderr is not None:
            daemon.proc.stderr.close()
        assert_stored_args_parse(daemon.state / "harness.db")


class RawSession:
    """Raw bytes through a real `harness mcp` bridge; answers read as JSON lines."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "harness", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, data: bytes | dict[str, Any]) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def receive(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self._lines.get(timeout=timeout)
        assert line, "the bridge closed"
        return json.loads(line)

    def request(
        self, request_id: int, method: str, params: dict[str, Any] | None = None, timeout: float = 10.0
    ) -> dict[str, Any]:
        self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})}
        )
        return self.receive(timeout)

    def initialize(self, version: str = "2025-11-25") -> None:
        answer = self.request(
            0,
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        assert answer["result"]["protocolVersion"] == version

    def close(self) -> None:
        end_child(self.proc)


def harness_env(dump: Path) -> dict[str, str]:
    """The environment a spawned harness got (so a bridge started with it presents its token)."""
    wait_for(lambda: dump.exists() and dump.read_text(), timeout=30)
    return env_with(harness_vars(dump))


def _drain(stream: IO[bytes], into: list[str]) -> None:
    with contextlib.suppress(ValueError, OSError):
        for line in stream:
            into.append(line.decode(errors="replace"))
