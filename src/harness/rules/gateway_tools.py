"""The tools the gateway itself serves: ``search_tools`` and ``call_tool`` (lazy and top_k exposure)."""

from __future__ import annotations

from typing import Any, Final

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
