"""Idle connections against the control socket (trial finding M6): the daemon stays bounded.

Method: start a daemon (temp state dir; one demo upstream; one harness that only sleeps, so a live
token exists) with its stderr in a file. Then worker processes (this script with ``--worker``) open
``--connections`` AF_UNIX connections to the control socket in a loop, non-blocking, and hold them
without sending a byte; a connect the OS refuses (``EAGAIN``: the listen backlog is full) is counted
and not retried. Meanwhile a thread samples the daemon's descriptor count (``/proc/PID/fd``) every
20 ms. Once every worker has opened its share, and while they still hold their sockets:

* the harness ``probe`` (this script with ``--probe``, spawned by the daemon) is told through a
  file to start a new ``harness mcp`` bridge, which is timed from spawn until its ``initialize`` is
  answered: a new agent session while the socket is flooded (the bar);
* the same from outside the daemon's tree, presenting the probe's token (read from its
  ``/proc/PID/environ``, as any process of the same uid could): it shares the flooders' origin;
* a control request (``status``) from outside is timed the same way.

After ``--hold`` seconds (the preamble deadline is 5 s) the workers report how many of their
sockets the daemon closed (with its error line, or at the preamble deadline) and how many are still
open, and exit. Printed: connections attempted / connected / refused by the OS, the daemon's fd count
(before, peak, after), the bridge and control latencies, and the growth of the daemon's stderr.

Bars (M6 done-when): the daemon's fd count stays below its limit (no accept ever fails), a new
bridge in a harness has its session within 1 s, stderr grows by less than 100 KB, the daemon exits 0
on SIGTERM afterwards. Exit code 1 if any bar is missed. ``--daemon-nofile N`` runs the daemon with a
lower descriptor limit (through ``prlimit``): the caps scale with it.

    python bench/idle_connections.py [--connections 50000] [--processes auto] [--hold 6] [--retry-eagain]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PY = sys.executable
BRIDGE_BAR_S = 1.0
STDERR_BAR_BYTES = 100_000


def raise_nofile(want: int) -> int:
    """Raise this process's descriptor limit towards ``want``; returns the soft limit it got."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for limit in (max(want, hard), hard):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
            return limit
    return soft


def worker(path: str, count: int, retry: bool) -> None:
    """Open ``count`` idle connections, report, hold until stdin closes, report again. With
    ``retry``, a connect refused with EAGAIN (backlog full) is tried again after 1 ms."""
    raise_nofile(count + 64)
    held: list[socket.socket] = []
    refused: dict[str, int] = {}
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        while True:
            try:
                sock.connect(path)
            except BlockingIOError:
                if retry:
                    time.sleep(0.001)
                    continue
                sock.close()
                refused["EAGAIN"] = refused.get("EAGAIN", 0) + 1
            except OSError as exc:
                sock.close()
                name = errno.errorcode.get(exc.errno or 0, str(exc))
                refused[name] = refused.get(name, 0) + 1
            else:
                held.append(sock)
            break
        if refused.get("EMFILE"):
            break
    print(json.dumps({"connected": len(held), "os_refused": refused}), flush=True)
    sys.stdin.read()
    closed = error_lines = 0
    for sock in held:
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            closed += 1
            continue
        closed += 1
        error_lines += data.startswith(b'{"harness_error"')
    print(json.dumps({"closed_by_daemon": closed, "with_error_line": error_lines}), flush=True)


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def wait_ready(proc: subprocess.Popen[bytes], err: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while b"ready\n" not in err.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"daemon not ready: {err.read_text()[-2000:]}")
        time.sleep(0.05)


def control(sock_path: Path, command: str) -> object:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(sock_path))
        sock.sendall(
            json.dumps({"harness_bridge": 1, "kind": "control", "command": command}).encode() + b"\n"
        )
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data)
    if not answer.get("ok"):
        raise RuntimeError(answer)
    return answer["result"]


