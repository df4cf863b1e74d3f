"""One agent of ``bench/fleet.py``: an SDK client that connects to its MCP servers, lists their tools,
then calls them at a steady rate while the fleet is under load.

Two ways, as the fleet runs them:

* ``--servers FILE``: the world without the gateway. The agent starts each server of FILE itself
  (a JSON list of ``{"name", "argv", "env", "call"}``), one stdio client session per server.
* ``--gateway``: one stdio session to ``harness mcp`` (the agent is a harness of the daemon, so its
  environment carries the token); the servers' tools are named ``<server>__<tool>``.

The fleet speaks to its agents through files in ``--run DIR``: an agent writes ``ready/NAME`` (the
time its tool lists arrived) and waits for ``load``; then it calls one server's tool after another
(``call`` of each server that has one), ``--rate`` calls a second, until ``stop`` appears, and writes
``results/NAME.json`` (every call's latency in ms, the errors).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

POLL_S = 0.2


async def open_sessions(
    stack: AsyncExitStack, servers: list[dict[str, Any]], gateway: bool
) -> dict[str, Client]:
    """The client sessions by server name (one to the gateway for all of them), each initialized."""
    if gateway:
        params = StdioServerParameters(command="harness", args=["mcp"], env=dict(os.environ))
        one = await stack.enter_async_context(Client(params, mode="legacy"))
        return {s["name"]: one for s in servers}
    sessions: dict[str, Client] = {}

    async def connect(server: dict[str, Any]) -> None:
        env = {**os.environ, **server.get("env", {})}
        params = StdioServerParameters(command=server["argv"][0], args=server["argv"][1:], env=env)
        sessions[server["name"]] = await stack.enter_async_context(Client(params, mode="legacy"))

    for server in servers:  # one at a time: the exit stack unwinds in order
        await connect(server)
    return sessions


async def wait_for(path: Path) -> None:
    while not path.exists():
        await anyio.sleep(POLL_S)


async def run(a: argparse.Namespace) -> None:
    run_dir = Path(a.run)
    servers: list[dict[str, Any]] = json.loads(Path(a.servers_file).read_text())
    async with AsyncExitStack() as stack:
        sessions = await open_sessions(stack, servers, a.gateway)
        listed = {id(s): await s.list_tools() for s in sessions.values()}
        tools = sum(len(t.tools) for t in listed.values())
        (run_dir / "ready" / a.name).write_text(json.dumps({"t": time.time(), "tools": tools}))
        await wait_for(run_dir / "load")
        calls = [(s["name"], s["call"]) for s in servers if s.get("call")]
        latencies: list[float] = []
        errors: list[str] = []
        interval = 1.0 / a.rate
        next_at = time.monotonic()
        i = 0
        while not (run_dir / "stop").exists():
            name, call = calls[i % len(calls)]
            tool = f"{name}__{call['tool']}" if a.gateway else call["tool"]
            t0 = time.perf_counter()
            try:
                result = await sessions[name].call_tool(tool, call.get("args", {}))
                if result.is_error:
                    errors.append(f"{tool}: {str(result.content)[:200]}")
            except Exception as exc:
                errors.append(f"{tool}: {exc!r}"[:300])
            latencies.append((time.perf_counter() - t0) * 1000)
            i += 1
            next_at += interval
            await anyio.sleep(max(0.0, next_at - time.monotonic()))
        out = {"latencies_ms": latencies, "errors": errors}
        (run_dir / "results" / f"{a.name}.json").write_text(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="the fleet's run folder")
    ap.add_argument("--name", required=True)
    ap.add_argument(
        "--servers-file", required=True, help="the servers (JSON); with --gateway only their calls count"
    )
    ap.add_argument("--gateway", action="store_true", help="reach the servers through `harness mcp`")
    ap.add_argument("--rate", type=float, default=1.0, help="calls a second under load (%(default)s)")
    a = ap.parse_args()
    try:
        anyio.run(run, a)
    except Exception as exc:
        (Path(a.run) / "results" / f"{a.name}.json").write_text(json.dumps({"fatal": repr(exc)[:2000]}))
        print(f"fleet agent {a.name}: {exc!r}", file=sys.stderr)
        raise SystemExit(1) from exc


if __name__ == "__main__":
    main()
