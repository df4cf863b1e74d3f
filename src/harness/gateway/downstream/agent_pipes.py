"""An agent's own stdin and stdout, handed over by its bridge (bridge protocol 2, ``SCM_RIGHTS``): the
daemon reads and writes them directly, so the bridge is out of the data path.

Only the daemon holds these descriptors once the bridge let go of its copies: if the daemon dies, the
kernel closes them and the agent reads EOF at once.
"""

from __future__ import annotations

import array
import asyncio
import os
import socket
from collections.abc import Callable

from harness.gateway.wire.outbox import OUTBOX

FD_COUNT = 2
"""stdin, then stdout."""


def received_fds(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One ``recvmsg`` on a non-blocking socket: the byte sent with the descriptors, and the
    descriptors (BlockingIOError when nothing is there yet), close-on-exec: a process the daemon
    starts later must not hold an agent's pipes (uvloop's spawn closes only close-on-exec ones)."""
    size = socket.CMSG_SPACE(FD_COUNT * array.array("i").itemsize)
    data, ancillary, _flags, _address = sock.recvmsg(1, size, getattr(socket, "MSG_CMSG_CLOEXEC", 0))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            got = array.array("i")
            got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
            fds.extend(got)
    for fd in fds:  # where MSG_CMSG_CLOEXEC is missing (spawning happens on this thread: no race)
        os.set_inheritable(fd, False)
    return data, fds


class _In(asyncio.Protocol):
    def __init__(self, received: Callable[[bytes], None], ended: Callable[[], None]) -> None:
        self._received = received
        self._ended = ended

    def data_received(self, data: bytes) -> None:
        with OUTBOX:
            self._received(data)

    def eof_received(self) -> bool | None:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()


class AgentPipes:
    """The agent's stdin (read) and stdout (written) as asyncio pipe transports."""

    def __init__(self) -> None:
        self._out: asyncio.WriteTransport | None = None
        self._in: asyncio.ReadTransport | None = None

    async def open_output(self, fd: int) -> None:
        """Take the agent's stdout (first: nothing may be answered before it is there)."""
        loop = asyncio.get_running_loop()
        self._out, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(fd, "wb", buffering=0))

    async def open_input(self, fd: int, received: Callable[[bytes], None], ended: Callable[[], None]) -> None:
        """Take the agent's stdin: ``received`` gets what it writes, ``ended`` its EOF (once)."""
        loop = asyncio.get_running_loop()
        self._in, _ = await loop.connect_read_pipe(
            lambda: _In(received, ended), os.fdopen(fd, "rb", buffering=0)
        )

    def send(self, data: bytes) -> None:
        """Write to the agent (dropped once its stdout is closed)."""
        out = self._out
        if out is not None and not out.is_closing():
            OUTBOX.write(out, data)

    def close(self) -> None:
        """Let go of both (what was written is still flushed to the agent)."""
        if self._in is not None:
            self._in.close()
        if self._out is not None:
            self._out.close()
