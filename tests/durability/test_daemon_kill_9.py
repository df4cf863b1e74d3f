"""kill -9 of the real daemon under load, 20 times on one state dir: restart, integrity, nothing lost.

Each round starts `harness daemon` on the same state dir (a stale socket and lock are left by the
previous kill), lets an agent call a fast upstream through `harness mcp`, watches committed positions
with a read-only connection, then SIGKILLs the daemon mid-load. The store must be intact, every
position a reader saw committed must still be there, and positions stay contiguous.
"""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

import apsw
import psutil
import pytest

from support import FAULTY_UPSTREAM, PY, probe_argv, start_daemon_process, toml_list, wait_until

ROUNDS = 20

pytestmark = [pytest.mark.durability, pytest.mark.slow]


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
        f'[mcp.up]\nargv = {toml_list([PY, str(FAULTY_UPSTREAM)])}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f"[harness.agent]\nargv = {toml_list(probe_argv(tmp_path / 'out.json', '--steps', json.dumps(plan)))}\n"
        'mcp_policy = "p"\n'
    )
    state = tmp_path / "state"
    db = state / "harness.db"
    seen_before = 0
    for _round in range(ROUNDS):
        daemon = start_daemon_process(config, state)
        proc = daemon.proc
        try:
            baseline = committed(db)
            wait_until(
                lambda floor=baseline + 100: committed(db) >= floor,
                timeout=30,
                message="load reached the store",
            )
            children = psutil.Process(proc.pid).children(recursive=True)
            seen = committed(db)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            with contextlib.suppress(Exception):
                proc.kill()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(children, timeout=10)
        daemon.close_pipes()
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
