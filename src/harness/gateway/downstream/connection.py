"""The control socket: bridge connections become MCP sessions; control requests get one JSON answer.

Every connection opens with one preamble line, a JSON object with ``"harness_bridge": <version>``:
``{"harness_bridge": 1, "kind": "mcp", "token": "…"}`` for an MCP session (the rest of the stream is
newline-delimited JSON-RPC), or ``{"harness_bridge": 1, "kind": "control", "command": "list"}`` for
one control request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from harness.events import SessionOpened
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.outbox import OUTBOX

log = logging.getLogger(__name__)

BRIDGE_PROTOCOL_VERSIONS = frozenset({1})
MAX_PREAMBLE_BYTES = 4096
MAX_MESSAGE_BYTES = 16 << 20

SessionFactory = Callable[[str | None, Callable[[bytes], None], int], DownstreamSession]
"""(token, send, bridge protocol version) → a new session."""
ControlHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]


class BridgeConnection(asyncio.Protocol):
    """One accepted connection on the control socket."""

    def __init__(
        self,
        new_session: SessionFactory,
        control: ControlHandler,
        on_session: Callable[[DownstreamSession], None],
    ) -> None:
        self._new_session = new_session
        self._control = control
        self._on_session = on_session
        self._buffer = jsonrpc.LineBuffer(MAX_PREAMBLE_BYTES)
        self._transport: asyncio.Transport | None = None
        self.session: DownstreamSession | None = None
        self._handle: Callable[[Any], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def _send(self, data: bytes) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing():
            OUTBOX.write(transport, data)

    def data_received(self, data: bytes) -> None:
        with OUTBOX:
            self._received(data)

    def _received(self, data: bytes) -> None:
        try:
            lines = self._buffer.feed(data)
        except ValueError as exc:
            self._abort(f"{exc}")
            return
        handle = self._handle
        parse = jsonrpc.parse
        for line in lines:
            if handle is None:
                self._preamble(line)
                handle = self._handle
                if handle is None:
                    return
                continue
            if not line.strip():  # blank and whitespace-only lines are not messages
                continue
            try:
                message = parse(line)
            except jsonrpc.NotJSON as exc:
                if self.session is not None:
                    self.session.refuse_unparsable(line, exc.reason)
                else:
                    self._send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"parse error: {exc.reason}"))
                continue
            try:
                handle(message)
            except Exception:  # a bug must cost one answer, never the connection or the daemon
                log.exception("error handling a message")
                self._send(jsonrpc.error(None, jsonrpc.INTERNAL_ERROR, "internal error in the gateway"))

    def _preamble(self, line: bytes) -> None:
        try:
            pre = json.loads(line)
            version = pre["harness_bridge"]
        except (ValueError, KeyError, TypeError):
            self._abort("the first line must be the bridge preamble")
            return
        if version not in BRIDGE_PROTOCOL_VERSIONS:
            speaks = sorted(BRIDGE_PROTOCOL_VERSIONS)
            self._abort(f"bridge protocol {version!r} is not supported (the daemon speaks {speaks})")
            return
        kind = pre.get("kind", "mcp")
        if kind == "control":
            command = pre.get("command")
            args = pre.get("args") if isinstance(pre.get("args"), dict) else {}
            asyncio.get_running_loop().create_task(self._answer_control(str(command), args))
            self._handle = lambda _m: None
            return
        token = pre.get("token")
        session = self._new_session(token if isinstance(token, str) else None, self._send, version)
        self.session = session
        self._on_session(session)
        self._buffer.limit = MAX_MESSAGE_BYTES
        self._handle = session.handle

    async def _answer_control(self, command: str, args: dict[str, Any]) -> None:
        try:
            answer = {"ok": True, "result": await self._control(command, args)}
        except Exception as exc:
            answer = {"ok": False, "error": str(exc)}
        self._send(json.dumps(answer).encode() + b"\n")
        if self._transport is not None:
            self._transport.close()

    def _abort(self, reason: str) -> None:
        log.warning("closing a control-socket connection: %s", reason)
        if self._transport is not None:
            self._transport.write(json.dumps({"harness_error": reason}).encode() + b"\n")
            self._transport.close()
            self._transport = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self.session is not None:
            self.session.close("disconnected")

    def eof_received(self) -> bool | None:
        return False


def session_opened_event(session: DownstreamSession, transport: str, bridge_version: int) -> SessionOpened:
    """The event for a newly opened session."""
    ident = session.identity
    return SessionOpened(
        ts=time.time(),
        session_id=session.session_id,
        harness=ident.harness,
        run_id=ident.run_id,
        transport=transport,
        bridge_version=bridge_version,
    )
