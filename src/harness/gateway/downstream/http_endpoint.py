"""The loopback Streamable HTTP endpoint (``[mcp] listen``): the same sessions as the bridge, for
clients that only accept a URL.

``POST /mcp`` carries JSON-RPC messages; a request is answered with one ``application/json`` body
unless something for the agent comes before its answer (a progress token was given, or the upstream
elicits during the call): then with an SSE stream (``text/event-stream``, chunked) that carries those
messages and ends with the answer. ``GET /mcp`` opens the session's one standalone SSE stream
(``tools/list_changed``); ``DELETE /mcp`` ends the session. Written by hand on asyncio rather than on
the SDK's ASGI transport: the session already speaks JSON-RPC as bytes, and the SDK's transport would
parse every message into pydantic objects and back, and bring an ASGI server with its own signal
handling into the daemon.

Checks, in this order (the answer to the first that fails):

==========================================  =====================================================
``Host`` not this endpoint's loopback name  421 (DNS rebinding: a page on evil.example resolving
                                            to 127.0.0.1 sends its own Host)
``Origin`` present and not loopback         403 (a browser page on another origin)
no ``Authorization: Bearer <token>``        401, ``WWW-Authenticate: Bearer``
a token no running harness holds            401
the connection's process may not present    403 (``http_door.py``: a process in harness B's tree
this token                                  presenting A's token, as on the control socket)
no ``Mcp-Session-Id`` (not ``initialize``,  400
nor a 2026-07-28 request)
an unknown or ended session id              404 (the client starts a new session)
the session was opened with another token   403
==========================================  =====================================================

Before any of these, each connection is identified and counted (``http_door.py``: 503 past a cap),
and its request head must arrive within 5 s (408). A refusal before a usable token closes the
connection. An unexpected failure on a connection is one rate-limited log line, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from harness.gateway.downstream import modern_era, param_headers
from harness.gateway.downstream.http_door import HttpDoor
from harness.gateway.downstream.http_session import Exchange, HttpSession, SessionFactory
from harness.gateway.downstream.http_wire import (
    HEAD_TIMEOUT_S,
    MAX_HEAD,
    ClientGone,
    HttpRefusal,
    Request,
    answers,
    drain,
    loopback_hosts,
    next_line,
    read_request,
    respond,
    respond_refusal,
    stream,
)
from harness.gateway.downstream.session import HANDSHAKE_VERSIONS
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.batch import json_array
from harness.rules.access import PeerOrigin
from harness.rules.routing import Identity

log = logging.getLogger(__name__)

PATH = "/mcp"
BACKLOG = 1024
"""Connections the kernel queues before accept: past it a connect's SYN is dropped and retried a
second later, which a burst of 1,000 connections from other processes would cost a client."""
MAX_SESSIONS_PER_TOKEN = 16
KEEP_ALIVE_S = 120.0
"""An idle keep-alive connection is closed after this long."""
SESSION_IDLE_S = 3600.0
"""A session with no request for this long (and no open stream) is ended when a new one opens."""


def _modern(message: Any) -> bool:
    """A request or notification in the 2026-07-28 era (its params carry the envelope)."""
    return (
        isinstance(message, dict)
        and message.get("method") != "initialize"
        and modern_era.has_envelope(message.get("params"))
    )


class HttpEndpoint:
    """Serves ``/mcp`` on one loopback address."""

    def __init__(
        self,
        host: str,
        port: int,
        new_session: SessionFactory,
        identities: Callable[[], Mapping[str, Identity]],
        door: HttpDoor,
    ) -> None:
        self.host, self.port = host, port
        self._new_session = new_session
        self._identities = identities
        self.door = door
        self.sessions: dict[str, HttpSession] = {}
        self._modern: dict[str, HttpSession] = {}
        """Each token's 2026-07-28 session (that era has no session ids; its state is the token's)."""
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._hosts = loopback_hosts(host, port)
        self._origins = {f"http://{name}" for name in self._hosts}

    async def start(self) -> None:
        """Listen (OSError if the address is taken)."""
        self._server = await asyncio.start_server(
            self._connected, self.host, self.port, limit=MAX_HEAD, backlog=BACKLOG
        )

    async def close(self) -> None:
        """Stop listening, end every session and connection."""
        if self._server is not None:
            self._server.close()
        self.door.close()
        for session in list(self.sessions.values()):
            session.end("the HTTP endpoint stopped")
        self.sessions.clear()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    # ---------------------------------------------------------------- connections

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        origin: PeerOrigin | None = None
        try:
            admitted = await self.door.admit(writer)
            if isinstance(admitted, str):
                await respond_refusal(writer, HttpRefusal(503, admitted, {"Retry-After": "1"}), close=True)
                return
            origin = admitted
            await self._converse(origin, reader, writer)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:  # the endpoint stopped: the connection's end, not an error (3.11's
            return  # asyncio would print a traceback for a handler task that ends cancelled)
        except Exception as exc:  # whatever the network sends: one line, never a traceback
            self.door.refused(
                "internal", f"HTTP endpoint: a connection ended on an error: {type(exc).__name__}: {exc}"
            )
        finally:
            self._connections.discard(task)
            if origin is not None:
                self.door.release(origin)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _converse(
        self, origin: PeerOrigin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Requests until the connection ends. Until one presents a token its peer may use, every
        request head must arrive within ``HEAD_TIMEOUT_S`` of the connection or the previous answer,
        and a refusal closes the connection."""
        trusted = False
        while True:
            idle = KEEP_ALIVE_S if trusted else None
            try:
                request = await read_request(reader, HEAD_TIMEOUT_S, idle)
            except HttpRefusal as refusal:
                await respond_refusal(writer, refusal, close=True)
                return
            if request is None:
                return
            try:
                self._check(request)
                token = self._token(request)
                self.door.check_token(origin, token)
            except HttpRefusal as refusal:
                await respond_refusal(writer, refusal, close=not trusted)
                if not trusted:
                    return
                continue
            trusted = True
            keep = await self._serve(request, token, reader, writer)
            if not keep or request.headers.get("connection", "").lower() == "close":
                return

    async def _serve(
        self, request: Request, token: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request whose token its peer may use; False when the connection must close."""
        try:
            if request.method == "POST":
                return await self._post(request, token, reader, writer)
            session = self._session(request, token)
            if request.method == "GET":
                return await self._get(request, session, reader, writer)
            session.end("the client ended the session (DELETE)")
            self.sessions.pop(session.id, None)
            await respond(writer, 200, b"", {})
            return True
        except HttpRefusal as refusal:
            await respond_refusal(writer, refusal)
            return True

    def _check(self, request: Request) -> None:
        if request.path.split("?", 1)[0] != PATH:
            raise HttpRefusal(404, f"not found: the endpoint is {PATH}")
        host = request.headers.get("host", "")
        if host not in self._hosts:
            raise HttpRefusal(421, f"Host {host!r} is not this loopback endpoint (DNS rebinding protection)")
        origin = request.headers.get("origin")
        if origin is not None and origin not in self._origins:
            raise HttpRefusal(
                403, f"Origin {origin!r} is not allowed (only this endpoint's own loopback origin)"
            )
        if request.method not in ("POST", "GET", "DELETE"):
            raise HttpRefusal(405, f"method {request.method} is not allowed", {"Allow": "POST, GET, DELETE"})
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_VERSIONS + modern_era.MODERN_VERSIONS:
            raise HttpRefusal(400, f"unsupported MCP-Protocol-Version {version!r}")

    def _token(self, request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        challenge = {"WWW-Authenticate": 'Bearer realm="harness"'}
        if scheme.lower() != "bearer" or not token.strip():
            raise HttpRefusal(401, "send Authorization: Bearer <the harness's HARNESS_MCP_TOKEN>", challenge)
        token = token.strip()
        if token not in self._identities():
            for session in [s for s in self.sessions.values() if s.token == token]:
                session.end("its token is no longer valid")
                self.sessions.pop(session.id, None)
            raise HttpRefusal(401, "the token is not a running harness's", challenge)
        return token

    def _prune(self) -> None:
        """End sessions whose harness exited (their token is gone) or that sat idle too long."""
        identities = self._identities()
        stale = time.monotonic() - SESSION_IDLE_S
        for session in list(self.sessions.values()):
            idle = session.last_used < stale and session.standalone is None and not session.busy
            if session.token not in identities or idle:
                session.end("its harness exited" if session.token not in identities else "idle")
                del self.sessions[session.id]

    def _session(self, request: Request, token: str) -> HttpSession:
        session_id = request.headers.get("mcp-session-id")
        if not session_id:
            raise HttpRefusal(400, "Mcp-Session-Id is missing: send initialize first, then its session id")
        session = self.sessions.get(session_id)
        if session is None:
            raise HttpRefusal(404, "no such session (it ended): initialize a new one")
        if not secrets.compare_digest(session.token, token):
            raise HttpRefusal(403, "this session was opened with another token")
        session.last_used = time.monotonic()
        return session

    # ---------------------------------------------------------------- methods

    async def _post(
        self, request: Request, token: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        if "application/json" not in request.headers.get("content-type", ""):
            raise HttpRefusal(415, "Content-Type must be application/json")
        accept = request.headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            raise HttpRefusal(406, "Accept must list application/json and text/event-stream")
        try:
            message = jsonrpc.parse(request.body)
        except jsonrpc.NotJSON as exc:
            body = jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"parse error: {exc.reason}")
            await respond(writer, 400, body, {"Content-Type": "application/json"})
            return True
        if not request.headers.get("mcp-session-id") and _modern(message):
            return await self._post_modern(request, token, message, reader, writer)
        messages = message if isinstance(message, list) else [message]
        opens = any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)
        if opens:
            if request.headers.get("mcp-session-id"):
                raise HttpRefusal(400, "initialize opens a new session: send it without Mcp-Session-Id")
            session = self._open(token)
        else:
            session = self._session(request, token)
        exchange = session.open_exchange(messages)
        answers_expected = bool(exchange.ids)
        session.current = exchange
        try:
            session.session.handle(message)
        finally:
            session.current = None
        headers = {"Mcp-Session-Id": session.id}
        if not answers_expected:
            session.close_exchange(exchange)
            refused = drain(exchange.lines)  # an invalid message is answered with a null id
            if refused:
                await respond(
                    writer, 400, refused[0].rstrip(b"\n"), {**headers, "Content-Type": "application/json"}
                )
            else:
                await respond(writer, 202, b"", headers)
            return True
        return await self._answer(session, exchange, isinstance(message, list), headers, reader, writer)

    def _open(self, token: str) -> HttpSession:
        """A new session for ``token``. At most MAX_SESSIONS_PER_TOKEN are open at once: past that the
        least recently used one that is idle (no request being answered, no GET stream, not the
        token's 2026-era session) is ended for it, as a client that reconnects without a DELETE
        expects; 429 when every one is busy."""
        self._prune()
        mine = [s for s in self.sessions.values() if s.token == token]
        if len(mine) >= MAX_SESSIONS_PER_TOKEN:
            modern = self._modern.get(token)
            idle = [s for s in mine if not s.busy and s.standalone is None and s is not modern]
            if not idle:
                detail = f"{MAX_SESSIONS_PER_TOKEN} sessions of this token are busy; end one"
                raise HttpRefusal(429, detail)
            oldest = min(idle, key=lambda s: s.last_used)
            oldest.end(f"replaced: its token opened more than {MAX_SESSIONS_PER_TOKEN} sessions")
            del self.sessions[oldest.id]
        session = HttpSession(token, self._new_session)
        self.sessions[session.id] = session
        return session

    async def _post_modern(
        self,
        request: Request,
        token: str,
        message: dict[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """A 2026-07-28 request: no session id; the token's one 2026-era session answers it (its
        input_required states and listen streams live there). A notification is acknowledged and
        dropped (this era has none from client to server over HTTP: closing a stream cancels)."""
        json_type = {"Content-Type": "application/json"}
        if "id" not in message:
            await respond(writer, 202, b"", {})
            return True
        session = self._modern.get(token)
        if session is None or self.sessions.get(session.id) is not session:
            session = self._modern[token] = self._open(token)
        mismatch = modern_era.header_mismatch(request.headers, message)
        mismatch = mismatch or param_headers.call_mismatch(request.headers, message, session.session.view)
        if mismatch is not None:
            body = jsonrpc.error(message["id"], modern_era.HEADER_MISMATCH, mismatch)
            await respond(writer, 400, body.rstrip(b"\n"), json_type)
            return True
        session.last_used = time.monotonic()
        exchange = session.open_exchange([message])
        session.current = exchange
        try:
            session.session.handle(message)
        finally:
            session.current = None
        kept = await self._answer(session, exchange, False, {}, reader, writer, modern=True)
        if not kept:  # the client closed the response stream: in this era that cancels the request
            for request_id in list(exchange.ids):
                cancel = {"requestId": request_id, "reason": "the client closed the response stream"}
                session.session.handle(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
                )
        return kept

    async def _answer(
        self,
        session: HttpSession,
        exchange: Exchange,
        batch: bool,
        headers: dict[str, str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        modern: bool = False,
    ) -> bool:
        """A POST's answer: one JSON body, or an SSE stream (``modern``: a JSON error gets the HTTP
        status the 2026-07-28 transport gives it)."""
        first: bytes | None = None
        if not exchange.tokens and not exchange.notified:
            # No progress token: one JSON body as soon as every answer is there (at once for
            # initialize, tools/list and refusals), unless something for the agent comes first (an
            # elicitation during the call): then a stream that starts with it.
            try:
                first = await next_line(exchange.lines, reader)
            except ClientGone:
                session.close_exchange(exchange)
                return False
            if not exchange.notified:
                try:
                    lines = [] if first is None else [first, *await answers(exchange.lines)]
                finally:
                    session.close_exchange(exchange)
                if not lines:  # the session ended first
                    return False
                body = lines[0].rstrip(b"\n") if not batch else json_array(lines)
                status = modern_era.http_status(body) if modern else 200
                await respond(writer, status, body, {**headers, "Content-Type": "application/json"})
                return True
        try:
            return await stream(writer, reader, exchange.lines, headers, first)
        finally:
            session.close_exchange(exchange)

    async def _get(
        self,
        request: Request,
        session: HttpSession,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        if "text/event-stream" not in request.headers.get("accept", ""):
            raise HttpRefusal(406, "Accept must list text/event-stream")
        if session.standalone is not None:
            raise HttpRefusal(409, "this session's GET stream is already open")
        session.standalone = asyncio.Queue()
        try:
            return await stream(writer, reader, session.standalone, {"Mcp-Session-Id": session.id})
        finally:
            session.standalone = None
