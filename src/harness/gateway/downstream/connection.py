"""The control socket's wire: bridge connections become MCP sessions; control requests get one JSON
answer.

Every connection opens with one preamble line (at most 4096 bytes, within 5 s), a JSON object with
``"harness_bridge": <version>``: ``{"harness_bridge": 1, "kind": "mcp", "token": "…"}`` for an MCP
session (the rest of the stream is newline-delimited JSON-RPC; with protocol 2 the daemon first
answers ``{"harness_fds": "send"}`` and then serves the agent's own pipes, which the bridge passes
over the socket, or ``{"harness_fds": "copy"}``: ``agent_pipes.py``), or ``{"harness_bridge": 1, "kind":
"control", "command": "list", "args": {}, "token": "…"}`` for one control request. A refused
connection gets one line ``{"harness_error": "<reason>"}`` and is closed. Who the peer is, what it may
do and how many connections it may hold are the :class:`Door`'s business (``control_socket.py``);
docs/control-socket.md describes the protocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, cast

from harness.gateway.downstream import eras
from harness.gateway.downstream.agent_pipes import FD_COUNT, AgentPipes, received_fds
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.outbox import OUTBOX
from harness.rules.access import PeerOrigin

log = logging.getLogger(__name__)

BRIDGE_PROTOCOL_VERSIONS = frozenset({1, 2})
"""1: the bridge copies bytes. 2: the daemon answers a first line, ``{"harness_fds": "send"}`` (the
bridge offered its stdin and stdout, and passes them next) or ``{"harness_fds": "copy"}``."""
PASSES_FDS = 2
FDS_TIMEOUT_S = 5.0
"""How long a bridge told to send its descriptors may take."""
MAX_PREAMBLE_BYTES = 4096
MAX_MESSAGE_BYTES = 16 << 20
KINDS = ("mcp", "control")

SessionFactory = Callable[[str | None, Callable[[bytes], None], int, bool], DownstreamSession]
"""(token, send, bridge protocol version, whether it is in the 2026-07-28 era) → a new session."""


class PreambleError(ValueError):
    """A preamble the daemon refuses; the message is sent to the peer as its ``harness_error``."""


@dataclass(frozen=True, slots=True)
class Preamble:
    """A valid preamble."""

    version: int
    kind: str
    token: str | None
    command: str = ""
    args: dict[str, Any] | None = None
    fds: bool = False
    """The bridge offers its stdin and stdout (protocol 2)."""


def parse_preamble(line: bytes) -> Preamble:
    """The preamble in ``line``, or :class:`PreambleError` saying what is wrong with it."""
    try:
        pre = json.loads(line)
    except (ValueError, RecursionError):
        raise PreambleError("the first line must be the bridge preamble (a JSON object)") from None
    if not isinstance(pre, dict) or "harness_bridge" not in pre:
        raise PreambleError('the first line must be the bridge preamble ({"harness_bridge": 1, ...})')
    version = pre["harness_bridge"]
    if type(version) is not int:  # 1.0 and true are not versions
        raise PreambleError(
            f"the preamble's harness_bridge must be an integer version, not {_short(version)}"
        )
    if version not in BRIDGE_PROTOCOL_VERSIONS:
        speaks = sorted(BRIDGE_PROTOCOL_VERSIONS)
        raise PreambleError(f"bridge protocol {version} is not supported (the daemon speaks {speaks})")
    kind = pre.get("kind", "mcp")
    if kind not in KINDS:
        raise PreambleError(f'the preamble\'s kind must be "mcp" or "control", not {_short(kind)}')
    token = pre.get("token")
    if token is not None and not isinstance(token, str):
        raise PreambleError(f"the preamble's token must be a string, not {_short(token)}")
    if kind == "mcp":
        fds = pre.get("fds", False)
        if not isinstance(fds, bool):
            raise PreambleError(f"the preamble's fds must be true or false, not {_short(fds)}")
        return Preamble(version, kind, token or None, fds=fds and version >= PASSES_FDS)
    command, args = pre.get("command"), pre.get("args", {})
    if not isinstance(command, str) or not command:
        raise PreambleError("a control preamble needs a command (a string)")
    if not isinstance(args, dict):
        raise PreambleError(f"a control preamble's args must be an object, not {_short(args)}")
    return Preamble(version, kind, token or None, command, args)


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Door(Protocol):
    """What a connection asks of the control socket it arrived on."""

    preamble_timeout: float

    def admit(self, transport: asyncio.Transport) -> PeerOrigin | str:
        """The peer's origin, counted against the caps; or why the connection is refused."""
        ...

    def release(self, origin: PeerOrigin) -> None:
        """The admitted connection ended."""
        ...

    def refused(self, reason: str, message: str) -> None:
        """Log a refusal (rate-limited per ``reason``)."""
        ...

    def open_session(
        self, origin: PeerOrigin, token: str | None, send: Callable[[bytes], None], version: int, modern: bool
    ) -> DownstreamSession:
        """A new MCP session for a peer presenting ``token``, in the era ``modern`` says."""
        ...

    async def answer(self, origin: PeerOrigin, token: str | None, command: str, args: dict[str, Any]) -> Any:
        """The result of one control request (raises with the reason when refused or failed)."""
        ...


