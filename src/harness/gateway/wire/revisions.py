"""Names of the 2026-07-28 revision's per-request envelope, shared by both sides of the gateway."""

from __future__ import annotations

from typing import Final

MODERN_VERSIONS: Final = ("2026-07-28",)
"""Revisions spoken without a handshake."""

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

NAMED_BY: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""Requests whose ``Mcp-Name`` header repeats a param (over HTTP), by method."""
