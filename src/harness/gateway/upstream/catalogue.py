"""What the gateway keeps of an upstream's ``tools/list``: each tool checked against the MCP schema of
the revision the upstream speaks, mended where that changes no meaning, dropped where it cannot be,
within a cap; one note per tool left out or mended (the upstream's log and ``harness doctor`` show
them). Runs once per catalogue fetch, never per call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_types.methods import parse_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from harness.naming import exposed_name

MAX_TOOLS = 2000
"""The most tools kept of one upstream; the ones listed after them are dropped."""
MAX_CATALOGUE_BYTES = 4 << 20
"""The most bytes (as JSON) of tools kept of one upstream; the ones listed past them are dropped."""
FALLBACK_VERSION = "2025-11-25"
"""The revision whose schema checks an upstream that named none the gateway knows."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""The tool names the specification allows (2025-11-25, "Tool names")."""


@dataclass(frozen=True, slots=True)
class Checked:
    """The tools kept, in listing order, and one line per tool dropped or mended."""

    tools: list[dict[str, Any]]
    notes: tuple[str, ...]


def check_catalogue(upstream: str, version: str, listed: Sequence[Any]) -> Checked:
    """The tools of ``upstream``'s listing an MCP client accepts, each reachable by its own name.

    A tool with no ``inputSchema`` gets ``{"type": "object"}``; one whose name is not 1-128
    characters of ``A-Za-z0-9_.-`` or that fails the schema is dropped, as is a second tool of the
    same name. Two tools whose exposed names coincide (a 32-bit hash collision of shortened names)
    keep the one whose real name sorts first, whatever the listing order. Past :data:`MAX_TOOLS`
    or :data:`MAX_CATALOGUE_BYTES` the rest is dropped.
    """
    notes: list[str] = []
    if len(listed) > MAX_TOOLS:
        notes.append(
            f"dropped {len(listed) - MAX_TOOLS} tools listed past the cap of {MAX_TOOLS} per upstream"
        )
        listed = listed[:MAX_TOOLS]
    schema_version = version if version in HANDSHAKE_PROTOCOL_VERSIONS else FALLBACK_VERSION
    by_name: dict[str, dict[str, Any]] = {}
    for item in listed:
        tool, note = _check_tool(item, schema_version)
        if tool is not None and tool["name"] in by_name:
            note = f"dropped tool {_shown(tool['name'])}: listed twice (the first is kept)"
            tool = None
        if note is not None:
            notes.append(note)
        if tool is not None:
            by_name[tool["name"]] = tool
    owner: dict[str, str] = {}
    for name in sorted(by_name):
        exposed = exposed_name(upstream, name)
        if exposed in owner:
            del by_name[name]
            notes.append(f"dropped tool {_shown(name)}: its exposed name {exposed} is {owner[exposed]!r}'s")
        else:
            owner[exposed] = name
    return Checked(_within_bytes(list(by_name.values()), notes), tuple(notes))


def _check_tool(item: Any, version: str) -> tuple[dict[str, Any] | None, str | None]:
    """The tool as kept (or None) and the note saying what was done to it (or None)."""
    if not isinstance(item, dict):
        return None, f"dropped a tool that is not an object ({type(item).__name__})"
    name = item.get("name")
    if not isinstance(name, str):
        return None, f"dropped a tool whose name is not a string ({_shown(name)})"
    if not _TOOL_NAME.fullmatch(name):
        return None, f"dropped tool {_shown(name)}: the name is not 1-128 characters of A-Za-z0-9_.-"
    note = None
    if item.get("inputSchema") is None:
        item = {**item, "inputSchema": {"type": "object"}}
        note = f'mended tool {_shown(name)}: no inputSchema, given {{"type": "object"}}'
    try:
        parse_server_result("tools/list", version, {"tools": [item]})
    except ValidationError as exc:
        return None, f"dropped tool {_shown(name)}: {_first_error(exc)} (MCP {version})"
    return item, note


def _within_bytes(tools: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    total = 0
    for kept, tool in enumerate(tools):
        total += len(json.dumps(tool, ensure_ascii=False, separators=(",", ":")).encode())
        if total > MAX_CATALOGUE_BYTES:
            notes.append(
                f"dropped {len(tools) - kept} tools listed past the cap of {MAX_CATALOGUE_BYTES:,} bytes "
                "per upstream"
            )
            return tools[:kept]
    return tools


def _first_error(exc: ValidationError) -> str:
    """The first schema error as ``field.path: message`` (the path inside the tool)."""
    error = exc.errors()[0]
    path = ".".join(str(part) for part in error["loc"][2:])  # past ("tools", 0)
    return f"{path}: {error['msg']}" if path else str(error["msg"])


def _shown(value: Any) -> str:
    """A value an upstream sent, safe to print: ASCII with escapes, at most 80 characters."""
    text = ascii(value)
    return text if len(text) <= 80 else text[:77] + "..."
