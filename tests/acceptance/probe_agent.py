"""A test agent harness: connects through `harness mcp` with the official SDK client.

Writes what it saw as JSON to --out. Options pin the protocol revision it asks for, lie about
HARNESS_NAME, or call a given tool with given arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import anyio
import mcp.client.session as client_session
from mcp import Client, StdioServerParameters


async def run(args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    if args.lie_name:
        env["HARNESS_NAME"] = args.lie_name
    if args.drop_token:
        env.pop("HARNESS_MCP_TOKEN", None)
    harness = shutil.which("harness")
    command, cmd_args = (harness, ["mcp"]) if harness else (sys.executable, ["-m", "harness", "mcp"])
    params = StdioServerParameters(command=command, args=cmd_args, env=env)
    out: dict = {"env_token": bool(os.environ.get("HARNESS_MCP_TOKEN")), "steps": []}
    changed = anyio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with Client(params, mode="legacy", message_handler=on_message, cache=None) as client:
        out["protocol"] = client.protocol_version
        tools = await client.list_tools()
        out["tools"] = [t.name for t in tools.tools]
        if args.tool:
            out.update(await call(client, args.tool, json.loads(args.arguments)))
        for step in json.loads(args.steps) if args.steps else []:
            out["steps"].append(await run_step(client, step, changed))
    return out


async def call(
    client: Client, name: str, arguments: dict, cancel_after_ms: float | None = None, progress: bool = False
) -> dict:
    """One call; its outcome and the wall-clock time it ended (or was cancelled) at."""
    seen: list[float] = []
    messages: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)
        messages.append(message)

    try:
        if cancel_after_ms is None:
            result = await client.call_tool(
                name, arguments, progress_callback=on_progress if progress else None
            )
            if progress:
                return {
                    "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "progress": seen,
                    "messages": messages,
                    "t_end": time.time(),
                }
        else:
            with anyio.move_on_after(cancel_after_ms / 1000) as scope:
                result = await client.call_tool(name, arguments)
            if scope.cancelled_caught:
                return {"cancelled": True, "t_end": time.time()}
        return {
            "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
            "t_end": time.time(),
        }
    except Exception as exc:  # recorded for the test to check
        return {"error": str(exc), "t_end": time.time()}


async def run_step(client: Client, step: dict, changed: anyio.Event) -> dict:
    """One scripted step: list, call, wait for a file (sync with the test), wait for list_changed."""
    op = step["op"]
    if op == "list":
        return {"tools": [t.name for t in (await client.list_tools()).tools]}
    if op == "call":
        return await call(
            client,
            step["name"],
            step.get("arguments", {}),
            step.get("cancel_after_ms"),
            step.get("progress", False),
        )
    if op == "parallel":
        results: list[dict] = [{} for _ in step["steps"]]

        async def one(i: int, sub: dict) -> None:
            results[i] = await run_step(client, sub, changed)

        async with anyio.create_task_group() as group:
            for i, sub in enumerate(step["steps"]):
                group.start_soon(one, i, sub)
        return {"parallel": results}
    if op == "repeat":
        done = [await run_step(client, step["step"], changed) for _ in range(step["times"])]
        kept = {"results": done} if step.get("keep") else {}
        return {"repeated": len(done), "errors": sum("error" in d for d in done), **kept}
    if op == "sleep":
        await anyio.sleep(step["ms"] / 1000)
        return {"ok": True}
    if op == "touch":
        with open(step["path"], "w"):
            pass
        return {"ok": True}
    if op == "wait_file":
        with anyio.fail_after(step.get("timeout", 30)):
            while not os.path.exists(step["path"]):
                await anyio.sleep(0.05)
        return {"ok": True}
    if op == "wait_list_changed":
        with anyio.move_on_after(step.get("timeout", 15)):
            await changed.wait()
        return {"changed": changed.is_set()}
    raise ValueError(op)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--protocol", default=None, help="handshake revision the client asks for")
    ap.add_argument("--lie-name", default=None)
    ap.add_argument("--drop-token", action="store_true")
    ap.add_argument("--tool", default=None)
    ap.add_argument("--arguments", default="{}")
    ap.add_argument("--steps", default=None, help="a JSON list of steps (see run_step)")
    args = ap.parse_args()
    if args.protocol:
        client_session.LATEST_HANDSHAKE_VERSION = (
            args.protocol
        )  # the real client, asking for an older revision
    try:
        out = anyio.run(run, args)
    except Exception as exc:
        out = {"fatal": repr(exc)}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
