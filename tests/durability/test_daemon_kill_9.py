"""kill -9 of the real daemon under load, 20 times on one state dir: restart, integrity, nothing lost.

Each round starts `harness daemon` on the same state dir (a stale socket and lock are left by the
previous kill), lets an agent call a fast upstream through `harness mcp`, watches committed positions
with a read-only connection, then SIGKILLs the daemon mid-load. The store must be intact, every
position a reader saw committed must still be there, and positions stay contiguous.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
FAULTY = str(ROOT / "fixtures" / "faulty_upstream.py")
PROBE = str(ROOT / "acceptance" / "probe_agent.py")
ROUNDS = 20

pytestmark = pytest.mark.durability


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def start(config: Path, state: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(state)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError("daemon exited before ready")
        if line.strip() == b"ready":
            return proc
    raise AssertionError("daemon not ready within 60 s")


def committed(db: Path) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT coalesce(max(position), 0) FROM events").get)
    finally:
        conn.close()


def test_kill_9_of_the_daemon_under_load_loses_nothing_committed_and_it_restarts_on_the_same_store(tmp_path):
    plan = [
        {
            "op": "repeat",
            "times": 100_000,
            "step": {"op": "call", "name": "up__echo", "arguments": {"text": "x"}},
        }
    ]
    config = tmp_path / "harness.toml"
    config.write_text(
        f'[mcp.up]\nargv = {toml_list([sys.executable, FAULTY])}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f"[harness.agent]\nargv = {toml_list([sys.executable, PROBE, '--out', str(tmp_path / 'out.json'), '--steps', json.dumps(plan)])}\n"
        'mcp_policy = "p"\n'
    )
    state = tmp_path / "state"
    db = state / "harness.db"
    seen_before = 0
    for _round in range(ROUNDS):
        proc = start(config, state)
        try:
            baseline = committed(db)
            deadline = time.monotonic() + 30
            while committed(db) < baseline + 100:  # calls are landing
                assert time.monotonic() < deadline, "no load reached the store"
                time.sleep(0.02)
            children = psutil.Process(proc.pid).children(recursive=True)
            seen = committed(db)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            with contextlib.suppress(Exception):
                proc.kill()
            if proc.stderr is not None:
                proc.stderr.close()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(children, timeout=10)
        conn = apsw.Connection(str(db))
        try:
            assert conn.execute("PRAGMA integrity_check").get == "ok"
            last, count = conn.execute("SELECT max(position), count(*) FROM events").fetchone()
            assert last >= seen >= seen_before
            assert count == last  # contiguous: no position lost or reused
            rows = conn.execute("SELECT count(*) FROM call_log").get
            calls = conn.execute("SELECT count(*) FROM events WHERE name = 'tool_call.completed'").get
            assert rows == calls  # projection committed with its events
        finally:
            conn.close()
        seen_before = seen
    assert (state / "harness.sock").exists()  # left by the last kill; the next start cleans it up
