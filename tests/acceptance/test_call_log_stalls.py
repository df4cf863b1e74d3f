"""The call log never loses a call without saying so, with a real daemon, a real agent and a real store.

Another connection holds the store's write lock (``BEGIN IMMEDIATE``, as DB Browser or a stray
``to_sql`` does) for 30 s, or the store's file system fills up, while an agent makes 2,000 calls.
Every call ends as a ``call_log`` row or is counted in a ``log.gap`` event; the metric of drops
equals the gaps' sum; ``harness status`` and ``harness doctor`` show the stall while it lasts.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from support import (
    FAULTY_UPSTREAM,
    PY,
    clean_env,
    fill,
    free_port,
    probe_argv,
    read_out,
    small_tmpfs,
    toml_list,
    wait_until,
)

pytestmark = pytest.mark.slow

CALLS = 2_000
LOCK_S = 30.0


def config(tmp_path: Path, port: int) -> str:
    plan = [
        {
            "op": "repeat",
            "times": CALLS,
            "step": {"op": "call", "name": "up__echo", "arguments": {"text": "x"}},
        }
    ]
    agent = probe_argv(tmp_path / "out.json", "--steps", json.dumps(plan))
    return (
        f'[mcp]\nmetrics_listen = "127.0.0.1:{port}"\n\n'
        f'[mcp.up]\nargv = {toml_list([PY, str(FAULTY_UPSTREAM)])}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.agent]\nargv = {toml_list(agent)}\nmcp_policy = "p"\nautostart = false\n'
    )


def count(db: Path, sql: str) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute(sql).get or 0)
    finally:
        conn.close()


def call_rows(db: Path) -> int:
    return count(db, "SELECT count(*) FROM call_log WHERE upstream = 'up'")


def gap_sums(daemon: Any) -> tuple[int, int]:
    """(every event the log.gap events count, the tool calls among them)."""
    total = calls = 0
    for gap in daemon.events("log.gap"):
        total += gap["events"]
        calls += dict(zip(gap["names"], gap["counts"], strict=True)).get("tool_call.completed", 0)
    return total, calls


def dropped_metric(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    (line,) = [row for row in text.splitlines() if row.startswith("harness_mcp_call_log_dropped_total")]
    return float(line.split()[-1])


def status_page(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
        return str(answer.read().decode())


def call_log_status(daemon: Any) -> dict:
    return json.loads(daemon.harness_cli("status", "--json").stdout)["call_log"]


def stalled(daemon: Any, cause: str) -> dict | None:
    state = call_log_status(daemon)
    return state if state["state"] == "stalled" and state["reason"].startswith(cause) else None


def doctor_line(daemon: Any) -> str:
    report = json.loads(daemon.harness_cli("doctor", "--json", check=False).stdout)
    (line,) = [f["text"] for f in report["findings"] if f["text"].startswith("call log:")]
    return line


@contextlib.contextmanager
def write_lock(db: Path) -> Iterator[None]:
    other = apsw.Connection(str(db))
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("COMMIT")
        other.close()


def agent_runs_while_stalled(daemon: Any, tmp_path: Path, cause: str, port: int) -> None:
    """Start the agent, see the stall in status, doctor and the status page, and let the agent make
    every call."""
    daemon.harness_cli("start", "agent")
    wait_until(lambda: stalled(daemon, cause), timeout=30, message=f"status shows the log stalled ({cause})")
    assert doctor_line(daemon).startswith("call log: stalled since")
    assert "\ncall log: stalled since" in daemon.harness_cli("status").stdout
    assert 'id="call-log">call log: stalled since' in status_page(port)
    out = read_out(tmp_path / "out.json", timeout=120)
    assert out["steps"][0] == {"repeated": CALLS, "errors": 0}, out  # calls flowed meanwhile


def finished_cleanly(daemon: Any) -> str:
    assert daemon.stop() == 0
    daemon.close_pipes()
    stderr = "".join(daemon.stderr_lines)
    assert "Traceback" not in stderr and "refused a told message" not in stderr, stderr
    return stderr


@pytest.mark.parametrize("intake", [None, 300], ids=["intake-holds-all", "intake-overflows"])
def test_an_outside_write_lock_for_30_s_loses_no_call_without_a_log_gap(start_daemon, tmp_path, intake):
    port = free_port()
    env = {} if intake is None else {"HARNESS_LOG_INTAKE": str(intake)}
    daemon = start_daemon(config(tmp_path, port), env=env)
    took = time.monotonic()
    with write_lock(daemon.db):
        agent_runs_while_stalled(daemon, tmp_path, "locked by another writer", port)
        assert call_log_status(daemon)["state"] == "stalled"
        time.sleep(
            max(0.0, took + LOCK_S - time.monotonic())
        )  # the lock is held for LOCK_S, as the scenario says
    wait_until(
        lambda: call_log_status(daemon)["state"] == "writing", timeout=30, message="the log writes again"
    )
    assert call_log_status(daemon)["recovered"]
    wait_until(
        lambda: call_rows(daemon.db) + gap_sums(daemon)[1] == CALLS,
        timeout=30,
        message="every call accounted",
    )
    gaps, gap_calls = gap_sums(daemon)
    if intake is None:
        assert call_rows(daemon.db) == CALLS and gaps == 0
    else:
        assert gap_calls > 0, "the intake did not overflow"
    assert dropped_metric(port) == gaps
    stderr = finished_cleanly(daemon)
    assert stderr.count("call log: not written since") == 1 and "call log: writing again" in stderr


def test_a_full_file_system_under_the_store_loses_no_call_without_a_log_gap(start_daemon, tmp_path):
    port = free_port()
    with small_tmpfs(tmp_path / "state", "16m"):
        daemon = start_daemon(config(tmp_path, port), env={"HARNESS_LOG_INTAKE": "300"})
        filler = fill(daemon.state)
        try:
            agent_runs_while_stalled(daemon, tmp_path, "disk full", port)
        finally:
            filler.unlink()
        wait_until(
            lambda: call_log_status(daemon)["state"] == "writing", timeout=30, message="the log writes again"
        )
        wait_until(
            lambda: call_rows(daemon.db) + gap_sums(daemon)[1] == CALLS,
            timeout=30,
            message="every call accounted",
        )
        gaps, gap_calls = gap_sums(daemon)
        assert gap_calls > 0 and dropped_metric(port) == gaps
        assert daemon.events("log.gap")[0]["store_error"].startswith("disk full")
        finished_cleanly(daemon)


def test_a_store_that_cannot_be_opened_for_writing_stops_the_daemon_with_one_line_before_it_spawns_anything(
    tmp_path,
):
    marker = tmp_path / "spawned"
    touch = [PY, "-c", f"open({str(marker)!r}, 'w'); import time; time.sleep(60)"]
    config_file = tmp_path / "harness.toml"
    config_file.write_text(
        f"[mcp.up]\nargv = {toml_list(touch)}\n\n[harness.agent]\nargv = {toml_list(touch)}\n"
    )
    state = tmp_path / "state"
    (state / "harness.db").mkdir(parents=True)  # a folder where the store should be
    done = subprocess.run(
        [PY, "-m", "harness", "daemon", "--config", str(config_file), "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("harness daemon: ")
    assert "cannot open the store for writing" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not marker.exists(), "something was spawned before the store was opened"
