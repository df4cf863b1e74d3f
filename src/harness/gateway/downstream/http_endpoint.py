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
an ``MCP-Protocol-Version`` no era serves   400 (``http_table.py``; a POST without a session id
                                            is a 2026-07-28 request: -32022)
no ``Mcp-Session-Id`` (not ``initialize``,  400
nor a 2026-07-28 request: ``http_posts.py``)
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
from collections.abc import Callable, Mapping
from typing import Any

from harness.gateway.downstream.http_door import HttpDoor
from harness.gateway.downstream.http_lines import ClientReader, Lines
from harness.gateway.downstream.http_posts import Posts
from harness.gateway.downstream.http_session import HttpSession, SessionFactory
from harness.gateway.downstream.http_table import SessionTable
from harness.gateway.downstream.http_wire import (
    HEAD_TIMEOUT_S,
    MAX_HEAD,
    HttpRefusal,
    Request,
    loopback_hosts,
    read_request,
    respond,
    respond_refusal,
    stream,
)
from harness.gateway.wire import jsonrpc
from harness.rules.access import PeerOrigin
from harness.rules.routing import Identity

log = logging.getLogger(__name__)

PATH = "/mcp"
BACKLOG = 1024
"""Connections the kernel queues before accept: past it a connect's SYN is dropped and retried a
second later, which a burst of 1,000 connections from other processes would cost a client."""
KEEP_ALIVE_S = 120.0
"""An idle keep-alive connection is closed after this long."""


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
        self._identities = identities
        self.door = door
        self.table = SessionTable(new_session, identities)
        self._posts = Posts(self.table)
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._hosts = loopback_hosts(host, port)
        self._origins = {f"http://{name}" for name in self._hosts}

    async def start(self) -> None:
        """Listen (OSError if the address is taken)."""
        loop = asyncio.get_running_loop()

        def connection() -> asyncio.StreamReaderProtocol:
            return asyncio.StreamReaderProtocol(ClientReader(MAX_HEAD, loop), self._connected)

        self._server = await loop.create_server(connection, self.host, self.port, backlog=BACKLOG)

    async def close(self) -> None:
        """Stop listening, end every session and connection."""
        if self._server is not None:
            self._server.close()
        self.door.close()
        self.table.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    # ---------------------------------------------------------------- connections

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None and isinstance(reader, ClientReader)
        self._connections.add(task)
        origin: PeerOrigin | None = None
        try:
            admitted = await self.door.admit(writer)
            if isinstance(admitted, str):
                await respond_refusal(writer, HttpRefusal(503, admitted, {"Retry-After": "1"}), close=True)
                return
            origin = admitted
            await self._converse(origin, reader, writer, task)
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
        self, origin: PeerOrigin, reader: ClientReader, writer: asyncio.StreamWriter, task: asyncio.Task[Any]
    ) -> None:
        """Requests until the connection ends (read by ``task``). Until one presents a token its peer
        may use, every request head must arrive within ``HEAD_TIMEOUT_S`` of the connection or the
        previous answer, and a refusal closes the connection."""
        trusted = False
        while True:
            idle = KEEP_ALIVE_S if trusted else None
            try:
                request = await read_request(reader, task, HEAD_TIMEOUT_S, idle)
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
        self, request: Request, token: str, reader: ClientReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request whose token its peer may use; False when the connection must close."""
        try:
            if request.method == "POST":
                return await self._post(request, token, reader, writer)
            session = self.table.find(request.headers, token)
            if request.method == "GET":
                return await self._get(request, session, reader, writer)
            self.table.end(session, "the client ended the session (DELETE)")
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

    def _token(self, request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        challenge = {"WWW-Authenticate": 'Bearer realm="harness"'}
        if scheme.lower() != "bearer" or not token.strip():
            raise HttpRefusal(401, "send Authorization: Bearer <the harness's HARNESS_MCP_TOKEN>", challenge)
        token = token.strip()
        if token not in self._identities():
            self.table.end_token(token)
            raise HttpRefusal(401, "the token is not a running harness's", challenge)
        return token

    # ---------------------------------------------------------------- methods

    async def _post(
        self, request: Request, token: str, reader: ClientReader, writer: asyncio.StreamWriter
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
        return await self._posts.post(request, token, message, (reader, writer))

    async def _get(
        self,
        request: Request,
        session: HttpSession,
        reader: ClientReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        if "text/event-stream" not in request.headers.get("accept", ""):
            raise HttpRefusal(406, "Accept must list text/event-stream")
        if session.standalone is not None:
            raise HttpRefusal(409, "this session's GET stream is already open")
        session.standalone = Lines()
        try:
            return await stream(writer, reader, session.standalone, {"Mcp-Session-Id": session.id})
        finally:
            session.standalone = None
