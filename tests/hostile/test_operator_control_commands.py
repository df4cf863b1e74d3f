"""Trial findings on the operator's control commands (``../shared/reports/2026-12-01-new-user-trial.md``):
M9 (the contract's commands exist), m1 (a requested restart is graceful and no crash), m7 (reload
names the harnesses it started) and m15 (a CLI view of upstream state and breaker). One real daemon,
with one faulty-upstream and two harnesses, serves the module; each test reads what it needs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from daemon_support import DaemonProcess, env_dumper, faulty, running, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # ~8 s of CLI round trips


def _config(folder: Path, extra: str = "") -> str:
    return (
        f"[mcp.up]\nargv = {toml_list(faulty('--record', str(folder / 'up.jsonl')))}\n\n"
        '[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.live]\nargv = {toml_list(env_dumper(folder / "live.env"))}\nmcp_policy = "p"\n\n'
        f"[harness.idle]\nargv = {toml_list(env_dumper(folder / 'idle.env'))}\nautostart = false\n" + extra
    )


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    folder = tmp_path_factory.mktemp("control")
    with running(folder, _config(folder)) as d:
        wait_until(lambda: (folder / "live.env").exists() and (folder / "live.env").read_text(), 30)
        yield d


def _query(daemon: DaemonProcess, sql: str) -> list[tuple]:
    conn = apsw.Connection(str(daemon.state / "harness.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_describe_logs_start_stop_and_doctor_are_commands_that_work(daemon):
    described = json.loads(daemon.harness_cli("describe", "live", "--json").stdout)
    assert (described["kind"], described["state"], described["policy"]) == ("harness", "running", "p")
    upstream = json.loads(daemon.harness_cli("describe", "up", "--json").stdout)
    assert (upstream["kind"], upstream["transport"], upstream["state"]) == ("upstream", "stdio", "up")
    assert "state" in daemon.harness_cli("describe", "idle").stdout
    assert daemon.harness_cli("logs", "live", "--json").returncode == 0
    assert daemon.harness_cli("logs", "up", "--json").returncode == 0
    nobody = daemon.harness_cli("describe", "nobody", check=False)
    assert nobody.returncode == 1 and "no harness or upstream named 'nobody'" in nobody.stderr
    daemon.harness_cli("start", "idle")
    assert json.loads(daemon.harness_cli("describe", "idle", "--json").stdout)["state"] == "running"
    daemon.harness_cli("stop", "idle")
    assert json.loads(daemon.harness_cli("describe", "idle", "--json").stdout)["state"] == "stopped"
    assert daemon.harness_cli("doctor").returncode == 0


def test_status_shows_each_upstreams_state_breaker_and_calls_in_flight(daemon):
    status = json.loads(daemon.harness_cli("status", "--json").stdout)
    up = status["upstreams"]["up"]
    assert up["state"] == "up" and up["breaker"] == "closed" and up["in_flight"] == 0 and up["tools"] >= 6
    table = daemon.harness_cli("status").stdout.splitlines()
    header = next(line for line in table if line.startswith("UPSTREAM"))
    assert all(word in header for word in ("STATE", "PID", "IN-FLIGHT", "BREAKER"))
    row = next(line for line in table if line.startswith("up ")).split()
    assert row[1] == "up" and row[header.split().index("BREAKER")] == "closed"


def test_a_requested_restart_closes_stdin_first_and_is_not_counted_as_a_crash(daemon):
    log = daemon.config.parent / "up.jsonl"
    before = json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]["up"]["pid"]
    for _ in range(3):
        daemon.harness_cli("restart", "up")
    after = json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]["up"]
    assert after["state"] == "up" and after["pid"] != before
    eofs = [line for line in log.read_text().splitlines() if json.loads(line).get("stdin") == "eof"]
    assert len(eofs) == 3  # each old process saw its stdin close: never a SIGKILL first
    exits = _query(
        daemon, "SELECT json_extract(data, '$.returncode') FROM events WHERE name = 'upstream.exited'"
    )
    assert [code for (code,) in exits] == [0, 0, 0]
    ((restarts,),) = _query(daemon, "SELECT restarts FROM upstreams WHERE upstream = 'up'")
    assert restarts == 0  # restarts counts exits the daemon did not ask for


def test_reload_names_the_harnesses_it_started(daemon):
    late = daemon.config.parent / "late.env"
    daemon.config.write_text(
        _config(daemon.config.parent, f"\n[harness.late]\nargv = {toml_list(env_dumper(late))}\n")
    )
    out = daemon.harness_cli("reload").stdout
    assert "harnesses started: late" in out, out
    wait_until(lambda: late.exists() and late.read_text(), 30)
