"""Call tail: the whole latency distribution of sequential ``tools/call`` through the gateway, a one-hop
relay and the upstream alone, and how the slow calls are spaced.

``gateway_overhead.py`` quotes p99 from the peer driver; this script keeps every latency, so the tail can
be read (p90, p99, p99.9, max) and located: the calls slower than the path's p50 + 1 ms are counted and
the gaps between them (in calls) listed. Evenly spaced slow calls point at periodic work in the daemon
(the log writer's group commits, every ``GROUP_WINDOW_S``); scattered ones at the machine.

Paths, alternating inside each round (order rotating): ``gateway`` (a fresh daemon whose only harness is
this script in ``--probe`` mode calling ``up__echo`` through ``harness mcp``), ``relay1`` (the probe ->
``raw_relay.py --parse --prefix up__`` -> upstream) and ``direct`` (the probe -> upstream). The probe is
a bare line-JSON client (no SDK), so the figures are the paths', not a client library's.

    python bench/call_tail.py [--rounds 3 -n 3000 --harness-bin PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
WARMUP = 200
QUANTILES = (0.5, 0.9, 0.99, 0.999)


def probe(command: str, calls: int, out: Path, tool: str) -> None:
    """Call ``tool`` ``calls`` times (after ``WARMUP``) over the stdio server ``command``; write the
    latencies (ms) as JSON to ``out``."""
    proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    send, receive = proc.stdin.write, proc.stdout.readline

    def rpc(ident: int, method: str, params: dict[str, Any]) -> bytes:
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode() + b"\n")
        return receive()

    client = {"name": "call_tail", "version": "1"}
    rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client})
    send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    rpc(1, "tools/list", {})
    latencies = []
    for i in range(calls + WARMUP):
        started = time.perf_counter()
        answer = rpc(i + 2, "tools/call", {"name": tool, "arguments": {"text": "x" * 32}})
        elapsed = time.perf_counter() - started
        if b'"result"' not in answer:
            raise SystemExit(f"call {i} failed: {answer[:200]!r}")
        if i >= WARMUP:
            latencies.append(elapsed * 1000)
    proc.stdin.close()
    proc.wait(timeout=10)
    out.write_text(json.dumps(latencies))


def run_gateway(a: argparse.Namespace, out: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="htail-"))
    probe_argv = [sys.executable, __file__, "--probe", "harness mcp", str(a.n), str(out), "up__echo"]
    config = tmp / "harness.toml"
    config.write_text(
        f"[mcp.up]\nargv = {json.dumps([sys.executable, str(a.shared / 'upstream_echo.py')])}\n\n"
        '[mcp_policy.tail]\nservers = ["up"]\n\n'
        f'[harness.tail]\nargv = {json.dumps(probe_argv)}\nmcp_policy = "tail"\n'
    )
    bindir = str(Path(a.harness_bin).parent)  # so the daemon's `harness mcp` is ours
    env = dict(os.environ, PATH=os.pathsep.join([bindir, os.environ.get("PATH", "")]))
    daemon = subprocess.Popen(
        [a.harness_bin, "daemon", "--config", str(config), "--state-dir", str(tmp / "state")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + a.deadline
        while not out.exists() or not out.stat().st_size:
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"gateway: no latencies (daemon rc={daemon.poll()}); see {tmp}")
            time.sleep(0.2)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def measure(a: argparse.Namespace, path: str) -> list[float]:
    out = Path(tempfile.mkdtemp(prefix="htail-")) / f"{path}.json"
    py, upstream = sys.executable, str(a.shared / "upstream_echo.py")
    if path == "gateway":
        run_gateway(a, out)
    elif path == "relay1":
        relay = f"{py} {a.shared / 'raw_relay.py'} --parse --prefix up__ -- {py} {upstream}"
        probe(relay, a.n, out, "up__echo")
    else:
        probe(f"{py} {upstream}", a.n, out, "echo")
    latencies: list[float] = json.loads(out.read_text())
    return latencies


def summary(latencies: list[float]) -> dict[str, Any]:
    ordered = sorted(latencies)
    figures = {f"p{q * 100:g}": ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in QUANTILES}
    figures["max"] = ordered[-1]
    slow = [i for i, ms in enumerate(latencies) if ms > figures["p50"] + 1.0]
    figures["slow"] = len(slow)
    figures["gaps"] = [b - a for a, b in itertools.pairwise(slow)]
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", nargs=4, metavar=("CMD", "N", "OUT", "TOOL"), help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=3000, help="sequential calls per measurement (%(default)s)")
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the peer bench folder (%(default)s)")
    ap.add_argument("--harness-bin", default=str(Path(sys.executable).parent / "harness"))
    ap.add_argument("--deadline", type=float, default=300.0, help="seconds per gateway measurement")
    a = ap.parse_args()
    if a.probe:
        probe(a.probe[0], int(a.probe[1]), Path(a.probe[2]), a.probe[3])
        return 0
    paths = ["gateway", "relay1", "direct"]
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    for r in range(a.rounds):
        for path in paths[r % 3 :] + paths[: r % 3]:
            results[path].append(summary(measure(a, path)))
            print(f"[round {r + 1}/{a.rounds}] {path} done", file=sys.stderr)
    keys = [f"p{q * 100:g}" for q in QUANTILES] + ["max"]
    print(f"# call_tail: {a.rounds} round(s) x {a.n} sequential calls, raw client; medians over rounds (ms)")
    print(f"{'path':8s} " + " ".join(f"{k:>7s}" for k in keys) + "  slow(>p50+1ms)  gaps between slow calls")
    for path in paths:
        rows = results[path]
        med = {k: statistics.median(row[k] for row in rows) for k in [*keys, "slow"]}
        gaps = sorted(g for row in rows for g in row["gaps"])
        gap_text = f"median {statistics.median(gaps):.0f} calls" if gaps else "-"
        print(f"{path:8s} " + " ".join(f"{med[k]:7.3f}" for k in keys) + f"  {med['slow']:14.0f}  {gap_text}")
    for k in keys:
        ratios = [g[k] / r[k] for g, r in zip(results["gateway"], results["relay1"], strict=True)]
        each = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"gateway/relay1 {k}: {statistics.median(ratios):.2f} (same-round ratios {each})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
