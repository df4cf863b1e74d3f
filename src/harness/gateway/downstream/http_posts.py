"""A POST to ``/mcp`` routed to its session in its era, and answered.

A POST with ``Mcp-Session-Id``, or ``initialize``, is the handshake era's: its session answers it.
A POST without one is a 2026-07-28 request when its ``MCP-Protocol-Version`` header names no
handshake revision (2026-07-28, or one the gateway does not know: the era's code answers that
-32022), or, without the header, when its params carry the envelope. The token's one 2026-era
session answers it after the revision's checks, in its order: the envelope present (-32602), the
routing headers agreeing with the body (-32020), then (in the session) the revision served (-32022).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

from harness.gateway.downstream import eras, modern_era, param_headers
from harness.gateway.downstream.http_lines import ClientGone, ClientReader
from harness.gateway.downstream.http_session import Exchange, HttpSession
from harness.gateway.downstream.http_table import SessionTable
from harness.gateway.downstream.http_wire import HttpRefusal, Request, respond, response, stream
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.batch import json_array
from harness.gateway.wire.outbox import OUTBOX

JSON = {"Content-Type": "application/json"}
Streams = tuple[ClientReader, asyncio.StreamWriter]
"""A connection's two ends."""


def is_modern(headers: Mapping[str, str], message: Any) -> bool:
    """Whether a POST without ``Mcp-Session-Id`` is a 2026-07-28 request (see the module's text)."""
    version = headers.get("mcp-protocol-version")
    if version is not None:
        return version not in eras.HANDSHAKE_VERSIONS
    return eras.opens_modern(message)


class Posts:
    """Answers the POSTs whose token its peer may use."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table

    async def post(self, request: Request, token: str, message: Any, io: Streams) -> bool:
        """Answer one parsed POST; False when the connection must close."""
        session_id = request.headers.get("mcp-session-id")
        if not session_id and is_modern(request.headers, message):
            return await self._modern(request, token, message, io)
        reader, writer = io
        messages = message if isinstance(message, list) else [message]
        if any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages):
            if session_id:
                raise HttpRefusal(400, "initialize opens a new session: send it without Mcp-Session-Id")
            session = self.table.open(token)
        else:
            session = self.table.find(request.headers, token)
        exchange = session.open_exchange(messages)
        answers_expected = bool(exchange.ids)
        _handle(session, exchange, message)
        headers = {"Mcp-Session-Id": session.id}
        if not answers_expected:
            session.close_exchange(exchange)
            refused = exchange.lines.answers()  # an invalid message is answered with a null id
            if refused:
                await respond(writer, 400, refused[0].rstrip(b"\n"), {**headers, **JSON})
            else:
                await respond(writer, 202, b"", headers)
            return True
        return await answer(session, exchange, isinstance(message, list), headers, reader, writer)

    async def _modern(self, request: Request, token: str, message: Any, io: Streams) -> bool:
        """A 2026-07-28 request: no session id; the token's one 2026-era session answers it (its
        input_required states and listen streams live there). A notification is acknowledged and
        dropped (this era has none from client to server over HTTP: closing a stream cancels)."""
        reader, writer = io
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            detail = "a 2026-07-28 POST carries one JSON-RPC request or notification object"
            return await _refuse(writer, jsonrpc.error(None, jsonrpc.INVALID_REQUEST, detail))
        version = request.headers.get("mcp-protocol-version")
        if "id" not in message:
            if version is None or version in modern_era.MODERN_VERSIONS:
                await respond(writer, 202, b"", {})
                return True
            why = f"protocol version {version!r} is not supported"
            return await _refuse(writer, modern_era.unsupported_version(None, version, why))
        refusal = modern_era.missing_envelope(message["id"], message.get("params"))
        if refusal is not None:
            return await _refuse(writer, refusal)
        session = self.table.modern(token)
        mismatch = modern_era.header_mismatch(request.headers, message)
        mismatch = mismatch or param_headers.call_mismatch(request.headers, message, session.session.view)
        if mismatch is not None:
            return await _refuse(writer, jsonrpc.error(message["id"], modern_era.HEADER_MISMATCH, mismatch))
        exchange = session.open_exchange([message])
        _handle(session, exchange, message)
        kept = await answer(session, exchange, False, {}, reader, writer, modern=True)
        if not kept:  # the client closed the response stream: in this era that cancels the request
            for request_id in list(exchange.ids):
                cancel = {"requestId": request_id, "reason": "the client closed the response stream"}
                notification = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
                session.session.handle(notification)
        return kept


def _handle(session: HttpSession, exchange: Exchange, message: Any) -> None:
    """The session handles a POST's message; what it answers at once goes to ``exchange``."""
    session.current = exchange
    try:
        session.session.handle(message)
    finally:
        session.current = None


async def _refuse(writer: asyncio.StreamWriter, line: bytes) -> bool:
    """A 2026-07-28 request refused before its session: the error with its HTTP status."""
    body = line.rstrip(b"\n")
    await respond(writer, modern_era.http_status(body), body, JSON)
    return True


async def answer(
    session: HttpSession,
    exchange: Exchange,
    batch: bool,
    headers: dict[str, str],
    reader: ClientReader,
    writer: asyncio.StreamWriter,
    modern: bool = False,
) -> bool:
    """A POST's answer: one JSON body, or an SSE stream (``modern``: a JSON error gets the HTTP
    status the 2026-07-28 transport gives it)."""
    try:
        if not exchange.tokens and not exchange.notified:
            # No progress token: one JSON body, written by the exchange as soon as every answer is
            # there (at once for initialize, tools/list and refusals), unless something for the agent
            # comes first (an elicitation during the call): then a stream of everything, in order.
            exchange.reply = functools.partial(_reply, writer, batch, {**headers, **JSON}, modern)
            if not exchange.ids:
                exchange.answered()
            lines = exchange.lines
            await lines.until(reader, lambda: exchange.replied or exchange.notified or lines.ended)
            if exchange.replied:
                await writer.drain()
                return True
            if not exchange.notified:  # the session ended first
                return False
        return await stream(writer, reader, exchange.lines, headers)
    except ClientGone:
        return False
    finally:
        session.close_exchange(exchange)


def _reply(
    writer: asyncio.StreamWriter, batch: bool, headers: dict[str, str], modern: bool, lines: list[bytes]
) -> None:
    """A POST's one JSON body, written where its last answer arrives (coalesced with what that input
    writes, like the bridge's answers)."""
    body = lines[0].rstrip(b"\n") if not batch else json_array(lines)
    status = modern_era.http_status(body) if modern else 200
    if not writer.transport.is_closing():
        OUTBOX.write(writer.transport, response(status, body, headers))
