"""M2: a read-only harness restarted a sibling harness and a shared upstream through the control
socket it is handed (`harness restart live --state-dir "$(dirname "$HARNESS_SOCKET")"`). A harness
may now use only what its ``mcp_allow`` permits, whatever token it presents and even from an
orphan that left its session; the operator's CLI still can (docs/control-socket.md)."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest
from daemon_support import (
    PY,
    DaemonProcess,
    RawSession,
    env_dumper,
    faulty,
    harness_env,
    running,
    toml_list,
    wait_until,
)

AGENT = Path(__file__).with_name("control_agent.py")


def _agent(out: Path, state: Path, steps: list[tuple[str, list[str]]]) -> list[str]:
    return [PY, str(AGENT), "--out", str(out), "--state", str(state), "--steps", json.dumps(steps)]


def _harness(*args: str, state: Path) -> list[str]:
    return ["harness", *args, "--state-dir", str(state)]


def _config(tmp_path: Path, name: str, allow: list[str], steps: list[tuple[str, list[str]]]) -> str:
    state = tmp_path / "state"
    return (
        f'[mcp.up]\nargv = {toml_list(faulty())}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.live]\nargv = {toml_list(env_dumper(tmp_path / "live.env"))}\nmcp_policy = "p"\n'
        'mcp_allow = ["read", "write"]\n\n'
        f"[harness.idle]\nargv = {toml_list(env_dumper(tmp_path / 'idle.env'))}\nautostart = false\n\n"
        f"[harness.{name}]\nargv = {toml_list(_agent(tmp_path / 'agent.json', state, steps))}\n"
        f'mcp_policy = "p"\nmcp_allow = {toml_list(allow)}\n'
    )


def _rows(daemon: DaemonProcess) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(daemon.harness_cli("list", "--json").stdout)}


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _upstream_starts(daemon: DaemonProcess) -> int:
    conn = apsw.Connection(str(daemon.state / "harness.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT count(*) FROM events WHERE name = 'upstream.started'").fetchall()[0][0]
    finally:
        conn.close()


def _upstream_pid(daemon: DaemonProcess) -> int:
    return json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]["up"]["pid"]


@pytest.mark.slow  # about 8 s of CLI round trips
def test_a_read_only_harness_cannot_restart_stop_or_start_anything_and_the_operator_still_can(tmp_path):
    state = tmp_path / "state"
    writes = {
        "restart-live": _harness("restart", "live", state=state),
        "stop-live": _harness("stop", "live", state=state),
        "start-idle": _harness("start", "idle", state=state),
        "restart-upstream": _harness("restart", "up", state=state),
        "reload": _harness("reload", state=state),
        "stolen:live": _harness("restart", "live", state=state),
        "no-token": _harness("restart", "live", state=state),
        "orphan": _harness("restart", "live", state=state),
    }
    steps = [("list", _harness("list", "--json", state=state)), *writes.items()]
    with running(tmp_path, _config(tmp_path, "attacker", ["read"], steps)) as daemon:
        live_run = json.loads(wait_until(lambda: _read(tmp_path / "live.env"), 30))["HARNESS_RUN_ID"]
        results = json.loads(wait_until(lambda: _read(tmp_path / "agent.json"), 90))

        listed = [row["name"] for row in json.loads(results["list"]["stdout"])]
        assert results["list"]["rc"] == 0 and listed == ["attacker"]  # a read-only harness sees itself
        for step in writes:
            assert results[step]["rc"] == 1, (step, results[step])
            assert "not_permitted" in results[step]["stderr"], (step, results[step])
        assert results["orphan"]["parent"] == daemon.proc.pid  # adopted by the daemon, not by init
        rows = _rows(daemon)
        assert rows["live"]["state"] == "running" and rows["live"]["run_id"] == live_run
        assert rows["idle"]["state"] == "stopped" and rows["idle"]["pid"] is None
        assert _upstream_starts(daemon) == 1
        up_pid = _upstream_pid(daemon)

        assert "restarted harness live" in daemon.harness_cli("restart", "live").stdout
        assert _rows(daemon)["live"]["run_id"] != live_run
        daemon.harness_cli("stop", "live")
        assert _rows(daemon)["live"]["state"] == "stopped"
        daemon.harness_cli("start", "live")
        daemon.harness_cli("start", "idle")
        assert {r["state"] for r in _rows(daemon).values()} == {"running"}
        daemon.harness_cli("restart", "up")
        assert _upstream_pid(daemon) != up_pid
        assert "reloaded" in daemon.harness_cli("reload").stdout
    assert any("refused control request 'restart'" in line for line in daemon.stderr_lines)


def test_a_harness_allowed_write_may_restart_a_sibling_but_not_reload_the_configuration(tmp_path):
    state = tmp_path / "state"
    steps = [
        ("restart-live", _harness("restart", "live", state=state)),
        ("start-idle", _harness("start", "idle", state=state)),
        ("reload", _harness("reload", state=state)),
    ]
    with running(tmp_path, _config(tmp_path, "admin", ["read", "write"], steps)) as daemon:
        results = json.loads(wait_until(lambda: _read(tmp_path / "agent.json"), 90))
        assert results["restart-live"]["rc"] == 0, results["restart-live"]
        assert results["start-idle"]["rc"] == 0, results["start-idle"]
        assert results["reload"]["rc"] == 1 and "reserved to the operator" in results["reload"]["stderr"]
        assert _rows(daemon)["idle"]["state"] == "running"


FACADE_WRITES = ("harness_restart", "harness_stop", "harness_start")


@pytest.mark.parametrize("exposure", ["full", pytest.param("lazy", marks=pytest.mark.slow)])
def test_a_read_only_harness_cannot_restart_stop_or_start_through_its_mcp_session(tmp_path, exposure):
    """The other path a harness can reach: its own MCP session. The facade's write tools are
    neither listed nor callable (directly or through ``call_tool``), and nothing is restarted."""
    config = (
        f'[mcp.up]\nargv = {toml_list(faulty())}\n\n[mcp_policy.p]\nservers = ["up"]\nexposure = "{exposure}"\n\n'
        f'[harness.live]\nargv = {toml_list(env_dumper(tmp_path / "live.env"))}\nmcp_policy = "p"\n\n'
        f'[harness.reader]\nargv = {toml_list(env_dumper(tmp_path / "reader.env"))}\nmcp_policy = "p"\n'
        'mcp_allow = ["read"]\n'
    )
    with running(tmp_path, config) as daemon:
        live_run = json.loads(wait_until(lambda: _read(tmp_path / "live.env"), 30))["HARNESS_RUN_ID"]
        up_pid = _upstream_pid(daemon)
        session = RawSession(harness_env(tmp_path / "reader.env"))
        try:
            session.initialize()
            listed = {t["name"] for t in session.request(1, "tools/list")["result"]["tools"]}
            assert not listed & set(FACADE_WRITES)
            for n, name in enumerate(FACADE_WRITES, start=2):
                for params in (
                    {"name": name, "arguments": {"name": "live"}},
                    {"name": "call_tool", "arguments": {"name": name, "arguments": {"name": "live"}}},
                ):
                    answer = session.request(n * 10 + len(params["arguments"]), "tools/call", params)
                    refused = answer.get("error") or answer["result"]
                    assert "error" in answer or refused.get("isError"), answer
        finally:
            session.close()
        assert _rows(daemon)["live"]["run_id"] == live_run and _rows(daemon)["live"]["state"] == "running"
        assert _upstream_pid(daemon) == up_pid and _upstream_starts(daemon) == 1
        denied = [c for c in daemon.calls() if c["harness"] == "reader"]
        assert len(denied) == 6 and {c["outcome"] for c in denied} == {"denied"}
