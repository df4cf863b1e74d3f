"""Who may hold a connection to the loopback HTTP endpoint, and which token it may present.

Each accepted connection is identified once, off the event loop (``tcp_peers.py``: its process),
placed in the process tree like a control-socket peer (``peers.py``) and counted against the caps
(``limits.py``: per process, per harness tree, per uid other than the daemon's, in total). Every
request's token then passes the control socket's origin rule (``rules.access.session_token``): a
process in harness B's tree cannot present harness A's token. A connection whose peer cannot be
identified may present no token unless ``[mcp] listen_unidentified_peers = "allow"``. Refusals are
logged at most once per 10 s per reason. docs/control-socket.md has the model and the numbers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from harness.gateway.downstream.http_wire import HttpRefusal
from harness.gateway.downstream.limits import ConnectionCounts, Limits, RateLimitedLog, total_cap
from harness.gateway.downstream.peers import Attributor
from harness.gateway.downstream.tcp_peers import TcpPeers
from harness.rules.access import PeerOrigin, session_token
from harness.rules.routing import Identity

log = logging.getLogger("harness.daemon")

MAX_CONNECTIONS = 256
"""Connections at most, or a quarter of the descriptor limit if that is less."""
PER_UID = 32
"""Connections per uid other than the daemon's."""
LOG_INTERVAL_S = 10.0
"""At most one refusal line per reason this often: any local user can cause them."""


def http_limits() -> Limits:
    """The endpoint's caps, sized to this process's descriptor limit."""
    return Limits.sized(min(MAX_CONNECTIONS, total_cap()), per_uid=PER_UID, name="the HTTP endpoint")


class HttpDoor:
    """Admission, attribution and caps for the HTTP endpoint's connections."""

    def __init__(
        self,
        identities: Callable[[], Mapping[str, Identity]],
        harness_pids: Callable[[], Mapping[int, str]],
        *,
        allow_unidentified: bool = False,
        limits: Limits | None = None,
        peers: TcpPeers | None = None,
        logger: logging.Logger = log,
    ) -> None:
        self._identities = identities
        self._attributor = Attributor(harness_pids)
        self.allow_unidentified = allow_unidentified
        self.counts = ConnectionCounts(limits or http_limits())
        self._peers = peers or TcpPeers()
        self._log = RateLimitedLog(logger, LOG_INTERVAL_S)

    async def admit(self, writer: asyncio.StreamWriter) -> PeerOrigin | str:
        """The peer's origin, counted; or why the connection is refused (logged, rate-limited)."""
        early = self.counts.refuse_early(0)  # a full endpoint costs no lookup
        if early is None:
            client, server = writer.get_extra_info("peername"), writer.get_extra_info("sockname")
            creds = await self._peers.credentials(client, server) if client and server else None
            origin = self.origin(creds)
            early = self.counts.acquire(origin)
            if early is None:
                return origin
            self.refused("full", f"refusing an HTTP connection from {origin.describe()}: {early}")
        else:
            self.refused("full", f"refusing an HTTP connection: {early}")
        return early

    def origin(self, creds: tuple[int, int] | None) -> PeerOrigin:
        """Where the peer with ``creds`` (pid, uid) sits; one that cannot be placed is ``unknown``,
        or ``unverified`` (the token alone decides) where the operator allowed that."""
        origin = self._attributor.origin(creds)
        if origin.kind in ("unknown", "unverified"):
            if self.allow_unidentified:
                return PeerOrigin("unverified", origin.pid, origin.uid)
            return PeerOrigin("unknown", origin.pid, origin.uid)
        return origin

    def close(self) -> None:
        """The endpoint stopped."""
        self._peers.close()

    def release(self, origin: PeerOrigin) -> None:
        """An admitted connection ended."""
        self.counts.release(origin)

    def refused(self, reason: str, message: str) -> None:
        """Log a refusal, at most once per ``LOG_INTERVAL_S`` per ``reason``."""
        self._log.note(reason, message)

    def check_token(self, origin: PeerOrigin, token: str) -> None:
        """Raise 403 unless a peer from ``origin`` may present ``token`` (a running harness's)."""
        if session_token(origin, token, self._identities()) is not None:
            return
        if origin.kind == "harness":
            why = f"it may present only harness {origin.harness}'s own token"
        elif origin.kind == "daemon":
            why = "a process in the daemon's tree (an upstream) may present no harness's token"
        else:
            why = (
                "its process could not be identified, so it may present no token "
                '(the operator may set [mcp] listen_unidentified_peers = "allow")'
            )
        self.refused("token", f"refusing an HTTP request from {origin.describe()}: {why}")
        raise HttpRefusal(403, f"this connection is {origin.describe()}: {why}")
