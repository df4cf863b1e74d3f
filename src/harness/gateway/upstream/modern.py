"""Speaking the 2026-07-28 revision to an upstream that speaks nothing older.

An upstream that refuses the ``initialize`` handshake is asked ``server/discover``; when it lists a
revision the gateway speaks, every later request carries the envelope (protocol version, the
gateway as client, its capabilities) in ``params._meta``, and there is no session handshake. Its
tools ask for input by answering ``resultType: "input_required"`` (SEP-2322) rather than by
sending requests of their own: :func:`input_required` tells such an answer apart.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from harness import __version__
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.revisions import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    MODERN_VERSIONS,
    NAMED_BY,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
)

GATEWAY_INFO: Final = {"name": "harness-gateway", "version": __version__}
GATEWAY_CAPABILITIES: Final[dict[str, Any]] = {"elicitation": {}}
"""What the gateway declares to upstreams: elicitation is relayed to the session whose call asks
(sampling and roots never are, ADR-0035)."""
RELAYED_INPUT: Final = "elicitation/create"
"""The one kind of input request the gateway relays to agents."""
HEADER_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""What an ``x-mcp-header`` may name (an HTTP field-name token)."""
HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})
"""The types of the arguments a tool may mirror into a header."""

HeaderParams = dict[tuple[str, ...], str]
"""A tool's arguments mirrored into ``Mcp-Param-*`` headers: header token by property path."""


@dataclass(frozen=True, slots=True)
class ModernUpstream:
    """The revision agreed with an upstream, and the envelope every request to it carries."""

    version: str

    def stamp(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the envelope added to its ``_meta`` (changed in place, and returned); a
        2026-07-28 agent's request keeps the capabilities its client declared that the gateway
        relays, so the upstream asks it only what it can answer."""
        meta = params.get("_meta") or {}
        params["_meta"] = {**meta, **envelope(self.version, meta.get(CLIENT_CAPABILITIES_KEY))}
        return params


def envelope(version: str = MODERN_VERSIONS[-1], declared: Any = None) -> dict[str, Any]:
    """The ``_meta`` keys that make a request one of ``version`` (the newest the gateway speaks),
    declaring what the gateway relays (of it, what an agent ``declared``, if it declared any)."""
    capabilities = GATEWAY_CAPABILITIES
    if isinstance(declared, dict):
        capabilities = {k: v for k, v in declared.items() if k in GATEWAY_CAPABILITIES}
    return {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: GATEWAY_INFO,
        CLIENT_CAPABILITIES_KEY: capabilities,
    }


@dataclass(frozen=True, slots=True)
class Discovered:
    """What a ``server/discover`` answer says, as the handshake's result would."""

    era: ModernUpstream
    capabilities: dict[str, Any]
    server_info: dict[str, Any]


def discovered(result: dict[str, Any]) -> Discovered | str:
    """The revision to speak with an upstream from its ``server/discover`` result, or why none."""
    listed = result.get("supportedVersions")
    shared = [v for v in MODERN_VERSIONS if isinstance(listed, list) and v in listed]
    if not shared:
        return f"server/discover lists no revision the gateway speaks ({', '.join(MODERN_VERSIONS)})"
    capabilities = result.get("capabilities")
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
    return Discovered(
        ModernUpstream(shared[-1]),
        capabilities if isinstance(capabilities, dict) else {},
        info if isinstance(info, dict) else {},
    )


def listen_filter(capabilities: dict[str, Any]) -> dict[str, bool]:
    """What a ``subscriptions/listen`` stream asks for: the list changes the upstream says it sends
    (the link follows tool and resource lists)."""
    wanted = {"tools": "toolsListChanged", "resources": "resourcesListChanged"}
    return {
        flag: True
        for kind, flag in wanted.items()
        if isinstance(offered := capabilities.get(kind), dict) and offered.get("listChanged") is True
    }


def input_required(message: dict[str, Any]) -> dict[str, Any] | None:
    """The result of an answer that asks for input (``resultType: "input_required"``), else None; a
    complete one loses its ``resultType: "complete"``, as the handshake era has it (a 2026-07-28
    session's wire splices it back into the line, which it would otherwise parse again)."""
    result = message.get("result")
    if not isinstance(result, dict):
        return None
    kind = result.get("resultType")
    if kind == "complete":
        del result["resultType"]
    return result if kind == "input_required" else None


def unrelayable(result: dict[str, Any]) -> tuple[int, str] | None:
    """The error that ends a call whose input-required result cannot reach an agent (None: every
    input request is an elicitation)."""
    requests = result.get("inputRequests") or {}
    if not isinstance(requests, dict) or not all(isinstance(r, dict) for r in requests.values()):
        return jsonrpc.INTERNAL_ERROR, "the upstream's inputRequests is not an object of requests"
    for request in requests.values():
        if request.get("method") != RELAYED_INPUT:
            return jsonrpc.METHOD_NOT_FOUND, f"the gateway does not forward {request.get('method')}"
    return None


def header_params(schema: Any) -> HeaderParams:
    """The arguments a tool's input schema mirrors into headers (SEP-2243): each property reached
    through ``properties`` alone that carries a valid ``x-mcp-header`` on a string, integer or
    boolean."""
    found: HeaderParams = {}
    stack: list[tuple[tuple[str, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        properties = node.get("properties") if isinstance(node, dict) else None
        for name, sub in properties.items() if isinstance(properties, dict) else ():
            if not isinstance(sub, dict):
                continue
            token = sub.get("x-mcp-header")
            if isinstance(token, str) and HEADER_TOKEN.fullmatch(token) and sub.get("type") in HEADER_TYPES:
                found[(*path, name)] = token
            stack.append(((*path, name), sub))
    return found


def modern_headers(message: dict[str, Any], tools: Mapping[str, HeaderParams]) -> dict[str, str] | None:
    """The headers a 2026-07-28 request repeats over HTTP: its envelope's version, its method, its
    name, and for ``tools/call`` the arguments its tool (in ``tools``) mirrors (None: the message
    carries no envelope)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if not isinstance(version, str) or not isinstance(params, dict):
        return None
    method = str(message.get("method"))
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name = params.get(NAMED_BY.get(method, ""))
    if isinstance(name, str):
        headers["Mcp-Name"] = _header_value(name)
        for path, token in tools.get(name, {}).items() if method == "tools/call" else ():
            value: Any = params.get("arguments")
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, str | int) and not isinstance(value, bool):
                headers[f"Mcp-Param-{token}"] = _header_value(str(value))
            elif isinstance(value, bool):
                headers[f"Mcp-Param-{token}"] = "true" if value else "false"
    return headers


def _header_value(text: str) -> str:
    """``text`` as a header carries it: as it is when printable ASCII without edge spaces, else
    ``=?base64?<UTF-8 in base64>?=``."""
    plain = text.isascii() and text.isprintable() and text == text.strip()
    if plain and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="
