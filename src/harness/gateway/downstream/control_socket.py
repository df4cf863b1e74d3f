"""The control socket: who each connection is, what it may do, how many it may hold, and serving it.

Each accepted connection is attributed from its peer's credentials and process ancestry
(``peers.py``), counted against the caps (``limits.py``), and must send its preamble within the
deadline. A session's token is checked against its origin (``rules.access.session_token``); a
control request runs with the rights of its :class:`~harness.rules.access.Caller`. Refusals and
unattributed sessions are logged at most once per second per reason. docs/control-socket.md has
the model and the numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from harness.gateway.downstream.connection import BridgeConnection, SessionFactory
from harness.gateway.downstream.limits import ConnectionCounts, Limits, RateLimitedLog
from harness.gateway.downstream.peers import Attributor, peer_credentials
from harness.gateway.downstream.session import DownstreamSession
from harness.rules.access import Caller, Exposed, NotPermitted, PeerOrigin, control_caller, session_token
from harness.rules.routing import Identity

log = logging.getLogger("harness.daemon")

BACKLOG = 128
ControlAnswer = Callable[[str, dict[str, Any], Caller], Awaitable[Any]]
"""(command, args, caller) → the result; raises with the reason when refused or failed."""

ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"


class ControlSocket:
    """Admission, attribution and caps for the daemon's control socket (the connections' Door)."""

    def __init__(
        self,
        *,
        new_session: SessionFactory,
        on_session: Callable[[DownstreamSession], None],
        control: ControlAnswer,
        identities: Callable[[], Mapping[str, Identity]],
        harness_pids: Callable[[], Mapping[int, str]],
        exposed: Exposed = lambda _identity: frozenset(),
        limits: Limits | None = None,
        attributor: Attributor | None = None,
        logger: logging.Logger = log,
    ) -> None:
        self._new_session = new_session
        self._on_session = on_session
        self._control = control
        self._identities = identities
        self._exposed = exposed
        self.limits = limits or Limits.for_this_process()
        self.preamble_timeout = self.limits.preamble_timeout
        self.counts = ConnectionCounts(self.limits)
        self._attributor = attributor or Attributor(harness_pids)
        self._log = RateLimitedLog(logger)
        self._uid = os.getuid()
        self._previous_handler: Any = None

    # ---------------------------------------------------------------- the Door

    def admit(self, transport: asyncio.Transport) -> PeerOrigin | str:
        """The peer's origin, counted; or why the connection is refused (logged, rate-limited)."""
        sock = transport.get_extra_info("socket")
        creds = peer_credentials(sock) if sock is not None else None
        early = self.counts.refuse_early(creds[0] if creds else 0)
        if early is not None:
            self.refused("full", f"refusing a control-socket connection: {early}")
            return early
        origin = self._attributor.origin(creds)
        if creds is not None and creds[1] not in (self._uid, 0):
            why = f"uid {creds[1]} may not use this daemon's control socket"
            self.refused("uid", f"refusing a control-socket connection from {origin.describe()}: {why}")
            return why
        refusal = self.counts.acquire(origin)
        if refusal is not None:
            self.refused("full", f"refusing a control-socket connection from {origin.describe()}: {refusal}")
            return refusal
        return origin

    def release(self, origin: PeerOrigin) -> None:
        """An admitted connection ended."""
        self.counts.release(origin)

    def refused(self, reason: str, message: str) -> None:
        """Log a refusal, at most once per second per ``reason``."""
        self._log.note(reason, message)

    def open_session(
        self,
        origin: PeerOrigin,
        token: str | None,
        send: Callable[[bytes], None],
        version: int,
        modern: bool,
    ) -> DownstreamSession:
        """A session with the token its origin may use, in the era ``modern`` says; an unattributed
        one is logged (rate-limited)."""
        identities = self._identities()
        usable = session_token(origin, token, identities)
        session = self._new_session(usable, send, version, modern)
        if session.identity.harness is None:
            if token is None:
                reason, why = "no token", "it presented no token"
            elif usable is None:
                reason, why = "foreign token", "its process may not present the token it gave"
            else:
                reason, why = (
                    "unknown token",
                    "its token is no running harness's (wrong, or its harness exited)",
                )
            self._log.note(
                f"session: {reason}",
                f"session {session.session_id} without a valid token (unattributed, read-only): {why}; "
                f"peer {origin.describe()}",
                logging.INFO,
            )
        self._on_session(session)
        return session

    async def answer(self, origin: PeerOrigin, token: str | None, command: str, args: dict[str, Any]) -> Any:
        """Run one control request with its caller's rights."""
        caller = control_caller(origin, token, self._identities(), self._exposed)
        try:
            return await self._control(command, args, caller)
        except NotPermitted as exc:
            self._log.note("not permitted", f"refused control request {command!r}: {exc}")
            raise

    # ---------------------------------------------------------------- serving

    def connection(self) -> BridgeConnection:
        """A protocol for one accepted connection."""
        return BridgeConnection(self)

    async def serve(self, path: Path) -> asyncio.AbstractServer:
        """Listen at ``path`` (mode 0600)."""
        loop = asyncio.get_running_loop()
        old = os.umask(0o177)
        try:
            backlog = max(16, min(BACKLOG, self.limits.total // 2))  # accepts in flight stay few
            server = await loop.create_unix_server(self.connection, str(path), backlog=backlog)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._loop_exception)
        return _Served(server, self._closed)

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Out-of-descriptor accept errors become one rate-limited line, never a traceback flood."""
        message = str(context.get("message", ""))
        if message.startswith(ACCEPT_OUT_OF_RESOURCES):
            exc = context.get("exception")
            self._log.note(
                "accept",
                f"the control socket cannot accept: {exc or message}; pausing accepts for a second "
                f"({self.counts.total} connections open)",
            )
            return
        if self._previous_handler is not None:
            self._previous_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    def _closed(self) -> None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().set_exception_handler(self._previous_handler)


class _Served(asyncio.AbstractServer):
    """The listening server, undoing what :meth:`ControlSocket.serve` set up when closed."""

    def __init__(self, server: asyncio.AbstractServer, on_close: Callable[[], None]) -> None:
        self._server = server
        self._on_close = on_close

    def close(self) -> None:
        self._server.close()
        self._on_close()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._server.get_loop()

    def is_serving(self) -> bool:
        return self._server.is_serving()

    async def start_serving(self) -> None:
        await self._server.start_serving()

    async def serve_forever(self) -> None:
        await self._server.serve_forever()

    async def wait_closed(self) -> None:
        await self._server.wait_closed()
