"""A demo agent: connects through ``harness mcp`` with the official SDK client, lists tools, calls some."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters


def bridge_command() -> tuple[str, list[str]]:
    """``harness mcp`` as an agent CLI would launch it."""
    found = shutil.which("harness")
    return (found, ["mcp"]) if found else (sys.executable, ["-m", "harness", "mcp"])


async def run(calls: int, pause: float) -> None:
    """List the tools, then make ``calls`` calls cycling over a few demo tools, trying each one
    whether or not it was listed: a read-only agent is not listed ``write_note``, and its try is
    refused with ``not_permitted`` (and logged as ``denied``)."""
    command, args = bridge_command()
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    me = os.environ.get("HARNESS_NAME", "agent")
    async with Client(params, mode="legacy") as client:
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        print(f"{me}: {len(names)} tools: {', '.join(names)}", flush=True)
        plan: list[tuple[str, dict[str, Any]]] = [
            ("demo__echo", {"text": f"hello from {me}"}),
            ("demo__add", {"a": 2, "b": 40}),
            ("demo__write_note", {"title": me, "body": "written through the gateway"}),
            ("demo__word_count", {"text": "the gateway records every call"}),
            ("demo__fail", {"message": "a tool error passes through unchanged"}),
        ]
        for i in range(calls):
            name, arguments = plan[i % len(plan)]
            if name not in names:
                print(f"{me}: {name} was not listed to me; trying it anyway", flush=True)
            try:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                print(f"{me}: {name} -> {'error: ' if result.is_error else ''}{text}", flush=True)
            except Exception as exc:
                print(f"{me}: {name} -> refused: {exc}", flush=True)
            await anyio.sleep(pause)


def main() -> None:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--pause", type=float, default=0.4)
    args = ap.parse_args()
    anyio.run(run, args.calls, args.pause)


if __name__ == "__main__":
    main()
