"""Bridge start-up: how long ``harness mcp`` takes from exec until it has connected and sent its preamble.

An agent launches ``harness mcp`` once per MCP connection, so this is paid at every agent start.

Method (per run, the variants alternating inside each run): this process listens on a unix socket in
a temp dir; t0 = perf_counter(); spawn the bridge with HARNESS_SOCKET=<that socket>,
HARNESS_MCP_TOKEN=x and stdin a pipe; accept its connection and read until the first newline (the
preamble line, checked to be JSON carrying the token); t1 = perf_counter(). Then close the bridge's
stdin, wait for it to pass the EOF on (as the daemon does), close the connection and reap the bridge
(its exit code must be 0). One untimed warm-up run first.

Variants:

* ``harness mcp``          - the console script next to ``sys.executable``: the bar, median <= 60 ms.
* ``python -m harness mcp`` - the same code through ``-m`` (also imports ``harness/__main__``).
* ``floor``                - ``python -c`` with a few lines of stdlib ``socket`` code doing the same
  connect + send: what any Python bridge costs on this machine (context, no bar).

Reported: median, min and max in ms. Then ``python -X importtime -m harness mcp`` is run once with
HARNESS_SOCKET pointing at a missing path (the bridge exits 1 at once) and the top-level modules it
imports that are neither in ``sys.stdlib_module_names`` nor ``harness`` are listed (expected: none).
Modules the bare interpreter already imports at start-up (``site`` and ``.pth`` hooks such as the
editable-install finder) are subtracted and shown on their own line, since the bridge does not cause
them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR_CODE = (
    "import os, socket\n"
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "s.connect(os.environ['HARNESS_SOCKET'])\n"
    "s.sendall(b'{\"token\": \"' + os.environ['HARNESS_MCP_TOKEN'].encode() + b'\"}\\n')\n"
    "import sys\n"
    "sys.stdin.buffer.read()\n"
    "s.shutdown(socket.SHUT_WR)\n"
    "s.recv(1)\n"
)


def one_run(cmd: list[str], listener: socket.socket, env: dict[str, str], timeout: float) -> float:
    """Seconds from spawn to the preamble's newline; raises on any misbehaviour."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    conn = None
    try:
        conn, _ = listener.accept()
        conn.settimeout(timeout)
        buf = b""
        while b"\n" not in buf:
            chunk = conn.recv(4096)
            if not chunk:
                raise RuntimeError(f"connection closed before the preamble: {buf!r}")
            buf += chunk
        t1 = time.perf_counter()
        preamble = json.loads(buf.split(b"\n", 1)[0])
        if preamble.get("token") != "x":
            raise RuntimeError(f"unexpected preamble {preamble!r}")
    finally:
        if proc.stdin:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if conn is not None:
            # Like the daemon: wait for the bridge to pass on stdin's EOF, then close our side.
            with contextlib.suppress(OSError):
                while conn.recv(65536):
                    pass
            conn.close()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"{cmd}: did not exit after stdin and the socket closed") from None
        finally:
            err = proc.stderr.read() if proc.stderr else b""  # a few lines at most
            if proc.stderr:
                proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd}: exit code {proc.returncode}: {err.decode(errors='replace')[-300:]}")
    return t1 - t0


def imported_modules(
    cmd: list[str], env: dict[str, str]
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Top-level names of the modules ``cmd`` imports, from ``-X importtime`` on stderr."""
    out = subprocess.run(
        cmd, check=False, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL
    )
    names = set()
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name.split(".")[0])
    return names, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per variant (%(default)s)")
    ap.add_argument(
        "--harness-bin",
        default=str(Path(sys.executable).parent / "harness"),
        help="the harness command (%(default)s)",
    )
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per step before giving up")
    a = ap.parse_args()

    py = sys.executable
    variants = {
        "harness mcp": [a.harness_bin, "mcp"],
        "python -m harness mcp": [py, "-m", "harness", "mcp"],
        "floor (python -c, stdlib socket)": [py, "-c", FLOOR_CODE],
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    with tempfile.TemporaryDirectory(prefix="hbs-") as tmp:
        path = os.path.join(tmp, "b.sock")
        env = dict(os.environ, HARNESS_SOCKET=path, HARNESS_MCP_TOKEN="x")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
        listener.settimeout(a.timeout)
        try:
            for cmd in variants.values():  # warm-up: page cache, .pyc files
                one_run(cmd, listener, env, a.timeout)
            for _ in range(a.runs):
                for name, cmd in variants.items():
                    times[name].append(one_run(cmd, listener, env, a.timeout))
        finally:
            listener.close()

    print(f"# bridge_startup: {a.runs} runs per variant, exec -> preamble received (ms)")
    for name, ts in times.items():
        ms = [t * 1000 for t in ts]
        print(f"{name:34s} median {statistics.median(ms):6.1f}  min {min(ms):6.1f}  max {max(ms):6.1f}")
    bridge_med = statistics.median(times["harness mcp"]) * 1000
    verdict = "PASS" if bridge_med <= 60 else "FAIL"
    print(f"bridge startup median {bridge_med:.1f} ms (bar <= 60 ms: {verdict})")

    missing = os.path.join(tempfile.gettempdir(), f"hbs-missing-{os.getpid()}.sock")
    env = dict(os.environ, HARNESS_SOCKET=missing, HARNESS_MCP_TOKEN="x")
    base, _ = imported_modules([py, "-X", "importtime", "-c", "pass"], env)
    mods, out = imported_modules([py, "-X", "importtime", "-m", "harness", "mcp"], env)
    msg = [ln for ln in out.stderr.splitlines() if not ln.startswith("import time:")]
    print(f"python -X importtime -m harness mcp (missing socket): exit {out.returncode}; says {msg[-1:]}")
    stdlib = set(sys.stdlib_module_names)
    third = sorted(m for m in mods - base if m not in stdlib and m != "harness")
    at_start = sorted(m for m in base if m not in stdlib)
    print(f"modules imported: {len(mods)} top-level names ({len(mods - base)} beyond the bare interpreter's)")
    print(f"third-party modules imported: {', '.join(third) if third else 'none'}")
    if at_start:
        print(f"(imported by the bare interpreter at start-up, not by harness: {', '.join(at_start)})")
    ok = bridge_med <= 60 and not third and out.returncode == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
