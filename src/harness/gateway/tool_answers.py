"""How the gateway's own tools read their arguments and shape their answers: ``search_tools`` and
``call_tool`` (lazy and top_k exposure), and a facade, trajectory or skill tool's result.

Pure shapes; a session's :mod:`harness.gateway.downstream.tool_calls` sends and records them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from harness.rules.exposure import ToolView
from harness.rules.gateway_tools import SEARCH_K_DEFAULT, SEARCH_K_MAX


def one_line(text: str, limit: int = 160) -> str:
    """The first line or sentence of a description, at most ``limit`` characters."""
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    if 0 < end < limit:
        line = line[: end + 1]
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def search_arguments(arguments: dict[str, Any]) -> tuple[str, int] | str:
    """``search_tools``' (query, k), or what is wrong with its arguments."""
    query = arguments.get("query")
    k = arguments.get("k", SEARCH_K_DEFAULT)
    if not isinstance(query, str) or not isinstance(k, int) or isinstance(k, bool):
        return "search_tools needs arguments {query: string, k: integer}"
    if not 1 <= k <= SEARCH_K_MAX:
        return f"search_tools: 'k' must be an integer from 1 to {SEARCH_K_MAX}"
    return query, k


def call_tool_arguments(arguments: dict[str, Any]) -> tuple[str, dict[str, Any]] | str:
    """The (name, arguments) of the tool ``call_tool`` asks for, or what is wrong with its arguments."""
    inner = arguments.get("name")
    inner_args = arguments.get("arguments")
    if not isinstance(inner, str) or not isinstance(inner_args, dict | None):
        return "call_tool needs arguments {name: string, arguments: object}"
    return inner, inner_args or {}


def describe(name: str, view: ToolView) -> dict[str, Any]:
    """A tool as ``search_tools`` returns it: one line, the whole description and the input schema."""
    tool = view.tools[name]
    description = tool.get("description")
    full = description if isinstance(description, str) else ""
    return {
        "name": name,
        "description": one_line(full),
        "full_description": full,
        "inputSchema": tool.get("inputSchema", {}),
    }


def search_result(names: Iterable[str], view: ToolView) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``search_tools``' result for the hits' ``names`` (those the view still has), and their names."""
    found = [describe(name, view) for name in names if name in view.tools]
    result = {
        "content": [{"type": "text", "text": json.dumps(found, ensure_ascii=False)}],
        "structuredContent": {"tools": found},
        "isError": False,
    }
    return result, tuple(tool["name"] for tool in found)


def structured_result(value: dict[str, Any]) -> dict[str, Any]:
    """A gateway tool's structured value as a tool result (its JSON text beside it)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    """A gateway tool's failure as a tool error the agent reads."""
    return {"content": [{"type": "text", "text": message}], "isError": True}
