"""How a link reaches its upstream: a supervised stdio child, or one Streamable HTTP session
(``http_client.py``).

A transport delivers each incoming message, parsed once, to ``on_message`` and reports the end of
the connection once to ``on_closed(returncode, reason)``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from harness.config import UpstreamConfig, resolve_upstream_env
from harness.gateway.processes import BoundedLog, minimal_env, signal_group, stop_group
from harness.gateway.upstream.delivery import OnClosed, OnMessage
from harness.gateway.upstream.http_client import HttpUpstream
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.outbox import OUTBOX

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 << 20
"""The longest message accepted from a stdio upstream; past it the upstream is stopped."""

STDERR_TAIL_BYTES = 2048
"""How much of an upstream's last stderr output is kept for its exit reason."""

EXIT_DRAIN_S = 0.1
"""After an upstream exits, how long its pipes may take to drain before the exit is reported."""


def exit_reason(code: int | None, stderr_tail: bytes) -> str:
    """``exited with code 3: <last stderr lines>`` (at most three lines, 300 characters)."""
    if code is None:
        head = "exited"
    elif code < 0:
        head = f"killed by signal {-code}"
    else:
        head = f"exited with code {code}"
    lines = [ln.strip() for ln in stderr_tail.decode(errors="replace").splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return f"{head}: {tail}"[:300] if tail else head


class Transport(Protocol):
    """What a link needs of a connection to its upstream."""

    pid: int
    garbled: str
    """Why the last message that was not JSON-RPC was refused ("" if none was): a request that got
    no answer names it rather than a timeout."""

    async def open(self) -> None:
        """Connect (spawn); raise on failure."""
        ...

    def send(self, message: dict[str, Any]) -> None:
        """Send one message (dropped if the connection is gone)."""
        ...

    def abort(self) -> None:
        """Drop the connection at once (protocol violation, failed start)."""
        ...

    async def close(self) -> None:
        """Close for good, politely first."""
        ...


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, child: StdioChild) -> None:
        self.child = child
        self.exited = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Before ``subprocess_exec`` returns: a child that exits at once is still reported.
        self.child.attached(cast(asyncio.SubprocessTransport, transport))  # uvloop's: not asyncio's class

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            with OUTBOX:
                self.child.stdout_received(data)
        else:
            self.child.stderr_received(data)

    def process_exited(self) -> None:
        self.exited.set()
        self.child.process_exited()

    def connection_lost(self, exc: Exception | None) -> None:
        self.child.report_exit()


class _DirectStdout(asyncio.Protocol):
    """The child's stdout pipe's protocol: data straight to the child, not through
    ``SubprocessProtocol.pipe_data_received`` (asyncio's subprocess transport schedules each chunk
    with ``call_soon``: one more loop turn per answer). The pipe's end still goes to asyncio's own
    protocol, so the transport learns of it and reports the exit as before."""

    def __init__(self, original: asyncio.BaseProtocol, child: StdioChild) -> None:
        self._original = original
        self._child = child

    def data_received(self, data: bytes) -> None:
        with OUTBOX:
            self._child.stdout_received(data)

    def eof_received(self) -> bool | None:
        if isinstance(self._original, asyncio.Protocol):
            return self._original.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._original.connection_lost(exc)


