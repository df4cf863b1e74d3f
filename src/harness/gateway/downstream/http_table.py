"""The HTTP endpoint's sessions: opened for a token (``initialize``, or the token's one 2026-07-28
session), found by ``Mcp-Session-Id``, ended when their harness exits, they sit idle, or their token
opens too many."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping

from harness.gateway.downstream.eras import HANDSHAKE_VERSIONS
from harness.gateway.downstream.http_session import HttpSession, SessionFactory
from harness.gateway.downstream.http_wire import HttpRefusal
from harness.gateway.downstream.modern_era import MODERN_VERSIONS
from harness.rules.routing import Identity

MAX_SESSIONS_PER_TOKEN = 16
SESSION_IDLE_S = 3600.0
"""A session with no request for this long (and no open stream) is ended when a new one opens."""


class SessionTable:
    """The open HTTP sessions, by id, and each token's 2026-07-28 session."""

    def __init__(self, new_session: SessionFactory, identities: Callable[[], Mapping[str, Identity]]) -> None:
        self._new_session = new_session
        self._identities = identities
        self.sessions: dict[str, HttpSession] = {}
        self._modern: dict[str, HttpSession] = {}
        """Each token's 2026-07-28 session (that era has no session ids; its state is the token's)."""

    def find(self, headers: Mapping[str, str], token: str) -> HttpSession:
        """The handshake-era session a request's headers name (:class:`HttpRefusal` when it cannot be
        used, or they name a revision no era serves)."""
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_VERSIONS + MODERN_VERSIONS:
            raise HttpRefusal(400, f"unsupported MCP-Protocol-Version {version!r}")
        session_id = headers.get("mcp-session-id")
        if not session_id:
            raise HttpRefusal(400, "Mcp-Session-Id is missing: send initialize first, then its session id")
        session = self.sessions.get(session_id)
        if session is None:
            raise HttpRefusal(404, "no such session (it ended): initialize a new one")
        if not secrets.compare_digest(session.token, token):
            raise HttpRefusal(403, "this session was opened with another token")
        session.last_used = time.monotonic()
        return session

    def modern(self, token: str) -> HttpSession:
        """The token's 2026-07-28 session, opened at its first request."""
        session = self._modern.get(token)
        if session is None or self.sessions.get(session.id) is not session:
            session = self._modern[token] = self.open(token, modern=True)
        session.last_used = time.monotonic()
        return session

    def open(self, token: str, modern: bool = False) -> HttpSession:
        """A new session for ``token``. At most MAX_SESSIONS_PER_TOKEN are open at once: past that the
        least recently used one that is idle (no request being answered, no GET stream, not the
        token's 2026-era session) is ended for it, as a client that reconnects without a DELETE
        expects; 429 when every one is busy."""
        self._prune()
        mine = [s for s in self.sessions.values() if s.token == token]
        if len(mine) >= MAX_SESSIONS_PER_TOKEN:
            kept = self._modern.get(token)
            idle = [s for s in mine if not s.busy and s.standalone is None and s is not kept]
            if not idle:
                detail = f"{MAX_SESSIONS_PER_TOKEN} sessions of this token are busy; end one"
                raise HttpRefusal(429, detail)
            oldest = min(idle, key=lambda s: s.last_used)
            self.end(oldest, f"replaced: its token opened more than {MAX_SESSIONS_PER_TOKEN} sessions")
        session = HttpSession(token, self._new_session, modern)
        self.sessions[session.id] = session
        return session

    def _prune(self) -> None:
        """End sessions whose harness exited (their token is gone) or that sat idle too long."""
        identities = self._identities()
        stale = time.monotonic() - SESSION_IDLE_S
        for session in list(self.sessions.values()):
            idle = session.last_used < stale and session.standalone is None and not session.busy
            if session.token not in identities or idle:
                self.end(session, "its harness exited" if session.token not in identities else "idle")

    def end_token(self, token: str) -> None:
        """End every session of a token that is no longer valid."""
        for session in [s for s in self.sessions.values() if s.token == token]:
            self.end(session, "its token is no longer valid")

    def end(self, session: HttpSession, reason: str) -> None:
        """End one session and forget it."""
        session.end(reason)
        self.sessions.pop(session.id, None)

    def close(self) -> None:
        """End every session (the endpoint stopped)."""
        for session in list(self.sessions.values()):
            self.end(session, "the HTTP endpoint stopped")
