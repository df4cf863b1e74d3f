"""An in-memory control-socket connection: a fake transport and a Door that records what it was asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from harness.gateway.downstream.connection import BridgeConnection
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.evidence.recording import CallRecorder
from harness.rules.access import PeerOrigin
from harness.rules.exposure import EMPTY_VIEW, ToolView
from harness.rules.routing import UNATTRIBUTED, Identity


def plain_session(
    send: Callable[[bytes], None],
    events: list[Any],
    identity: Identity = UNATTRIBUTED,
    view: ToolView = EMPTY_VIEW,
    **more: Any,
) -> DownstreamSession:
    """A session with no upstream (and no tools unless ``view`` has some), recording its events into
    ``events``."""
    return DownstreamSession(
        identity=identity,
        view=view,
        links=lambda _name: None,
        recorder=CallRecorder(events.append, "redacted"),
        emit=events.append,
        send=send,
        **more,
    )


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = asyncio.Event()
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self._closing = True
        self.closed.set()

    def is_closing(self) -> bool:
        return self._closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.written.splitlines() if line.strip()]


class FakeDoor:
    def __init__(self, preamble_timeout: float = 5.0, refuse: str | None = None) -> None:
        self.preamble_timeout = preamble_timeout
        self._refuse = refuse
        self.sessions: list[DownstreamSession] = []
        self.messages: list[Any] = []
        self.requests: list[tuple[str, dict[str, Any], str | None]] = []
        self.refusals: list[tuple[str, str]] = []
        self.released = 0

    def admit(self, transport: asyncio.Transport) -> PeerOrigin | str:
        return self._refuse if self._refuse is not None else PeerOrigin("outside", 4242, 1000)

    def release(self, origin: PeerOrigin) -> None:
        self.released += 1

    def refused(self, reason: str, message: str) -> None:
        self.refusals.append((reason, message))

    def open_session(
        self, origin: PeerOrigin, token: str | None, send: Callable[[bytes], None], version: int, modern: bool
    ) -> DownstreamSession:
        session = plain_session(send, [], modern=modern)
        handle = session.handle

        def recording(message: Any) -> None:
            self.messages.append(message)
            handle(message)

        session.handle = recording  # type: ignore[method-assign]
        self.sessions.append(session)
        return session

    async def answer(self, origin: PeerOrigin, token: str | None, command: str, args: dict[str, Any]) -> Any:
        self.requests.append((command, args, token))
        return {"echo": command}


def connect(door: FakeDoor) -> tuple[BridgeConnection, FakeTransport]:
    """A connection accepted on the running loop."""
    connection = BridgeConnection(door)
    transport = FakeTransport()
    connection.connection_made(transport)
    return connection, transport


def run(coro: Any, timeout: float = 10.0) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await coro

    return asyncio.run(bounded())
