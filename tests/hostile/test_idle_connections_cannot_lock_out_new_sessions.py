"""M6: the control socket kept idle connections forever (no preamble deadline, no cap): 21,000 idle
connections from two processes hit the daemon's descriptor limit, a new `harness mcp` hung, and
asyncio's accept errors filled 221 MB of stderr in 80 s. Now: a 5 s preamble deadline, caps per
process, per origin and in total, one log line per second per reason, and a refused bridge says
why on stderr and exits 1 (docs/control-socket.md). The full-size figures: bench/idle_connections.py."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from daemon_support import PY, RawSession, env_dumper, faulty, harness_env, running, toml_list, wait_until

HOLD_ALL = """
import json, socket, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(json.dumps({"harness_bridge": 1, "kind": "mcp"}).encode() + b"\\n")  # an idle session
    held.append(s)
print("held", flush=True)
sys.stdin.read()
"""


def _config(dump: Path) -> str:
    return (
        f'[mcp.up]\nargv = {toml_list(faulty())}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.agent]\nargv = {toml_list(env_dumper(dump))}\nmcp_policy = "p"\n'
    )


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _stderr_bytes(lines: list[str]) -> int:
    return sum(len(line.encode()) for line in list(lines))


@pytest.mark.slow  # waits out the 5 s preamble deadline
def test_a_connection_that_never_completes_its_preamble_is_closed_after_5_s(tmp_path):
    with running(tmp_path, _config(tmp_path / "agent.env")) as daemon, socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(15)
        sock.connect(str(daemon.state / "harness.sock"))
        sock.sendall(b"hello")  # no newline, ever
        started = time.monotonic()
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
        waited = time.monotonic() - started
    assert json.loads(answer) == {"harness_error": "no preamble line within 5s"}
    assert 4.0 < waited < 10.0


def test_5000_idle_connections_leave_the_daemon_bounded_and_a_new_bridge_still_gets_a_session(tmp_path):
    dump = tmp_path / "agent.env"
    with running(tmp_path, _config(dump)) as daemon:
        env = harness_env(dump)
        path = str(daemon.state / "harness.sock")
        fds_before, err_before = _fds(daemon.proc.pid), _stderr_bytes(daemon.stderr_lines)
        peak = [fds_before]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                with contextlib.suppress(OSError):
                    peak[0] = max(peak[0], _fds(daemon.proc.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        held: list[socket.socket] = []
        refused_by_os = 0
        try:
            for _ in range(5000):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.setblocking(False)
                try:
                    sock.connect(path)
                except BlockingIOError:  # the listen backlog is full: the OS refused it
                    sock.close()
                    refused_by_os += 1
                    continue
                held.append(sock)
            session = RawSession(env)  # while all of them are held
            try:
                started = time.monotonic()
                session.initialize()
                session_s = time.monotonic() - started
            finally:
                session.close()
        finally:
            for sock in held:
                sock.close()
            done.set()
            sampler.join()
        assert len(held) + refused_by_os == 5000 and held
        assert session_s < 1.0
        assert peak[0] - fds_before < 1000  # at most 16 held for this process, plus accepts in flight
        wait_until(lambda: _fds(daemon.proc.pid) <= fds_before + 2, timeout=15)
        assert _stderr_bytes(daemon.stderr_lines) - err_before < 100_000
        assert not any("Traceback" in line for line in daemon.stderr_lines)


def _start_with_nofile(tmp_path: Path, nofile: int) -> tuple[subprocess.Popen[bytes], Path, list[str]]:
    """A daemon whose descriptor limit is ``nofile`` (its caps scale with it)."""
    config = tmp_path / "harness.toml"
    config.write_text(_config(tmp_path / "agent.env"))
    state = tmp_path / "state"
    launcher = (
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]),) * 2);"
        "os.execv(sys.executable, [sys.executable, '-m', 'harness', *sys.argv[2:]])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.Popen(
        [PY, "-c", launcher, str(nofile), "daemon", "--config", str(config), "--state-dir", str(state)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    for raw in proc.stderr:
        lines.append(raw.decode())
        if raw.strip() == b"ready":
            break
    else:
        raise AssertionError(f"daemon not ready: {lines}")
    stream = proc.stderr

    def drain() -> None:
        with contextlib.suppress(ValueError, OSError):
            for raw in stream:
                lines.append(raw.decode())

    threading.Thread(target=drain, daemon=True).start()
    return proc, state, lines


def test_when_its_share_is_full_a_new_bridge_prints_the_reason_on_stderr_and_exits_1(tmp_path):
    proc, state, _ = _start_with_nofile(tmp_path, 256)  # total 64; the outside's share 32; 16 a process
    holders: list[subprocess.Popen[str]] = []
    try:
        env = harness_env(tmp_path / "agent.env")
        for _ in range(2):  # two processes outside the daemon's tree take the outside's 32 places
            holder = subprocess.Popen(
                [PY, "-c", HOLD_ALL, str(state / "harness.sock"), "16"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            holders.append(holder)
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        bridge = subprocess.run(
            [PY, "-m", "harness", "mcp"],
            input=b'{"jsonrpc": "2.0", "id": 0, "method": "ping"}\n',
            capture_output=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}, **env},
            timeout=30,
        )
        assert bridge.returncode == 1
        assert bridge.stdout == b""  # nothing that is not JSON-RPC reaches the agent
        assert bridge.stderr.decode().startswith("harness mcp: the daemon refused the session: ")
        assert "already has 32 connections open" in bridge.stderr.decode()
    finally:
        for holder in holders:
            holder.kill()
            holder.communicate(timeout=10)
        proc.terminate()
        rc = proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()
    assert rc == 0
