"""`harness mcp` steps out of the data path: it hands the agent's stdin and stdout to the daemon
(bridge protocol 2, ``SCM_RIGHTS``) and keeps no copy, so the daemon reads and writes the agent's
pipes itself, and a daemon killed with SIGKILL gives the agent EOF at once. With descriptor passing
off (``HARNESS_BRIDGE_COPY=1``) the bridge copies bytes as before, and the same holds."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time

import pytest

from support import DEMO_UPSTREAM, INITIALIZE, PY, idle_harnesses, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

EOF_WITHIN_S = 0.1


def _fd_target(pid: int, fd: int) -> str:
    return os.readlink(f"/proc/{pid}/fd/{fd}")


@pytest.mark.parametrize("copying", [False, True], ids=["descriptors passed", "copying"])
def test_the_agent_reads_eof_within_100_ms_of_a_daemon_kill_9(start_daemon, copying):
    config = f'[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["demo"]\n\n'
    daemon = start_daemon(config + idle_harnesses({"a": "p"}))
    env = daemon.harness_envs()["a"]
    if copying:
        env["HARNESS_BRIDGE_COPY"] = "1"
    bridge = subprocess.Popen(
        [PY, "-m", "harness", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        assert bridge.stdin is not None and bridge.stdout is not None
        bridge.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        bridge.stdin.flush()
        answer = json.loads(bridge.stdout.readline())
        assert answer["result"]["serverInfo"]["name"] == "harness"
        if copying:
            assert _fd_target(bridge.pid, 0).startswith("pipe:") and _fd_target(bridge.pid, 1).startswith(
                "pipe:"
            )
        else:  # the bridge let go of the agent's pipes: only the daemon holds them
            wait_until(
                lambda: _fd_target(bridge.pid, 0) == _fd_target(bridge.pid, 1) == "/dev/null", timeout=5
            )
            ours = {_fd_target(daemon.proc.pid, int(fd)) for fd in os.listdir(f"/proc/{daemon.proc.pid}/fd")}
            assert f"pipe:[{os.fstat(bridge.stdout.fileno()).st_ino}]" in ours

        killed = time.monotonic()
        os.kill(daemon.proc.pid, signal.SIGKILL)
        readable, _, _ = select.select([bridge.stdout], [], [], 5.0)
        took = time.monotonic() - killed
        assert readable and os.read(bridge.stdout.fileno(), 1) == b""  # EOF, nothing else
        assert took < EOF_WITHIN_S, f"the agent read EOF {took * 1000:.0f} ms after the kill"
        assert bridge.wait(5) == 1
    finally:
        bridge.kill()
        bridge.wait(5)
        bridge.stdin.close()
        bridge.stdout.close()


def test_a_passed_session_ends_with_the_agents_stdin_and_the_bridge_exits_0(start_daemon):
    config = f'[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["demo"]\n\n'
    daemon = start_daemon(config + idle_harnesses({"a": "p"}))
    env = daemon.harness_envs()["a"]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "demo__echo", "arguments": {"text": "hi"}},
    }
    lines = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps(call),
    ]
    bridge = subprocess.Popen(
        [PY, "-m", "harness", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert bridge.stdin is not None and bridge.stdout is not None
    bridge.stdin.write(("\n".join(lines) + "\n").encode())
    bridge.stdin.flush()
    answers = [json.loads(bridge.stdout.readline()) for _ in range(2)]
    bridge.stdin.close()  # the agent is done: the session ends, the bridge exits 0
    assert bridge.wait(10) == 0, bridge.stderr.read() if bridge.stderr else ""
    assert bridge.stdout.read() == b""
    bridge.stdout.close()
    bridge.stderr.close()
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "hi"
    rows = wait_until(lambda: (r := daemon.calls()) and r, timeout=20)
    assert [(r["harness"], r["tool"], r["outcome"]) for r in rows] == [("a", "echo", "ok")]
