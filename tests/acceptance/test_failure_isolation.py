"""Upstreams that fail alone, end to end with real misbehaving servers (tests/fixtures)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import apsw
import psutil
import pytest

from support import (
    FAULTY_UPSTREAM,
    PY,
    holds_for,
    http_upstream,
    probe_argv,
    read_out,
    steps,
    toml_list,
    wait_until,
)

pytestmark = pytest.mark.acceptance

FAULTY = str(FAULTY_UPSTREAM)
ALLOWLIST = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR"}


def faulty(*flags: str) -> list[str]:
    return [PY, FAULTY, *flags]


def upstream_pids(daemon_pid: int, marker: str) -> list[int]:
    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "ppid"])
        if p.info["ppid"] == daemon_pid and marker in " ".join(p.info["cmdline"] or [])
    ]


def events(db: Path, name: str) -> list[dict]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            json.loads(d)
            for (d,) in conn.execute("SELECT data FROM events WHERE name = ? ORDER BY position", (name,))
        ]
    finally:
        conn.close()


def states(db: Path) -> list[tuple[str, str]]:
    return [(e["upstream"], e["state"]) for e in events(db, "upstream.state_changed")]


@pytest.mark.slow
def test_killing_an_upstream_mid_call_fails_only_that_call_fast_and_it_comes_back_listed(
    start_daemon, tmp_path
):
    out_file, listed, back = tmp_path / "probe.json", tmp_path / "listed", tmp_path / "back"
    plan = [
        {"op": "touch", "path": str(listed)},
        {
            "op": "parallel",
            "steps": [
                {"op": "call", "name": "a__sleep", "arguments": {"ms": 5000}},
                *[{"op": "call", "name": "b__sleep", "arguments": {"ms": 200 * i}} for i in range(1, 6)],
            ],
        },
        {"op": "list"},
        {"op": "wait_file", "path": str(back)},  # the test touches it once the upstream is up again
        {"op": "call", "name": "a__echo", "arguments": {"text": "back"}},
    ]
    daemon = start_daemon(
        f"[mcp.a]\nargv = {toml_list(faulty('--record', str(tmp_path / 'a.rec')))}\n\n"
        f"[mcp.b]\nargv = {toml_list(faulty('--record', str(tmp_path / 'b.rec')))}\n\n"
        '[mcp_policy.p]\nservers = ["a", "b"]\n\n'
        f'[harness.h]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
    )
    wait_until(listed.exists, timeout=30)
    [a_pid] = wait_until(lambda: upstream_pids(daemon.proc.pid, "a.rec") or None, timeout=10)
    wait_until(
        lambda: (tmp_path / "a.rec").exists() and "sleep" in (tmp_path / "a.rec").read_text(), timeout=10
    )
    killed_at = time.time()
    os.kill(a_pid, signal.SIGKILL)
    wait_until(lambda: states(daemon.db).count(("a", "up")) == 2, timeout=30, message="a is up again")
    back.touch()
    out = read_out(out_file)
    crashed, *others = out["steps"][1]["parallel"]
    assert crashed["error"].startswith("upstream_error:")
    assert crashed["t_end"] - killed_at < 0.1
    assert [o["result"]["content"][0]["text"] for o in others] == [f"slept {200 * i}" for i in range(1, 6)]
    assert {"a__echo", "a__sleep", "b__echo"} <= set(out["steps"][2]["tools"])  # listed while it restarts
    assert out["steps"][4]["result"]["content"][0]["text"] == "back"
    [new_pid] = upstream_pids(daemon.proc.pid, "a.rec")
    assert new_pid != a_pid
    assert ("a", "restarting") in states(daemon.db) and states(daemon.db).count(("a", "up")) == 2


@pytest.mark.slow
def test_five_timeouts_open_the_breaker_the_sixth_call_never_reaches_the_upstream_and_a_probe_closes_it(
    start_daemon, tmp_path
):
    out_file, record = tmp_path / "probe.json", tmp_path / "slow.rec"
    plan = [
        *[{"op": "call", "name": "slow__hang"} for _ in range(5)],
        {"op": "call", "name": "slow__echo", "arguments": {"text": "refused"}},
        {"op": "sleep", "ms": 1100},
        {"op": "call", "name": "slow__echo", "arguments": {"text": "probe"}},
        {"op": "call", "name": "slow__echo", "arguments": {"text": "closed"}},
    ]
    daemon = start_daemon(
        f'[mcp.slow]\nargv = {toml_list(faulty("--record", str(record)))}\ntimeout = "200ms"\n'
        'breaker_failures = 5\nbreaker_cooldown = "1s"\n\n[mcp_policy.p]\nservers = ["slow"]\n\n'
        f'[harness.h]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    results = out["steps"]
    assert all(r["error"].startswith("timeout:") for r in results[:5])
    assert results[5]["error"].startswith("circuit_open:")
    assert results[7]["result"]["content"][0]["text"] == "probe"
    assert results[8]["result"]["content"][0]["text"] == "closed"
    received = [json.loads(line) for line in record.read_text().splitlines()]
    echoes = [r for r in received if r.get("name") == "echo"]
    assert len(echoes) == 2  # the refused sixth call never arrived
    assert len([r for r in received if "cancelled" in r]) == 5  # each timeout was cancelled upstream
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 8 and r, timeout=10)
    assert [r["outcome"] for r in rows] == ["timeout"] * 5 + ["circuit_open", "ok", "ok"]
    assert [e["upstream"] for e in events(daemon.db, "circuit.opened")] == ["slow"]
    assert [e["upstream"] for e in events(daemon.db, "circuit.closed")] == ["slow"]


@pytest.mark.slow
def test_a_cancelled_call_is_cancelled_upstream_frees_its_slot_and_is_logged_cancelled(
    start_daemon, tmp_path
):
    out_file, record = tmp_path / "probe.json", tmp_path / "up.rec"
    plan = [
        {"op": "call", "name": "up__hang", "cancel_after_ms": 300},
        {"op": "call", "name": "up__echo", "arguments": {"text": "slot free"}},
    ]
    daemon = start_daemon(
        f'[mcp.up]\nargv = {toml_list(faulty("--record", str(record)))}\nmax_concurrency = 1\ntimeout = "20s"\n\n'
        '[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.h]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    cancelled, after = out["steps"]
    assert cancelled["cancelled"] is True
    assert after["result"]["content"][0]["text"] == "slot free"
    assert after["t_end"] - cancelled["t_end"] < 2  # not stuck behind the hung call's 20 s deadline
    received = [json.loads(line) for line in record.read_text().splitlines()]
    hang_id = next(r["id"] for r in received if r.get("name") == "hang")
    cancels = [r for r in received if "cancelled" in r]
    assert [c["cancelled"] for c in cancels] == [hang_id]  # the upstream's own request id
    assert cancels[0]["t"] - cancelled["t_end"] < 0.1  # the upstream heard within 100 ms
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 2 and r, timeout=10)
    assert [(r["tool"], r["outcome"]) for r in rows] == [("hang", "cancelled"), ("echo", "ok")]


@pytest.mark.slow
def test_a_crash_looping_upstream_is_failed_after_the_flapping_limit_and_spawns_nothing_more(
    start_daemon, tmp_path
):
    out_file = tmp_path / "probe.json"
    plan = []
    for _ in range(7):  # each call crashes it; restarts come after 10, 20, 40, 80, 160 ms
        plan += [{"op": "call", "name": "loop__echo", "arguments": {"text": "x"}}, {"op": "sleep", "ms": 500}]
    daemon = start_daemon(
        f'[mcp.loop]\nargv = {toml_list(faulty("--crash-after", "1"))}\nrestart_delay = "10ms"\nbreaker_failures = 10\n\n'
        '[mcp_policy.p]\nservers = ["loop"]\n\n'
        f'[harness.h]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    errors = [step["error"] for step in out["steps"][::2]]
    assert all(e.startswith("upstream_error:") for e in errors[:6]), errors
    assert errors[6].startswith("upstream_unavailable:") and "failed" in errors[6]
    assert [state for _, state in states(daemon.db)] == ["up", "restarting"] * 5 + ["up", "failed"]
    started = len(events(daemon.db, "upstream.started"))
    assert started == 6
    # the next restart would have come 320 ms after the last: watch well past it
    holds_for(lambda: len(events(daemon.db, "upstream.started")) == started, 0.5, message="no more starts")
    assert upstream_pids(daemon.proc.pid, "crash-after") == []


def test_an_upstream_environment_is_the_allowlist_plus_its_env_and_no_agent_sees_the_credential(
    start_daemon, tmp_path
):
    secret = "s3cr3t-value-7f1d"
    env_file = tmp_path / "up.env"
    env_file.write_text(f"SECRET_TOKEN={secret}\nUNUSED=also-secret-2b9c\n")
    out_file = tmp_path / "probe.json"
    plan = [
        {"op": "call", "name": "up__env"},
        {"op": "call", "name": "up__echo", "arguments": {"token": secret}},
    ]
    os.environ["DAEMON_ONLY_VARIABLE"] = "daemon-only"
    try:
        daemon = start_daemon(
            f'[mcp.up]\nargv = {toml_list(faulty())}\nenv_file = "{env_file}"\n'
            'env = { API_TOKEN = "${SECRET_TOKEN}", PLAIN = "plain" }\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
            f'[harness.h]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
        )
        out = read_out(out_file)
    finally:
        del os.environ["DAEMON_ONLY_VARIABLE"]
    [pid] = upstream_pids(daemon.proc.pid, FAULTY)
    environ = dict(
        item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if item
    )
    extra = {k for k in environ if k not in ALLOWLIST and not k.startswith("LC_")}
    assert extra == {"API_TOKEN", "PLAIN"}
    assert environ["API_TOKEN"] == secret
    assert (
        out["steps"][0]["result"]["structuredContent"]["env"]["API_TOKEN"] == secret
    )  # what the upstream sees
    for spawned in events(daemon.db, "harness.spawned"):
        path = Path(f"/proc/{spawned['pid']}/environ")
        if path.exists():
            assert secret.encode() not in path.read_bytes()
    daemon.stop()
    stored = daemon.db.read_bytes() + b"".join(p.read_bytes() for p in daemon.state.rglob("*.log"))
    stored += "".join(daemon.stderr_lines).encode()
    assert secret.encode() not in stored.replace(b"[REDACTED]", b"")
    assert b"also-secret-2b9c" not in stored


@pytest.mark.slow
def test_an_upstream_that_ignores_sigterm_and_its_grandchild_are_gone_within_7_s_of_stopping(
    start_daemon, tmp_path
):
    pid_file = tmp_path / "pids.json"
    daemon = start_daemon(
        f"[mcp.stubborn]\nargv = {toml_list(faulty('--ignore-sigterm', '--spawn-grandchild', '--pid-file', str(pid_file)))}\n"
    )
    pids = json.loads(wait_until(lambda: pid_file.exists() and pid_file.read_text(), timeout=10))
    procs = [psutil.Process(pids["pid"]), psutil.Process(pids["grandchild"])]
    started = time.monotonic()
    assert daemon.stop(timeout=15) == 0
    stopped_after = time.monotonic() - started
    # Gone, not zombies: the daemon reaped the grandchild it adopted (init may reap late).
    assert [p.pid for p in procs if psutil.pid_exists(p.pid)] == []
    assert stopped_after < 7


@pytest.mark.slow
def test_a_failed_upstream_comes_back_with_harness_restart(start_daemon, tmp_path):
    marker = tmp_path / "crash-once"
    daemon = start_daemon(
        f"[mcp.loop]\nargv = {toml_list(faulty('--crash-during-initialize', '--record', str(marker)))}\n"
        'restart_delay = "10ms"\n'
    )
    wait_until(lambda: ("loop", "failed") in states(daemon.db), timeout=20)
    before = len(events(daemon.db, "upstream.started"))
    assert "restarted upstream loop" in daemon.harness_cli("restart", "loop").stdout
    wait_until(lambda: len(events(daemon.db, "upstream.started")) > before, timeout=10)
    refused = daemon.harness_cli("restart", "nothing", check=False)
    assert refused.returncode == 1 and "no harness or upstream named 'nothing'" in refused.stderr


@pytest.mark.slow
def test_an_http_upstream_serves_calls_and_a_broken_one_degrades_only_its_own_tools(start_daemon, tmp_path):
    ok, ok_port = http_upstream("ok")
    reset, reset_port = http_upstream("reset")
    stall, stall_port = http_upstream("stall")
    try:
        out_file = tmp_path / "probe.json"
        plan = [
            {"op": "call", "name": "web__echo", "arguments": {"text": "over http"}},
            {"op": "call", "name": "local__echo", "arguments": {"text": "stdio"}},
        ]
        daemon = start_daemon(
            f'[mcp.web]\nurl = "http://127.0.0.1:{ok_port}/mcp"\nheaders = {{ X-Test = "yes" }}\n\n'
            f'[mcp.resets]\nurl = "http://127.0.0.1:{reset_port}/mcp"\n\n'
            f'[mcp.stalls]\nurl = "http://127.0.0.1:{stall_port}/mcp"\ntimeout = "500ms"\n\n'
            f"[mcp.local]\nargv = {toml_list(faulty())}\n\n"
            '[mcp_policy.p]\nservers = ["web", "resets", "stalls", "local"]\n\n'
            f'[harness.h]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
        )
        out = read_out(out_file)
        assert out["steps"][0]["result"]["content"][0]["text"] == "over http"
        assert out["steps"][1]["result"]["content"][0]["text"] == "stdio"
        assert {"web__echo", "web__sleep", "local__echo"} <= set(out["tools"])
        assert not [t for t in out["tools"] if t.startswith(("resets__", "stalls__"))]
        # ready waits a few seconds for handshakes, not the 30 s after which the stalled one gives up
        wanted = {("web", "up"), ("resets", "restarting"), ("stalls", "restarting")}
        wait_until(lambda: wanted <= set(states(daemon.db)), timeout=60, message="the stalled one restarting")
        assert daemon.proc.poll() is None
    finally:
        for proc in (ok, reset, stall):
            proc.terminate()
            proc.wait(10)
            proc.stdout.close()
