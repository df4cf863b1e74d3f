"""JSON-RPC 2.0 framing for newline-delimited MCP streams, and the gateway's structured errors."""

from __future__ import annotations

import json
from typing import Any, Final

from harness.vocabulary import Outcome

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

GATEWAY_ERROR_CODES: Final[dict[str, int]] = {
    "unknown_tool": INVALID_PARAMS,
    "not_permitted": -32003,
    "upstream_unavailable": -32010,
    "upstream_error": -32011,
    "circuit_open": -32012,
    "timeout": -32001,
}
"""The JSON-RPC code of each gateway-produced failure (the table is in docs/call-log.md)."""

OUTCOME_OF_REASON: Final[dict[str, Outcome]] = {
    "unknown_tool": "denied",
    "not_permitted": "denied",
    "upstream_unavailable": "upstream_error",
    "upstream_error": "upstream_error",
    "circuit_open": "circuit_open",
    "timeout": "timeout",
}


def encode(message: dict[str, Any]) -> bytes:
    """One message as a compact UTF-8 JSON line."""
    return (_ENCODER.encode(message) + "\n").encode()


def result(request_id: Any, value: dict[str, Any]) -> bytes:
    """A success response line."""
    return encode({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(request_id: Any, code: int, message: str, data: dict[str, Any] | None = None) -> bytes:
    """An error response line."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return encode({"jsonrpc": "2.0", "id": request_id, "error": err})


def gateway_error(request_id: Any, reason: str, detail: str, next_step: str) -> bytes:
    """A failure the gateway itself produces: ``message`` starts with the reason, ``data.reason`` holds it."""
    return error(
        request_id,
        GATEWAY_ERROR_CODES[reason],
        f"{reason}: {detail}. {next_step}",
        {"reason": reason},
    )


def notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    """A notification line."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return encode(msg)


class LineBuffer:
    """Splits a byte stream into lines; refuses a line longer than ``limit`` bytes."""

    __slots__ = ("_pending", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pending = b""

    def feed(self, data: bytes) -> list[bytes]:
        """Complete lines in ``data`` (without newlines); keeps the tail. ValueError past the limit."""
        if self._pending:
            data = self._pending + data
        lines = data.split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > self.limit:
            self._pending = b""
            raise ValueError(f"a message longer than {self.limit} bytes")
        return lines
