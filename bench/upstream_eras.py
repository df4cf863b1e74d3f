"""What the upstream itself charges per era: the official SDK client calling the same Streamable HTTP
upstream (tests/fixtures/faulty_http_upstream.py --json-response, ``echo``) directly, as a 2026-07-28
client (session-less POSTs, ``auto``) and as a 2025-11-25 client (one handshake session,
``legacy``), the order alternating per round. The gateway's dual-era twin speaks to a dual-era
upstream the first way for a 2026-07-28 session, where it used the second before issue 25
(bench/README.md). Prints each round's p50 and the median of the same-round ratios.

Run: ``python bench/upstream_eras.py [--rounds 6 -n 600]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from http_endpoint import start_upstream


async def p50_ms(url: str, mode: str, n: int, warmup: int) -> float:
    http = httpx2.AsyncClient()
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        for _ in range(warmup):
            await client.call_tool("echo", {"text": "x"})
        times = []
        for _ in range(n):
            started = time.perf_counter()
            await client.call_tool("echo", {"text": "x"})
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("-n", type=int, default=600, help="calls per era per round")
    ap.add_argument("--warmup", type=int, default=60)
    a = ap.parse_args()
    upstream, port = start_upstream("--json-response")
    url = f"http://127.0.0.1:{port}/mcp"
    got: dict[str, list[float]] = {"auto": [], "legacy": []}
    try:
        for r in range(a.rounds):
            for mode in ("auto", "legacy") if r % 2 == 0 else ("legacy", "auto"):
                got[mode].append(anyio.run(p50_ms, url, mode, a.n, a.warmup))
                print(f"[round {r + 1}/{a.rounds}] {mode:<6} p50 {got[mode][-1]:.3f} ms")
    finally:
        upstream.terminate()
        upstream.wait(10)
    ratios = [m / h for m, h in zip(got["auto"], got["legacy"], strict=True)]
    added = statistics.median(got["auto"]) - statistics.median(got["legacy"])
    ratio = statistics.median(ratios)
    print(f"# upstream_eras: p50 2026-07-28 / 2025-11-25 (same-round medians) x {ratio:.3f}, +{added:.3f} ms")


if __name__ == "__main__":
    main()
