"""What each agent client (the ``harness`` key of a ``[harness.NAME]`` table) is, as data: the MCP
server name its wiring uses, the prefix it puts before the tool names it shows its model, and the
exposure mode it gets when its policy does not choose one. The wiring itself is in
:mod:`harness.gateway.harnesses.adapters`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from harness.vocabulary import Adapter, Exposure

SERVER_KEY = "harness"
"""The name under which every adapter wires the gateway into its client."""


@dataclass(frozen=True, slots=True)
class ClientTraits:
    """One client's declared traits."""

    adapter: Adapter
    default_exposure: Exposure
    """When the harness's policy does not set ``exposure``. Clients that defer MCP tool schemas
    behind their own tool search (Claude Code, Codex) take ``full``; one that loads every schema
    into every request (Crush) takes ``lazy``."""
    tool_prefix: str
    """What the client prepends to a tool name before the model sees it (for the 64-character rule)."""
    command: str = ""
    """The executable the adapter's flags are meant for (they go right after ``argv[0]``); empty for
    ``generic``, which passes none."""


CLIENTS: Mapping[Adapter, ClientTraits] = MappingProxyType(
    {
        "generic": ClientTraits("generic", "full", f"mcp__{SERVER_KEY}__"),
        "claude-code": ClientTraits("claude-code", "full", f"mcp__{SERVER_KEY}__", "claude"),
        "codex": ClientTraits("codex", "full", f"mcp__{SERVER_KEY}__", "codex"),
        "crush": ClientTraits("crush", "lazy", f"mcp_{SERVER_KEY}_", "crush"),
    }
)
"""Generic assumes the longest prefix of the known clients (Claude Code's and Codex's
``mcp__<server>__``), so a name that fits there fits everywhere."""
