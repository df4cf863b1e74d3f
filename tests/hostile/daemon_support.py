"""Raw sessions through a real `harness mcp` bridge that present a spawned harness's own token (read
from the environment that harness was given); the daemon itself is tests/support.py's
(:func:`support.running`)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from devtools.children import end_child
from devtools.spawned import env_dumper, env_with, harness_vars, toml_list  # noqa: F401 - re-exported
from support import DaemonProcess, assert_stored_args_parse, running, wait_until  # noqa: F401 - re-exported

PY = sys.executable
FIXTURES = Path(__file__).parents[1] / "fixtures"


def faulty(*flags: str) -> list[str]:
    return [PY, str(FIXTURES / "faulty_upstream.py"), *flags]


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
    wait_until(lambda: dump.exists() and dump.read_text(), timeout=30)
    return env_with(harness_vars(dump))
