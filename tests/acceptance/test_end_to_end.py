"""The whole path with real processes: daemon, one shared upstream, bridges, the SDK client, the store."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import apsw
import psutil
import pytest

from harness.config import config_hash, load_config
from support import DEMO_UPSTREAM as UPSTREAM
from support import PY, probe_argv, read_out, toml_list, wait_until

pytestmark = pytest.mark.acceptance

HARNESSES = [f"h{i}" for i in range(1, 7)]


def six_harness_config(tmp: Path) -> str:
    lines = [
        '[mcp]\ndefault_policy = "everything"\n',
        f"[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n",
        '[mcp_policy.everything]\nservers = ["demo"]\n',
    ]
    for name in HARNESSES:
        extra = ["--lie-name", "h1"] if name == "h6" else []
        argv = probe_argv(
            tmp / f"{name}.json", "--tool", "demo__echo", "--arguments", '{"text": "hi"}', *extra
        )
        lines.append(f'[harness.{name}]\nargv = {toml_list(argv)}\nmodel = "model-{name}"\n')
    lines.append('[harness.sleeper]\nargv = ["sh", "-c", "sleep 600 & exec sleep 600"]\n')
    return "\n".join(lines)


def upstream_processes(daemon_pid: int) -> list[psutil.Process]:
    return [
        p
        for p in psutil.process_iter(["cmdline", "ppid"])
        if p.info["ppid"] == daemon_pid and "harness.demo.upstream" in " ".join(p.info["cmdline"] or [])
    ]


@pytest.mark.slow
def test_six_harnesses_share_one_upstream_and_each_call_is_logged_as_its_token_owner(start_daemon, tmp_path):
    daemon = start_daemon(six_harness_config(tmp_path))
    outs = {name: read_out(tmp_path / f"{name}.json") for name in HARNESSES}

    everywhere = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "harness.demo.upstream" in " ".join(p.info["cmdline"] or [])
    ]
    mine = upstream_processes(daemon.proc.pid)
    assert len(mine) == 1
    assert {p.pid for p in mine} <= {p.pid for p in everywhere}

    for out in outs.values():
        assert "fatal" not in out, out
        assert out["env_token"] is True
        assert "demo__echo" in out["tools"]
        assert out["result"]["content"][0]["text"] == "hi"

    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 6 and r, timeout=10)
    config = load_config(daemon.config)
    listing = {r["name"]: r for r in json.loads(daemon.harness_cli("list", "--json").stdout)}
    expected_hash = hashlib.sha256(b'{"text":"hi"}').hexdigest()
    assert sorted(r["harness"] for r in rows) == HARNESSES  # h6 claimed to be h1 and is logged as h6
    for row in rows:
        assert row["outcome"] == "ok"
        assert row["upstream"] == "demo" and row["tool"] == "echo" and row["tier"] == "read"
        assert row["run_id"] == listing[row["harness"]]["run_id"]
        assert row["config_hash"] == config_hash(config, row["harness"])
        assert row["model"] == f"model-{row['harness']}"
        assert row["latency_ms"] > 0
        assert row["args_hash"] == expected_hash
        assert row["ts"].endswith("Z")


@pytest.mark.slow
def test_after_sigterm_no_process_the_daemon_started_remains(start_daemon, tmp_path):
    daemon = start_daemon(six_harness_config(tmp_path))
    read_out(tmp_path / "h1.json")
    started = wait_until(lambda: len(d := daemon.descendants()) >= 3 and d, timeout=10)
    assert any("sleep" in " ".join(p.cmdline()) for p in started)
    assert daemon.stop() == 0

    def alive() -> list[psutil.Process]:
        found = []
        for p in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p)
        return found

    wait_until(lambda: not alive(), timeout=2, message="every process the daemon started is gone")
    assert not (daemon.state / "harness.sock").exists()


@pytest.mark.parametrize(
    "revision",
    [
        pytest.param("2024-11-05", marks=pytest.mark.slow),
        pytest.param("2025-03-26", marks=pytest.mark.slow),
        pytest.param("2025-06-18", marks=pytest.mark.slow),
        "2025-11-25",  # the fast lane's end-to-end run: daemon, upstream, harness, bridge, SDK client, store
    ],
)
def test_a_client_at_each_handshake_revision_lists_and_calls_through_the_gateway(
    start_daemon, tmp_path, revision
):
    out_file = tmp_path / "probe.json"
    argv = probe_argv(
        out_file, "--protocol", revision, "--tool", "demo__add", "--arguments", '{"a": 1, "b": 2}'
    )
    daemon = start_daemon(
        f'[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.probe]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    assert out["protocol"] == revision
    assert out["result"]["structuredContent"] == {"sum": 3.0}

    def negotiated():
        conn = apsw.Connection(str(daemon.db), flags=apsw.SQLITE_OPEN_READONLY)
        rows = conn.execute("SELECT data FROM events WHERE name = 'session.initialized'").fetchall()
        return [json.loads(d)["protocol_version"] for (d,) in rows]

    assert wait_until(negotiated, timeout=5) == [revision]


def test_a_session_without_a_token_is_unattributed_and_gets_no_upstream_tools(start_daemon, tmp_path):
    out_file = tmp_path / "probe.json"
    argv = probe_argv(out_file, "--drop-token", "--tool", "demo__echo", "--arguments", '{"text": "x"}')
    daemon = start_daemon(
        f'[mcp]\ndefault_policy = "p"\n\n[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n'
        f'[mcp_policy.p]\nservers = ["demo"]\n\n[harness.probe]\nargv = {toml_list(argv)}\n'
    )
    out = read_out(out_file)
    assert out["tools"] == []  # no upstream tool and no facade tool
    assert out["error"].startswith("not_permitted:")  # the tool exists; this session may not use it
    rows = wait_until(daemon.calls, timeout=10)
    assert rows[0]["harness"] is None and rows[0]["outcome"] == "denied"


@pytest.mark.slow
def test_a_write_tool_is_refused_to_a_read_only_harness_and_the_refusal_is_logged(start_daemon, tmp_path):
    out_file = tmp_path / "probe.json"
    argv = probe_argv(out_file, "--tool", "demo__delete_note", "--arguments", '{"title": "t"}')
    daemon = start_daemon(
        f'[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.reader]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    assert out["error"].startswith("not_permitted:")
    rows = wait_until(daemon.calls, timeout=10)
    assert (rows[0]["harness"], rows[0]["tool"], rows[0]["tier"], rows[0]["outcome"]) == (
        "reader",
        "delete_note",
        "write",
        "denied",
    )


@pytest.mark.slow
def test_an_upstream_crash_mid_call_returns_upstream_error_and_the_upstream_comes_back(
    start_daemon, tmp_path
):
    out_file = tmp_path / "probe.json"
    argv = probe_argv(out_file, "--tool", "demo__crash")
    daemon = start_daemon(
        f'[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.crasher]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    assert out["error"].startswith("upstream_error:")
    rows = wait_until(daemon.calls, timeout=10)
    assert rows[0]["outcome"] == "upstream_error"
    wait_until(lambda: len(upstream_processes(daemon.proc.pid)) == 1, timeout=15)


@pytest.mark.slow
def test_replay_into_a_fresh_file_gives_exactly_the_live_call_log(start_daemon, tmp_path):
    daemon = start_daemon(six_harness_config(tmp_path))
    for name in HARNESSES:
        read_out(tmp_path / f"{name}.json")
    wait_until(lambda: len(daemon.calls()) >= 6, timeout=10)
    assert daemon.stop() == 0
    target = tmp_path / "replayed.db"
    done = daemon.harness_cli("replay", "--to", str(target))
    assert "replayed" in done.stdout
    live = apsw.Connection(str(daemon.db)).execute("SELECT * FROM call_log ORDER BY position").fetchall()
    again = apsw.Connection(str(target)).execute("SELECT * FROM call_log ORDER BY position").fetchall()
    assert len(live) == 6 and live == again
    refused = daemon.harness_cli("replay", "--to", str(target), check=False)
    assert refused.returncode == 1 and "already exists" in refused.stderr


def test_the_bridge_without_a_daemon_says_so_on_one_line_and_exits_1(tmp_path):
    env = {**os.environ, "HARNESS_SOCKET": str(tmp_path / "nothing.sock"), "HARNESS_MCP_TOKEN": "x"}
    started = time.monotonic()
    done = subprocess.run([PY, "-m", "harness", "mcp"], env=env, capture_output=True, text=True, timeout=10)
    assert done.returncode == 1
    assert time.monotonic() - started < 5
    assert len(done.stderr.strip().splitlines()) == 1
    assert "no Harness daemon is listening" in done.stderr


def test_the_bridge_imports_no_third_party_module(tmp_path):
    env = {**os.environ, "HARNESS_SOCKET": str(tmp_path / "nothing.sock")}
    done = subprocess.run(
        [PY, "-X", "importtime", "-m", "harness", "mcp"], env=env, capture_output=True, text=True, timeout=10
    )
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    third_party = imported & {"pydantic", "pykka", "apsw", "anyio", "mcp", "prometheus_client", "mcp_types"}
    assert third_party == set()
    assert "harness" in imported
    assert sys.stdlib_module_names  # the check above is against known third-party roots


@pytest.mark.slow
def test_the_daemon_removes_calls_older_than_call_log_days_at_start(start_daemon, tmp_path):
    from tests_support import call_event

    from harness.actors.log_writer import EventIntake, LogWriterActor

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    now = time.time()
    writer = LogWriterActor.start(state / "harness.db", EventIntake())
    try:
        old = [call_event(i, ts=now - 3 * 86_400 - i) for i in range(5)]
        fresh = [call_event(10 + i, ts=now - 3600 - i) for i in range(3)]
        writer.proxy().write(old + fresh).get(timeout=10)
    finally:
        writer.stop()
    daemon = start_daemon(f"[mcp]\ncall_log_days = 1\n\n[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n")

    def compacted():
        conn = apsw.Connection(str(daemon.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return conn.execute("SELECT count(*) FROM events WHERE name = 'retention.compacted'").get
        finally:
            conn.close()

    wait_until(compacted, timeout=10)
    assert len(daemon.calls()) == 3
