"""The tools the gateway itself serves: ``search_tools`` and ``call_tool`` (lazy and top_k exposure), the
control-plane facade and trajectory tools (``harness_*``), and the skill tools."""

from __future__ import annotations

from typing import Any, Final

from harness.vocabulary import Tier

SEARCH_TOOLS: Final = "search_tools"
CALL_TOOL: Final = "call_tool"

SEARCH_K_DEFAULT: Final = 8
SEARCH_K_MAX: Final = 50

SEARCH_TOOLS_DEF: Final[dict[str, Any]] = {
    "name": SEARCH_TOOLS,
    "description": (
        "Find tools for a task among the tools available to you. Describe what you want to do in plain "
        "words; you get the best matching tools with their full descriptions and input schemas. Then "
        "call one with call_tool."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do, in words."},
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_K_MAX,
                "default": SEARCH_K_DEFAULT,
                "description": "How many tools to return.",
            },
        },
        "required": ["query"],
    },
    "annotations": {"readOnlyHint": True, "title": "Search tools"},
}

CALL_TOOL_DEF: Final[dict[str, Any]] = {
    "name": CALL_TOOL,
    "description": (
        "Call a tool found with search_tools, by its name, with arguments matching its input schema. "
        "The result is the tool's own result."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name as search_tools returned it."},
            "arguments": {"type": "object", "description": "The tool's arguments."},
        },
        "required": ["name"],
    },
    "annotations": {"title": "Call a tool"},
}

LAZY_TOOLS: Final = (SEARCH_TOOLS_DEF, CALL_TOOL_DEF)
"""Listed in lazy and top_k exposure, after any upstream tools."""


# ---------------------------------------------------------------- facade, trajectory and skills


def _tool(
    name: str, description: str, properties: dict[str, Any], required: tuple[str, ...], *, read_only: bool
) -> dict[str, Any]:
    """A compact tool definition: these are listed to every session, so every byte is context."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return {
        "name": name,
        "description": description,
        "inputSchema": schema,
        "annotations": {"readOnlyHint": read_only},
    }


_NAME = {"name": {"type": "string", "description": "A harness (or upstream) name."}}
_LIMIT = {"limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}

HARNESS_LIST: Final = "harness_list"
HARNESS_DESCRIBE: Final = "harness_describe"
HARNESS_LOGS: Final = "harness_logs"
HARNESS_START: Final = "harness_start"
HARNESS_STOP: Final = "harness_stop"
HARNESS_RESTART: Final = "harness_restart"
HARNESS_RUN_CALLS: Final = "harness_run_calls"
HARNESS_FAILURES: Final = "harness_recent_failures"
SEARCH_SKILLS: Final = "search_skills"
GET_SKILL: Final = "get_skill"

FACADE_COMMANDS: Final = {
    HARNESS_LIST: "list",
    HARNESS_DESCRIBE: "describe",
    HARNESS_LOGS: "logs",
    HARNESS_START: "start",
    HARNESS_STOP: "stop",
    HARNESS_RESTART: "restart",
}
"""Facade tool → the control-plane command it runs (the same handler as ``harness <command>``)."""

FACADE_READ_TOOLS: Final[tuple[dict[str, Any], ...]] = (
    _tool(HARNESS_LIST, "List the fleet's harnesses: state, pid, run id, policy.", {}, (), read_only=True),
    _tool(HARNESS_DESCRIBE, "Describe one harness or upstream.", _NAME, ("name",), read_only=True),
    _tool(
        HARNESS_LOGS,
        "The last lines a harness (or upstream) printed.",
        {**_NAME, "lines": {"type": "integer", "minimum": 1, "maximum": 10_000, "default": 50}},
        ("name",),
        read_only=True,
    ),
    _tool(
        HARNESS_RUN_CALLS,
        "A run's MCP calls from the call log, oldest first (default: your own run).",
        {"run_id": {"type": "string"}, **_LIMIT},
        (),
        read_only=True,
    ),
    _tool(
        HARNESS_FAILURES,
        "A harness's recent calls that did not succeed (default: your own).",
        {"harness": {"type": "string"}, "since": {"type": "string", "default": "24h"}, **_LIMIT},
        (),
        read_only=True,
    ),
)
"""Listed to every harness's session (not to an unattributed one): reading the fleet is the read
tier, within what the harness may see (rules/scope.py)."""

FACADE_WRITE_TOOLS: Final[tuple[dict[str, Any], ...]] = (
    _tool(HARNESS_START, "Start a stopped harness (a new run and token).", _NAME, ("name",), read_only=False),
    _tool(HARNESS_STOP, "Stop a running harness.", _NAME, ("name",), read_only=False),
    _tool(
        HARNESS_RESTART,
        "Restart a harness (a new run and token) or an upstream.",
        _NAME,
        ("name",),
        read_only=False,
    ),
)
"""Listed only to a harness whose ``mcp_allow`` holds ``write``."""

SKILL_TOOLS: Final[tuple[dict[str, Any], ...]] = (
    _tool(
        SEARCH_SKILLS,
        "Find skills (procedures for recurring tasks) by what you want to do; read one with get_skill.",
        {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}},
        ("query",),
        read_only=True,
    ),
    _tool(
        GET_SKILL,
        "A skill's full instructions, by name.",
        {"name": {"type": "string"}},
        ("name",),
        read_only=True,
    ),
)
"""Listed when ``[mcp] skill_paths`` is set."""

GATEWAY_TOOL_TIERS: Final[dict[str, Tier]] = {
    **{str(t["name"]): "read" for t in (*FACADE_READ_TOOLS, *SKILL_TOOLS)},
    **{str(t["name"]): "write" for t in FACADE_WRITE_TOOLS},
}
"""Every tool the gateway serves itself (besides search_tools and call_tool), with its tier."""


HARNESS_TOOLS: Final = frozenset(str(t["name"]) for t in (*FACADE_READ_TOOLS, *FACADE_WRITE_TOOLS))
"""The facade and trajectory tools: a session with no harness identity neither lists nor calls them."""


def gateway_listing(*, read_only: bool, skills: bool, attributed: bool = True) -> tuple[dict[str, Any], ...]:
    """The gateway's own tools a session lists, whatever its exposure: the facade tools its tier
    permits (none to an unattributed session), and the skill tools when skills are configured."""
    facade = (*FACADE_READ_TOOLS, *(() if read_only else FACADE_WRITE_TOOLS)) if attributed else ()
    return (*facade, *(SKILL_TOOLS if skills else ()))
