"""The loopback HTTP endpoint's per-call overhead: the same Streamable HTTP upstream called directly
and through the gateway's ``[mcp] listen`` endpoint, by the official SDK client over HTTP.

* ``direct``  - SDK client -> upstream (tests/fixtures/faulty_http_upstream.py --mode ok, ``echo``)
* ``gateway`` - SDK client -> daemon's loopback endpoint (bearer = a harness's token) -> the same
  upstream (one shared HTTP client session, ``[mcp.up] url``)
* ``bridge``  - SDK client (stdio) -> ``harness mcp`` -> daemon -> the same upstream: what the
  endpoint replaces, so gateway/bridge is the endpoint's own cost against the bridge's

One daemon and one upstream for the whole run; each round measures both paths with N sequential
calls each (after a warm-up), the order alternating per round. Printed: per-path medians over rounds
of p50/p99 (ms) and calls/s, and the median of the same-round ratios gateway/direct (the figure to
quote on a noisy machine), plus the daemon's CPU per gateway call.

Run: ``python bench/http_endpoint.py --rounds 4 -n 500``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
import psutil
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import dev_path  # noqa: F401 - puts devtools/ on sys.path
from devtools.rounds import ratio_line, round_line, table
from devtools.spawned import daemon_with_harnesses, env_with

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "fixtures" / "faulty_http_upstream.py"
P50_BAR = 1.3
"""Issue 26 item 4: the endpoint's p50 at most this many times the direct path's."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_upstream(*extra: str) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen([sys.executable, str(UPSTREAM), "--mode", "ok", *extra], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    return proc, int(line.split()[1])


async def measure(
    url: str, tool: str, headers: dict[str, str], n: int, warmup: int, era: str
) -> dict[str, float]:
    if url.startswith("stdio:"):
        params = StdioServerParameters(command=sys.executable, args=["-m", "harness", "mcp"], env=headers)
        async with Client(params, mode="legacy") as client:
            return await timed(client, tool, n, warmup)
    http = httpx2.AsyncClient(headers=headers)
    async with http, Client(streamable_http_client(url, http_client=http), mode=era) as client:
        return await timed(client, tool, n, warmup)


async def timed(client: Client, tool: str, n: int, warmup: int) -> dict[str, float]:
    for _ in range(warmup):
        await client.call_tool(tool, {"text": "x"})
    times = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        result = await client.call_tool(tool, {"text": "x"})
        times.append(time.perf_counter() - t)
        assert not result.is_error
    elapsed = time.perf_counter() - t0
    times.sort()
    return {
        "p50": times[len(times) // 2] * 1000,
        "p99": times[min(len(times) - 1, int(len(times) * 0.99))] * 1000,
        "cps": n / elapsed,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("-n", type=int, default=500, help="sequential calls per path per round")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--sse", action="store_true", help="the upstream answers POSTs with SSE (default: JSON)")
    ap.add_argument(
        "--era",
        choices=["auto", "legacy"],
        default="auto",
        help="the HTTP clients' mode: auto speaks 2026-07-28 to both the upstream and the endpoint, "
        "legacy 2025-11-25 (the bridge client is always legacy) (%(default)s)",
    )
    ap.add_argument(
        "--json-out", type=Path, help="also write every round's figures here (bench/paired.py reads it)"
    )
    a = ap.parse_args()
    upstream, port = start_upstream(*(() if a.sse else ("--json-response",)))
    listen = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        tables = (
            f'[mcp]\nlisten = "127.0.0.1:{listen}"\n\n[mcp.up]\nurl = "http://127.0.0.1:{port}/mcp"\n\n'
            '[mcp_policy.p]\nservers = ["up"]\n\n'
        )
        daemon, envs = daemon_with_harnesses(Path(tmp), tables, ["bench"])
        harness_env = envs["bench"]
        token = harness_env["HARNESS_MCP_TOKEN"]
        dproc = psutil.Process(daemon.pid)
        paths = {
            "direct": (f"http://127.0.0.1:{port}/mcp", "echo", {}),
            "gateway": (f"http://127.0.0.1:{listen}/mcp", "up__echo", {"Authorization": f"Bearer {token}"}),
            "bridge": ("stdio:", "up__echo", env_with(harness_env)),
        }
        results: dict[str, list[dict[str, float]]] = {p: [] for p in paths}
        cpu_per_call: dict[str, list[float]] = {}
        try:
            for r in range(a.rounds):
                order = list(paths)[r % 3 :] + list(paths)[: r % 3]
                for path in order:
                    url, tool, headers = paths[path]
                    cpu0 = sum(dproc.cpu_times()[:2])
                    got = anyio.run(measure, url, tool, headers, a.n, a.warmup, a.era)
                    if path != "direct":
                        cpu = (sum(dproc.cpu_times()[:2]) - cpu0) / (a.n + a.warmup) * 1e6
                        cpu_per_call.setdefault(path, []).append(cpu)
                    results[path].append(got)
                    print(round_line(r, a.rounds, path, got))
        finally:
            daemon.terminate()
            daemon.wait(20)
            upstream.terminate()
            upstream.wait(10)
    print(f"\n# http_endpoint: {a.rounds} rounds x {a.n} sequential calls per path (SDK client over HTTP)")
    print("\n".join(table(results)))
    for path, base in (("gateway", "direct"), ("bridge", "direct"), ("gateway", "bridge")):
        print(ratio_line(results, path, base))
    ratios = [g["p50"] / d["p50"] for g, d in zip(results["gateway"], results["direct"], strict=True)]
    held = sum(r <= P50_BAR for r in ratios)
    print(
        f"bar (issue 26 item 4): gateway p50 <= {P50_BAR} x direct held in {held} of {len(ratios)} rounds "
        f"(per round: {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    for path, cpu in cpu_per_call.items():
        print(f"daemon CPU per call, {path}: {statistics.median(cpu):.0f} us")
    if a.json_out:
        a.json_out.write_text(json.dumps({"results": results, "daemon_cpu_us_per_call": cpu_per_call}))


if __name__ == "__main__":
    os.environ.pop("HARNESS_MCP_TOKEN", None)
    main()