def harness_env(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(e.decode().split("=", 1) for e in raw if b"=" in e)
    return {k: v for k, v in env.items() if k.startswith("HARNESS_")}


def probe(folder: str) -> None:
    """The harness ``probe``: per trigger file ``go-N`` in ``folder``, time a bridge into ``result-N``."""
    n = 0
    while True:
        trigger = Path(folder) / f"go-{n}"
        while not trigger.exists():
            time.sleep(0.01)
        elapsed, said = time_bridge(dict(os.environ))
        tmp = Path(folder) / f"result-{n}.tmp"
        tmp.write_text(json.dumps({"seconds": elapsed, "said": said}))
        tmp.replace(Path(folder) / f"result-{n}")
        n += 1


def probe_bridge(folder: Path, n: int, timeout: float = 60.0) -> tuple[float, str]:
    """Ask the probe harness for bridge timing number ``n``."""
    (folder / f"go-{n}").touch()
    result = folder / f"result-{n}"
    deadline = time.monotonic() + timeout
    while not result.exists():
        if time.monotonic() > deadline:
            return float("inf"), "the probe harness did not answer"
        time.sleep(0.01)
    answer = json.loads(result.read_text())
    return answer["seconds"], answer["said"]


def time_bridge(env: dict[str, str], timeout: float = 30.0) -> tuple[float, str]:
    """Seconds from spawning ``harness mcp`` until its ``initialize`` is answered (and what came back)."""
    bridge_env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | env
    started = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "harness", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=bridge_env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "0"},
        },
    }
    proc.stdin.write(json.dumps(init).encode() + b"\n")
    proc.stdin.flush()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    timer.cancel()
    proc.stdin.close()
    proc.wait(10)
    err = proc.stderr.read().decode() if proc.stderr else ""
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return elapsed, line.decode().strip()[:120] or err.strip()[:200]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=50_000)
    ap.add_argument("--processes", default="auto", help="worker processes (auto: enough for the fd limit)")
    ap.add_argument("--hold", type=float, default=6.0, help="seconds to hold after opening (deadline 5 s)")
    ap.add_argument(
        "--daemon-nofile", type=int, default=0, help="run the daemon with this descriptor limit (0: inherit)"
    )
    ap.add_argument(
        "--retry-eagain", action="store_true", help="retry a connect the full backlog refused (all get in)"
    )
    ap.add_argument("--worker", nargs=3, metavar=("SOCKET", "COUNT", "RETRY"), help=argparse.SUPPRESS)
    ap.add_argument("--probe", metavar="FOLDER", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.worker[2] == "1")
        return 0
    if args.probe:
        probe(args.probe)
        return 0

    per_process = raise_nofile(args.connections + 256) - 128
    processes = (
        max(1, -(-args.connections // per_process)) if args.processes == "auto" else int(args.processes)
    )
    share = -(-args.connections // processes)
    tmp = Path(tempfile.mkdtemp(prefix="harness-idle-"))
    state = tmp / "s"
    config = tmp / "harness.toml"
    config.write_text(
        f'[mcp.demo]\nargv = ["{PY}", "-m", "harness.demo.upstream"]\n\n'
        f'[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.probe]\nargv = ["{PY}", "{__file__}", "--probe", "{tmp}"]\nmcp_policy = "p"\n'
    )
    err = tmp / "daemon.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    limit = ["prlimit", f"--nofile={args.daemon_nofile}"] if args.daemon_nofile else []
    with open(err, "wb") as err_file:
        daemon = subprocess.Popen(
            [*limit, PY, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(state)],
            stdin=subprocess.DEVNULL,
            stderr=err_file,
            env=env,
        )
    workers: list[subprocess.Popen[str]] = []
    try:
        wait_ready(daemon, err)
        sock_path = state / "harness.sock"
        rows = control(sock_path, "list")
        assert isinstance(rows, list)
        probe_pid = next(r["pid"] for r in rows if r["name"] == "probe")
        token_env = harness_env(probe_pid)
        warm_s, _ = probe_bridge(tmp, 0)  # before the flood, for comparison
        time.sleep(0.5)  # let start-up settle before the baseline
        fd_before, err_before = fd_count(daemon.pid), err.stat().st_size
        peak = [fd_before]
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                peak[0] = max(peak[0], fd_count(daemon.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        opened_at = time.perf_counter()
        for _ in range(processes):
            workers.append(
                subprocess.Popen(
                    [PY, __file__, "--worker", str(sock_path), str(share), str(int(args.retry_eagain))],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        opened = [json.loads(w.stdout.readline()) for w in workers if w.stdout is not None]
        open_s = time.perf_counter() - opened_at
        fd_held = fd_count(daemon.pid)
        bridge_s, bridge_said = probe_bridge(tmp, 1)
        outside_s, outside_said = time_bridge(token_env)
        control_started = time.perf_counter()
        try:
            status: object = control(sock_path, "status")
        except RuntimeError as exc:
            status = str(exc)
        control_s = time.perf_counter() - control_started
        time.sleep(args.hold)
        fd_after_hold = fd_count(daemon.pid)
        closed = []
        for w in workers:
            assert w.stdin is not None and w.stdout is not None
            w.stdin.close()
            closed.append(json.loads(w.stdout.readline()))
            w.wait(60)
        sampling.set()
        sampler.join()
        err_growth = err.stat().st_size - err_before
        daemon_alive = daemon.poll() is None
    finally:
        for w in workers:
            with contextlib.suppress(Exception):
                w.kill()
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = -9

    connected = sum(o["connected"] for o in opened)
    os_refused: dict[str, int] = {}
    for o in opened:
        for k, v in o["os_refused"].items():
            os_refused[k] = os_refused.get(k, 0) + v
    closed_by_daemon = sum(c["closed_by_daemon"] for c in closed)
    error_lines = sum(c["with_error_line"] for c in closed)
    daemon_nofile = args.daemon_nofile or resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    total_cap = max(16, min(4096, daemon_nofile // 4))
    print(f"connections attempted     {share * processes:,} from {processes} process(es) ({open_s:.1f} s)")
    print(f"connected                 {connected:,}")
    print(f"refused by the OS         {sum(os_refused.values()):,} {os_refused}")
    print(f"closed by the daemon      {closed_by_daemon:,} ({error_lines:,} with an error line)")
    print(
        f"daemon fds                before {fd_before}, peak {peak[0]}, while held {fd_held}, "
        f"after {args.hold:g} s {fd_after_hold}"
    )
    print(f"bridge before the flood   {warm_s * 1000:.0f} ms")
    print(f"new bridge in a harness   {bridge_s * 1000:.0f} ms: {bridge_said[:90]}")
    print(f"new bridge from outside   {outside_s * 1000:.0f} ms: {outside_said[:90]}")
    shown = "ok" if isinstance(status, dict) else status[:90]
    print(f"control request (status)  {control_s * 1000:.0f} ms: {shown}")
    print(f"daemon stderr growth      {err_growth:,} bytes")
    print(f"daemon alive, exit code   {daemon_alive}, {rc}")
    accept_failures = err.read_text().count("cannot accept")
    print(f"accept failures logged    {accept_failures} (the total cap is {total_cap})")
    bars = {
        f"fd peak < {daemon_nofile} (the daemon's limit), no accept failure": peak[0] < daemon_nofile
        and accept_failures == 0,
        f"bridge session < {BRIDGE_BAR_S:g} s": bridge_s < BRIDGE_BAR_S and '"result"' in bridge_said,
        f"stderr growth < {STDERR_BAR_BYTES:,} bytes": err_growth < STDERR_BAR_BYTES,
        "daemon alive and exits 0": daemon_alive and rc == 0,
    }
    for text, ok in bars.items():
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    print(f"(state and stderr kept in {tmp})")
    return 0 if all(bars.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
