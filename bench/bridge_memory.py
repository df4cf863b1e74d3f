"""The stdio bridge's memory: what ``harness mcp`` holds while it stays alive beside an agent.

One real daemon (one stdio upstream, ``../shared/bench/upstream_echo.py``, and one idle harness whose
token the bridges present). For each kind, ``--instances`` processes run at once, each with a pipe
for stdin and stdout like an agent's; each gets an ``initialize`` and, once it has answered, a
``tools/call`` (no answer is awaited from ``bare``):

* ``bridge``      - ``harness mcp`` (the console script next to ``sys.executable``), bridge protocol 2:
  it has handed the pipes to the daemon (checked: its fd 0 is no longer a pipe) and waits for the end
* ``bridge-copy`` - the same with ``HARNESS_BRIDGE_COPY=1``: it copies bytes both ways (two threads)
* ``relay1``      - ``raw_relay.py --parse -- upstream_echo.py``: the one-hop relay; only the relay
  process is counted (the upstream it starts is what the gateway's upstream is)
* ``bare``        - ``python -c 'import sys; sys.stdin.read()'``: the least any Python process costs

Then ``/proc/PID/smaps_rollup`` of every process: RSS, PSS (shared pages divided among the processes
mapping them, so it depends on what else runs) and USS (Private_Clean + Private_Dirty: what one more
instance adds). Printed: per kind the medians in MB, and each kind against ``relay1`` and ``bare``.

Run: ``python bench/bridge_memory.py [--instances 8]`` (needs ``../shared/bench``; ``--shared DIR``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dev_path  # noqa: F401 - puts devtools/ on sys.path
from devtools.spawned import daemon_with_harnesses, env_with, toml_list

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = ROOT.parent / "shared" / "bench"
CLIENT = {"name": "bridge_memory", "version": "1"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT},
}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "up__echo", "arguments": {}}}
FIELDS = {"Rss": "rss", "Pss": "pss", "Private_Clean": "uss", "Private_Dirty": "uss"}


def rollup(pid: int) -> dict[str, float]:
    """RSS, PSS and USS of ``pid`` in MB."""
    out = {"rss": 0.0, "pss": 0.0, "uss": 0.0}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in FIELDS:
            out[FIELDS[key]] += int(rest.split()[0]) / 1024
    return out


def send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def answered(proc: subprocess.Popen[bytes]) -> dict[str, object]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"pid {proc.pid} closed its stdout")
    return dict(json.loads(line))


def start(kind: str, a: argparse.Namespace, harness_env: dict[str, str]) -> subprocess.Popen[bytes]:
    env = env_with(harness_env)
    echo = [sys.executable, str(a.shared / "upstream_echo.py")]
    argv = {
        "bridge": [str(Path(sys.executable).parent / "harness"), "mcp"],
        "bridge-copy": [str(Path(sys.executable).parent / "harness"), "mcp"],
        "relay1": [sys.executable, str(a.shared / "raw_relay.py"), "--parse", "--", *echo],
        "bare": [sys.executable, "-c", "import sys; sys.stdin.read()"],
    }[kind]
    if kind == "bridge-copy":
        env["HARNESS_BRIDGE_COPY"] = "1"
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def settle(kind: str, proc: subprocess.Popen[bytes]) -> None:
    """Bring ``proc`` to its steady state: initialized, one call answered, pipes handed over."""
    if kind == "bare":
        return
    send(proc, INIT)
    answered(proc)
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(proc, CALL)
    answered(proc)
    if kind == "bridge":
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{proc.pid}/fd/0").startswith("pipe:"):
            if time.monotonic() > deadline:
                raise RuntimeError("the bridge did not hand its pipes over")
            time.sleep(0.01)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=8, help="processes of each kind at once (%(default)s)")
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the peer bench folder (%(default)s)")
    a = ap.parse_args()
    kinds = ("bridge", "bridge-copy", "relay1", "bare")
    figures: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="bm-") as tmp:
        echo = [sys.executable, str(a.shared / "upstream_echo.py")]
        tables = f'[mcp.up]\nargv = {toml_list(echo)}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        daemon, envs = daemon_with_harnesses(Path(tmp), tables, ["bench"])
        procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        try:
            for _ in range(a.instances):
                for kind in kinds:
                    procs.append((kind, start(kind, a, envs["bench"])))
                    settle(*procs[-1])
            for kind, proc in procs:
                figures[kind].append(rollup(proc.pid))
        finally:
            for _, proc in procs:
                with contextlib.suppress(OSError):
                    assert proc.stdin is not None
                    proc.stdin.close()
            for _, proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            daemon.terminate()
            daemon.wait(20)
    print(f"# bridge_memory: {a.instances} processes of each kind at once; medians in MB (smaps_rollup)")
    sizes = ("rss", "pss", "uss")
    medians = {k: {f: statistics.median(x[f] for x in figures[k]) for f in sizes} for k in kinds}
    print(f"{'kind':<12} {'RSS':>6} {'PSS':>6} {'USS':>6}   x relay1 (RSS/PSS/USS)   x bare (RSS/PSS/USS)")
    for kind, m in medians.items():
        rel = "/".join(f"{m[f] / medians['relay1'][f]:.2f}" for f in sizes)
        bare = "/".join(f"{m[f] / medians['bare'][f]:.2f}" for f in sizes)
        print(f"{kind:<12} {m['rss']:6.1f} {m['pss']:6.1f} {m['uss']:6.1f}   {rel:>22}   {bare:>20}")
    return 0


if __name__ == "__main__":
    os.environ.pop("HARNESS_MCP_TOKEN", None)
    raise SystemExit(main())
