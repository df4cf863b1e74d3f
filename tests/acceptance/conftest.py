"""Fixtures for end-to-end runs: a real `harness daemon` process on a config written per test."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import psutil
import pytest

from support import DaemonProcess, process_env, running, wait_until


@dataclass
class RunningDaemon(DaemonProcess):
    def harnesses(self) -> dict[str, dict]:
        """``harness list --json``, by name."""
        return {row["name"]: row for row in json.loads(self.harness_cli("list", "--json").stdout)}

    def running(self) -> dict[str, dict] | None:
        """Every harness by name once each has a pid, else None (for ``wait_until``)."""
        rows = self.harnesses()
        return rows if all(row["pid"] for row in rows.values()) else None

    def harness_envs(self) -> dict[str, dict[str, str]]:
        """Each harness's environment, read from its process once every harness runs."""
        return {name: process_env(row["pid"]) for name, row in wait_until(self.running).items()}

    def events(self, name: str) -> list[dict]:
        """The fields of every stored event of type ``name``, in log order (read-only)."""
        conn = apsw.Connection(str(self.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return [json.loads(d) for (d,) in conn.execute("SELECT data FROM events WHERE name = ?", (name,))]
        finally:
            conn.close()

    def descendants_running(self, marker: str) -> list[psutil.Process]:
        """The processes under the daemon whose command line holds ``marker`` (the process table,
        not the configuration)."""
        found = []
        for p in self.descendants():
            with contextlib.suppress(psutil.Error):
                if marker in " ".join(p.cmdline()):
                    found.append(p)
        return found


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[Callable[[str], RunningDaemon]]:
    """Start a daemon on a config text (``support.running``); each is stopped when the test ends."""
    with contextlib.ExitStack() as started:

        def start(config_text: str, env: dict[str, str] | None = None) -> RunningDaemon:
            return started.enter_context(running(tmp_path, config_text, kind=RunningDaemon, env=env))

        yield start
