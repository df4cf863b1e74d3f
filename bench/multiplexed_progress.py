"""Per-call cost of a progress-sending tool with eight sessions at once: through the gateway (eight
harness sessions multiplexed onto one shared upstream) against eight clients each with its own copy
of the upstream (what the fleet runs without a gateway).

* ``direct``  - 8 SDK stdio clients, each -> its own demo upstream (``progress`` tool, 4 steps)
* ``gateway`` - 8 SDK stdio clients, each -> ``harness mcp`` with its own harness token -> daemon ->
  one shared demo upstream

Each round runs both paths (order alternating): the 8 clients call concurrently, each N times in
sequence, and every call's 4 progress notifications are checked to carry its own tag (a misroute
aborts the run). Printed: per-call p50/p99 (ms) over all clients, total calls/s, and the median of
same-round ratios gateway/direct.

Run: ``python bench/multiplexed_progress.py --rounds 4 -n 100``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

import dev_path  # noqa: F401 - puts devtools/ on sys.path
from devtools.rounds import ratio_line, round_line, table
from devtools.spawned import daemon_with_harnesses, env_with

SESSIONS = 8
STEPS = 4
DEMO = [sys.executable, "-m", "harness.demo.upstream", "--test-tools"]


async def one_client(
    params: StdioServerParameters, tool: str, tag: str, n: int, times: list[float], window: list[float]
) -> None:
    async with Client(params, mode="legacy") as client:
        for k in range(n + 5):  # 5 warm-up calls
            if k == 5:
                window.append(time.perf_counter())
            seen: list[str | None] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                seen.append(message)  # noqa: B023 - awaited within this iteration

            t = time.perf_counter()
            result = await client.call_tool(tool, {"steps": STEPS, "tag": tag}, progress_callback=on_progress)
            elapsed = time.perf_counter() - t
            if seen != [tag] * STEPS or result.is_error:
                raise SystemExit(f"misrouted or failed: {tag} got {seen}")
            if k >= 5:
                times.append(elapsed)
        window.append(time.perf_counter())


async def run_path(clients: list[tuple[StdioServerParameters, str]], n: int) -> dict[str, float]:
    times: list[float] = []
    window: list[float] = []  # each client's first measured call and its end: start-up left out
    async with anyio.create_task_group() as group:
        for i, (params, tool) in enumerate(clients):
            group.start_soon(one_client, params, tool, f"s{i}", n, times, window)
    elapsed = max(window) - min(window)
    times.sort()
    return {
        "p50": times[len(times) // 2] * 1000,
        "p99": times[int(len(times) * 0.99)] * 1000,
        "cps": len(times) / elapsed,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("-n", type=int, default=100, help="sequential calls per client per round")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tables = f"[mcp.demo]\nargv = {json.dumps(DEMO)}\nmax_concurrency = 64\n\n"
        tables += '[mcp_policy.p]\nservers = ["demo"]\n\n'
        daemon, envs = daemon_with_harnesses(Path(tmp), tables, [f"h{i}" for i in range(SESSIONS)])
        harness_envs = list(envs.values())
        bridge = [sys.executable, "-m", "harness", "mcp"]
        paths = {
            "direct": [(StdioServerParameters(command=DEMO[0], args=DEMO[1:]), "progress")] * SESSIONS,
            "gateway": [
                (
                    StdioServerParameters(command=bridge[0], args=bridge[1:], env=env_with(env)),
                    "demo__progress",
                )
                for env in harness_envs
            ],
        }
        results: dict[str, list[dict[str, float]]] = {p: [] for p in paths}
        try:
            for r in range(a.rounds):
                for path in list(paths) if r % 2 == 0 else list(reversed(paths)):
                    got = anyio.run(run_path, paths[path], a.n)
                    results[path].append(got)
                    print(round_line(r, a.rounds, path, got))
        finally:
            daemon.terminate()
            daemon.wait(30)
    print(f"\n# multiplexed_progress: {SESSIONS} sessions x {a.n} calls x {a.rounds} rounds, {STEPS} steps")
    print("\n".join(table(results)))
    print(ratio_line(results, "gateway", "direct") + "; every progress notification reached its own call")


if __name__ == "__main__":
    main()
