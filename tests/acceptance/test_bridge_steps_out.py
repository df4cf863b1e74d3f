"""`harness mcp` steps out of the data path: it hands the agent's stdin and stdout to the daemon
(bridge protocol 2, ``SCM_RIGHTS``) and keeps no copy, so the daemon reads and writes the agent's
pipes itself, and a daemon killed with SIGKILL gives the agent EOF at once. With descriptor passing
off (``HARNESS_BRIDGE_COPY=1``) the bridge copies bytes as before, and the same holds."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.children import end_child
from support import DEMO_UPSTREAM, INITIALIZE, PY, idle_harnesses, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

EOF_WITHIN_S = 0.1
CONFIG = (
    f'[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["demo"]\n\n'
    + idle_harnesses({"a": "p"})
)


def _fd_target(pid: int, fd: int) -> str:
    return os.readlink(f"/proc/{pid}/fd/{fd}")


def _fd_targets(pid: int) -> set[str]:
    """What every descriptor of ``pid`` refers to (one closed meanwhile is left out)."""
    targets = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            targets.add(_fd_target(pid, int(fd)))
    return targets


def _private_kb(pid: int) -> int:
    """``pid``'s unshared memory (USS: Private_Clean + Private_Dirty of ``smaps_rollup``), in kB."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    return sum(
        int(line.split()[1]) for line in rollup if line.startswith(("Private_Clean:", "Private_Dirty:"))
    )


@pytest.mark.parametrize("copying", [False, True], ids=["descriptors passed", "copying"])
def test_the_agent_reads_eof_within_100_ms_of_a_daemon_kill_9(start_daemon, copying):
    daemon = start_daemon(CONFIG)
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
            agents = {f"pipe:[{os.fstat(f.fileno()).st_ino}]" for f in (bridge.stdin, bridge.stdout)}
            wait_until(lambda: not agents & _fd_targets(bridge.pid), timeout=5)
            assert agents <= _fd_targets(daemon.proc.pid)

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
    daemon = start_daemon(CONFIG)
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


def _handed_over(start_daemon, argv: list[str]) -> tuple[Any, subprocess.Popen[bytes], set[str]]:
    """A daemon, and a bridge (``argv``, run with the code under test) that answered ``initialize``
    and handed the agent's pipes over (only the daemon holds them); and those pipes."""
    daemon = start_daemon(CONFIG)
    env = {**daemon.harness_envs()["a"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    bridge = subprocess.Popen(
        [*argv, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert bridge.stdin is not None and bridge.stdout is not None
    bridge.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    bridge.stdin.flush()
    assert json.loads(bridge.stdout.readline())["result"]["serverInfo"]["name"] == "harness"
    agents = {f"pipe:[{os.fstat(f.fileno()).st_ino}]" for f in (bridge.stdin, bridge.stdout)}
    wait_until(
        lambda: not agents & _fd_targets(bridge.pid) and agents <= _fd_targets(daemon.proc.pid), timeout=5
    )
    return daemon, bridge, agents


def test_a_bridge_that_handed_its_pipes_over_holds_less_memory_than_a_bare_interpreter(start_daemon):
    bare = subprocess.Popen([PY, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    daemon, bridge, _ = _handed_over(start_daemon, [str(Path(PY).parent / "harness")])  # the console script
    try:
        wait_until(lambda: _private_kb(bare.pid) > 0, timeout=5)
        waiting, floor = _private_kb(bridge.pid), _private_kb(bare.pid)
        assert waiting < floor / 2, f"the bridge holds {waiting} kB of its own, a bare interpreter {floor} kB"

        os.kill(daemon.proc.pid, signal.SIGKILL)  # the waiter still tells the agent why it ends
        assert bridge.wait(5) == 1
        assert bridge.stderr is not None
        assert bridge.stderr.read().decode().splitlines() == ["harness mcp: the daemon closed the connection"]
    finally:
        end_child(bridge)
        end_child(bare)


def test_an_upstream_started_after_a_bridge_handed_its_pipes_over_holds_none_of_them(start_daemon):
    daemon, bridge, agents = _handed_over(start_daemon, [PY, "-m", "harness"])
    try:

        def upstream_pid() -> int | None:
            return json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]["demo"]["pid"]

        before = upstream_pid()
        daemon.harness_cli("restart", "demo")  # the daemon starts a process while it holds the pipes
        after = wait_until(lambda: (pid := upstream_pid()) not in (None, before) and pid, timeout=20)
        assert not agents & _fd_targets(after)
    finally:
        end_child(bridge)
