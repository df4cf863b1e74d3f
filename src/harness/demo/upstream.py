"""A small real MCP server (official SDK, stdio) used by ``harness demo`` and the test suite.

Tools: ``echo``, ``add``, ``word_count``, ``list_notes`` (read-only), ``write_note`` (write),
``fail`` (answers with ``isError``); ``--test-tools`` adds ``sleep``, ``crash`` and ``env_keys``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


_WRITE_TOOLS = frozenset({"write_note", "delete_note"})
"""The tools that change the server's notes: ``readOnlyHint`` false; every other tool's is true."""


def _tool(name: str, description: str, props: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props, "required": sorted(props)},
        "annotations": {"readOnlyHint": name not in _WRITE_TOOLS},
    }


_STR = {"type": "string"}
_NUM = {"type": "number"}

TOOLS = [
    _tool("echo", "Return the given text unchanged.", {"text": _STR}),
    _tool("add", "Add two numbers and return the sum.", {"a": _NUM, "b": _NUM}),
    _tool("word_count", "Count the words in a text.", {"text": _STR}),
    _tool("list_notes", "List the titles of the notes written so far.", {}),
    _tool("write_note", "Store a note under a title (kept in memory).", {"title": _STR, "body": _STR}),
    _tool("fail", "Always fails with the given message, as a tool error.", {"message": _STR}),
]

LONG_TOOL_NAME = "summarize_every_open_issue_and_pull_request_in_the_repositor"

TEST_TOOLS = [
    _tool("sleep", "Sleep for ms milliseconds, then answer.", {"ms": _NUM}),
    _tool("crash", "Exit the server process at once (test fixture).", {}),
    _tool("env_keys", "The names of the server's environment variables.", {}),
    _tool(LONG_TOOL_NAME, "A tool whose name is 60 characters long (naming tests).", {}),
    _tool(
        "progress",
        "Report progress `steps` times with `tag` as each message, then answer `tag`.",
        {"steps": _NUM, "tag": _STR},
    ),
    _tool("delete_note", "Delete a note (no readOnlyHint: a write tool).", {"title": _STR}),
]


def build_server(test_tools: bool) -> Server[Any]:
    """The demo server with its tools."""
    tools = TOOLS + (TEST_TOOLS if test_tools else [])
    if test_tools:
        del tools[-1]["annotations"]
    listing = {"tools": tools}
    notes: dict[str, str] = {}

    async def on_list_tools(ctx: Any, params: Any) -> dict[str, Any]:
        return listing

    async def on_call_tool(ctx: Any, params: Any) -> dict[str, Any]:
        args = params.arguments or {}
        name = params.name
        if name == "echo":
            return _text(str(args.get("text", "")))
        if name == "add":
            return {
                **_text(str(float(args.get("a", 0)) + float(args.get("b", 0)))),
                "structuredContent": {"sum": float(args.get("a", 0)) + float(args.get("b", 0))},
            }
        if name == "word_count":
            return _text(str(len(str(args.get("text", "")).split())))
        if name == "list_notes":
            return _text("\n".join(sorted(notes)) or "(no notes)")
        if name == "write_note":
            notes[str(args.get("title", ""))] = str(args.get("body", ""))
            return _text(f"stored {args.get('title', '')!r}")
        if name == "fail":
            return _text(str(args.get("message", "failed")), error=True)
        if test_tools and name == "sleep":
            await anyio.sleep(float(args.get("ms", 0)) / 1000)
            return _text(f"slept {args.get('ms')}")
        if test_tools and name == "crash":
            os._exit(3)
        if test_tools and name == "env_keys":
            return _text(" ".join(sorted(os.environ)))
        if test_tools and name == LONG_TOOL_NAME:
            return _text(f"{len(name)} characters")
        if test_tools and name == "progress":
            tag, steps = str(args.get("tag", "")), int(args.get("steps", 3))
            for step in range(1, steps + 1):
                await ctx.session.report_progress(step, steps, tag)
            return _text(tag)
        if test_tools and name == "delete_note":
            notes.pop(str(args.get("title", "")), None)
            return _text("deleted")
        return _text(f"unknown tool: {name}", error=True)

    # The SDK accepts plain dict results at run time; its type hints name the typed models.
    handlers: dict[str, Any] = {"on_list_tools": on_list_tools, "on_call_tool": on_call_tool}
    return Server("harness-demo", version="1.0.0", **handlers)


async def _serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    """Serve over stdio until stdin closes."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--test-tools", action="store_true")
    args = ap.parse_args()
    try:
        anyio.run(_serve, build_server(args.test_tools))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass


if __name__ == "__main__":
    main()