class StdioChild:
    """An upstream process in its own process group, with the allowlisted environment plus its ``env``."""

    def __init__(
        self, config: UpstreamConfig, cwd: Path, log: BoundedLog, on_message: OnMessage, on_closed: OnClosed
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.log = log
        self.pid = 0
        self.garbled = ""
        self._on_message = on_message
        self._on_closed = on_closed
        self._lines = jsonrpc.LineBuffer(MAX_LINE_BYTES)
        self._transport: asyncio.SubprocessTransport | None = None
        self._protocol: _ChildProtocol | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._stderr_tail = b""
        self._exit_code: int | None = None
        self._exit_report: asyncio.TimerHandle | None = None
        self._reported = False

    async def open(self) -> None:
        """Spawn the child (no PTY, new session, stdin/stdout/stderr pipes)."""
        argv = self.config.argv
        assert argv is not None
        env = minimal_env(resolve_upstream_env(self.config))
        _transport, protocol = await asyncio.get_running_loop().subprocess_exec(
            lambda: _ChildProtocol(self),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=self.cwd,
            start_new_session=True,
        )
        self._protocol = protocol

    def attached(self, transport: asyncio.SubprocessTransport) -> None:
        """The child exists: keep its pid and stdin (called before ``subprocess_exec`` returns)."""
        self._transport = transport
        self._stdin = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
        stdout = transport.get_pipe_transport(1)
        if stdout is not None:
            # Called from the first loop turn after the pipes connected, before anything they read
            # meanwhile is delivered (asyncio and uvloop queue it behind this); the child has been sent
            # nothing yet, so it has nothing to answer that could overtake it.
            stdout.set_protocol(_DirectStdout(stdout.get_protocol(), self))
        self.pid = transport.get_pid()

    def send(self, message: dict[str, Any]) -> None:
        """Write one message line to the child's stdin."""
        stdin = self._stdin
        if stdin is not None and not stdin.is_closing():
            OUTBOX.write(stdin, jsonrpc.encode_ascii(message))

    def stdout_received(self, data: bytes) -> None:
        """Parse each complete line once and hand it on; garbage is logged and skipped."""
        for line in self._lines.feed(data):
            if line is None:
                reason = self._lines.too_long()
                self.log.write(f"[harness] protocol violation: {reason}; stopping the upstream\n".encode())
                self.abort()
                return
            if not line.strip():
                continue
            try:
                message = jsonrpc.parse(line)
            except ValueError as exc:
                self.log.write(b"[harness] not JSON on stdout: " + line[:200] + b"\n")
                self._refused(line, str(exc))
                continue
            if isinstance(message, dict):
                self._on_message(message)

    def _refused(self, line: bytes, why: str) -> None:
        """A line :func:`~harness.gateway.wire.jsonrpc.parse` refused: remembered, and when it
        answers a request (a result holding ``NaN``, say) that request fails now, saying why."""
        self.garbled = why
        answered, method = jsonrpc.lenient_id(line)
        if answered is not None and method is None:
            self._on_message(jsonrpc.garbled_answer(answered, why))

    def stderr_received(self, data: bytes) -> None:
        """Log the child's stderr, keeping its tail for the exit reason."""
        self.log.write(data)
        self._stderr_tail = (self._stderr_tail + data)[-STDERR_TAIL_BYTES:]

    def process_exited(self) -> None:
        """The child ended: report it once its pipes are drained (at most ``EXIT_DRAIN_S`` later)."""
        transport = self._transport
        if transport is None or self._exit_report is not None:
            return
        self._exit_code = transport.get_returncode()
        self._stdin = None
        self._exit_report = asyncio.get_running_loop().call_later(EXIT_DRAIN_S, self.report_exit)

    def report_exit(self) -> None:
        """Report the exit once, with its code and the last lines of stderr (scrubbed as its log is),
        and release the pipes."""
        if self._reported or self._exit_report is None:
            return
        self._reported = True
        self._exit_report.cancel()
        if self._transport is not None:
            self._transport.close()
        self._on_closed(self._exit_code, self.log.scrubbed(exit_reason(self._exit_code, self._stderr_tail)))

    def abort(self) -> None:
        """SIGKILL the child's process group."""
        if self._transport is not None and self._transport.get_returncode() is None and self.pid:
            signal_group(self.pid, signal.SIGKILL)

    async def close(self) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group (gone within 5 s)."""
        protocol = self._protocol
        if protocol is None or protocol.exited.is_set():
            return
        if self._stdin is not None:
            self._stdin.close()
        await stop_group(self.pid, protocol.exited)


Connect = Callable[[OnMessage, OnClosed], Transport]
"""Makes a (not yet opened) transport that delivers to ``on_message`` and reports to ``on_closed``."""


def connector(config: UpstreamConfig, cwd: Path, log: BoundedLog) -> Connect:
    """The transport an upstream table asks for: a stdio child for ``argv``, else an HTTP session."""

    def connect(on_message: OnMessage, on_closed: OnClosed) -> Transport:
        if config.argv is not None:
            return StdioChild(config, cwd, log, on_message, on_closed)
        return HttpUpstream(config, on_message, on_closed)

    return connect