class BridgeConnection(asyncio.Protocol):
    """One accepted connection on the control socket."""

    def __init__(self, door: Door) -> None:
        self._door = door
        self._origin: PeerOrigin | None = None
        self._pending = b""
        self._buffer: jsonrpc.LineBuffer | None = None
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self.session: DownstreamSession | None = None
        """The MCP session, opened by the first message in the era it opens (:func:`.eras.opens_modern`)."""
        self._opener: Callable[[bool], DownstreamSession] | None = None
        self._handle: Callable[[Any], None] | None = None
        self._control_task: asyncio.Task[None] | None = None
        self._pipes: AgentPipes | None = None
        """The agent's own stdin and stdout, once its bridge passed them (then the socket only tells
        that the bridge is still there)."""
        self._fd_socket: socket.socket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        self._transport = transport
        admitted = self._door.admit(transport)
        if isinstance(admitted, str):
            self._abort(admitted, None)  # the door logged it
            return
        self._origin = admitted
        self._deadline = asyncio.get_running_loop().call_later(
            self._door.preamble_timeout, self._preamble_late
        )

    def _send(self, data: bytes) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing():
            OUTBOX.write(transport, data)

    def data_received(self, data: bytes) -> None:
        if self._pipes is not None:
            return  # the agent speaks on its own pipes now; the bridge has nothing more to say
        with OUTBOX:
            if self._buffer is None:
                data = self._before_preamble(data)
                if self._buffer is None or not data:
                    return
            self._received(data)

    def _before_preamble(self, data: bytes) -> bytes:
        """Wait for the preamble line; the 4096-byte limit applies to it alone, never to what follows
        it in the same read. Returns the bytes after it."""
        if self._transport is None or self._origin is None:
            return b""
        data = self._pending + data
        end = data.find(b"\n", 0, MAX_PREAMBLE_BYTES + 1)
        if end < 0:
            if len(data) > MAX_PREAMBLE_BYTES:
                self._abort(f"a preamble longer than {MAX_PREAMBLE_BYTES} bytes", "preamble")
            else:
                self._pending = data
            return b""
        self._pending = b""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        try:
            preamble = parse_preamble(data[:end])
        except PreambleError as exc:
            self._abort(str(exc), "preamble")
            return b""
        self._start(preamble)
        return data[end + 1 :]

    def _start(self, pre: Preamble) -> None:
        origin = self._origin
        assert origin is not None
        if pre.kind == "control":
            self._buffer = jsonrpc.LineBuffer(MAX_PREAMBLE_BYTES)
            self._handle = lambda _m: None  # one request per connection; the rest is ignored
            self._control_task = asyncio.get_running_loop().create_task(
                self._answer_control(origin, pre.token, pre.command, pre.args or {})
            )
            return
        if pre.version >= PASSES_FDS:
            if pre.fds and self._expect_fds(pre):
                return
            self._send(b'{"harness_fds":"copy"}\n')
        self._await_session(partial(self._door.open_session, origin, pre.token, self._send, pre.version))

    def _await_session(self, opener: Callable[[bool], DownstreamSession]) -> None:
        """Read MCP messages; the first opens the session."""
        self._opener = opener
        self._buffer = jsonrpc.LineBuffer(MAX_MESSAGE_BYTES)
        self._handle = self._first_message

    def _first_message(self, message: Any) -> None:
        self._open_session(eras.opens_modern(message)).handle(message)

    def _open_session(self, modern: bool = False) -> DownstreamSession:
        """The session, opened now if it is not yet (by a line that is no message: the handshake era)."""
        if self.session is None:
            assert self._opener is not None
            self.session = self._opener(modern)
            self._handle = self.session.handle
        return self.session

    # ---------------------------------------------------------------- descriptor passing

    def _expect_fds(self, pre: Preamble) -> bool:
        """Ask the bridge for its stdin and stdout and wait for them on a handle of our own (the
        transport must not read the message: a plain read would drop the descriptors)."""
        transport = self._transport
        raw = transport.get_extra_info("socket") if transport is not None else None
        if transport is None or raw is None or not hasattr(socket, "SCM_RIGHTS"):
            return False
        transport.pause_reading()
        self._fd_socket = socket.socket(fileno=os.dup(raw.fileno()))
        self._fd_socket.setblocking(False)
        transport.write(b'{"harness_fds":"send"}\n')
        loop = asyncio.get_running_loop()
        loop.add_reader(self._fd_socket.fileno(), self._fds_arrived, pre)
        self._deadline = loop.call_later(FDS_TIMEOUT_S, self._fds_late)
        return True

    def _fds_arrived(self, pre: Preamble) -> None:
        sock = self._fd_socket
        assert sock is not None
        try:
            data, fds = received_fds(sock)
        except BlockingIOError:
            return
        except OSError:
            data, fds = b"", []
        self._drop_fd_socket()
        if len(fds) != FD_COUNT or not data:
            for fd in fds:
                os.close(fd)
            self._abort(f"the bridge sent {len(fds)} descriptors, not its stdin and stdout", "descriptors")
            return
        task = asyncio.ensure_future(self._take_pipes(pre, fds[0], fds[1]))
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    def _fds_late(self) -> None:
        self._deadline = None
        if self._fd_socket is not None:
            self._drop_fd_socket()
            self._abort(f"no descriptors within {FDS_TIMEOUT_S:g}s", "descriptors")

    def _drop_fd_socket(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        sock, self._fd_socket = self._fd_socket, None
        if sock is not None:
            asyncio.get_running_loop().remove_reader(sock.fileno())
            sock.close()

    async def _take_pipes(self, pre: Preamble, stdin: int, stdout: int) -> None:
        """Serve the session on the agent's own pipes; the socket stays open only to learn that the
        bridge is gone (its end ends the session) and to tell it the session's end."""
        origin, pipes = self._origin, AgentPipes()
        try:
            await pipes.open_output(stdout)
        except (OSError, ValueError) as exc:
            os.close(stdin)
            self._abort(f"the agent's stdout cannot be written: {exc}", "descriptors")
            return
        if self._transport is None or origin is None:  # the bridge went away meanwhile
            pipes.close()
            os.close(stdin)
            return
        self._pipes = pipes
        self._await_session(partial(self._door.open_session, origin, pre.token, pipes.send, pre.version))
        try:
            await pipes.open_input(stdin, self._received, self._agent_ended)
        except (OSError, ValueError) as exc:
            self._abort(f"the agent's stdin cannot be read: {exc}", "descriptors")
            return
        if self._transport is not None:
            self._transport.resume_reading()

    def _agent_ended(self) -> None:
        """The agent closed its stdin: the session is over; the bridge exits 0."""
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.write(b'{"harness_exit":0}\n')
            transport.close()
        self._end_pipes()

    def _end_pipes(self) -> None:
        if self.session is not None:
            self.session.close("disconnected")
        if self._pipes is not None:
            self._pipes.close()

    def _received(self, data: bytes) -> None:
        buffer = self._buffer
        assert buffer is not None and self._handle is not None
        parse = jsonrpc.parse
        for line in buffer.feed(data):
            if line is None:  # past the limit: the session answers and goes on; a control request ends
                if self._opener is None:
                    self._abort(buffer.too_long(), "too long")
                    return
                self._open_session().refuse_oversized(buffer.too_long())
                continue
            if not line.strip():  # blank and whitespace-only lines are not messages
                continue
            try:
                message = parse(line)
            except jsonrpc.NotJSON as exc:
                if self._opener is not None:
                    self._open_session().refuse_unparsable(line, exc.reason)
                else:
                    self._send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"parse error: {exc.reason}"))
                continue
            try:
                self._handle(message)
            except Exception:  # a bug must cost one answer, never the connection or the daemon
                log.exception("error handling a message")
                self._send(jsonrpc.error(None, jsonrpc.INTERNAL_ERROR, "internal error in the gateway"))

    async def _answer_control(
        self, origin: PeerOrigin, token: str | None, command: str, args: dict[str, Any]
    ) -> None:
        try:
            answer = {"ok": True, "result": await self._door.answer(origin, token, command, args)}
        except Exception as exc:
            answer = {"ok": False, "error": str(exc)}
        self._send(json.dumps(answer).encode() + b"\n")
        if self._transport is not None:
            self._transport.close()

    def _preamble_late(self) -> None:
        self._deadline = None
        if self._buffer is None:
            timeout = self._door.preamble_timeout
            self._abort(f"no preamble line within {timeout:g}s", "preamble timeout")

    def _abort(self, reason: str, log_as: str | None) -> None:
        """Send the refusal line and close (``log_as``: the rate-limited log's reason, None: logged)."""
        if log_as is not None:
            who = self._origin.describe() if self._origin is not None else "a peer"
            self._door.refused(log_as, f"closing a control-socket connection from {who}: {reason}")
        transport = self._transport
        if transport is not None:
            transport.write(json.dumps({"harness_error": reason}).encode() + b"\n")
            transport.close()
            self._transport = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._fd_socket is not None:
            self._drop_fd_socket()
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._end_pipes()
        if self._origin is not None:
            self._door.release(self._origin)
            self._origin = None

    def eof_received(self) -> bool | None:
        return False
