"""A stdio upstream link: one supervised child, one MCP client session, many multiplexed callers.

The link owns the upstream's request-id allocator and its table of requests in flight (upstream id →
caller, downstream id, progress token, deadline). Messages are parsed once and forwarded as received,
with ids, progress tokens and tool names rewritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from harness import __version__
from harness.config import UpstreamConfig, resolve_upstream_env
from harness.events import Event, ToolCatalogFetched, UpstreamExited, UpstreamStarted
from harness.gateway import jsonrpc
from harness.gateway.calls import CallInflight
from harness.gateway.processes import BoundedLog, minimal_env, stop_group
from harness.metrics import UPSTREAM_RESTARTS, UPSTREAM_UP

log = logging.getLogger(__name__)

UPSTREAM_PROTOCOL_VERSION = "2025-11-25"
"""Upstream sessions are pinned to the handshake era (design.md §2)."""

MAX_LINE_BYTES = 64 << 20
INIT_TIMEOUT_S = 30.0


class UpstreamState(StrEnum):
    """Where an upstream link is in its life."""

    STARTING = "starting"
    UP = "up"
    DOWN = "down"
    STOPPED = "stopped"


class _Request:
    """An internal request of the link (initialize, tools/list) awaiting its reply."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future[dict[str, Any]]) -> None:
        self.future = future


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, link: UpstreamLink) -> None:
        self.link = link
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.link.stdout_received(data)
        else:
            self.link.stderr_received(data)

    def process_exited(self) -> None:
        self.exited.set()
        self.link.child_exited(self)


class UpstreamLink:
    """One upstream server: spawn, initialize, list tools, forward calls, restart on exit."""

    def __init__(
        self,
        config: UpstreamConfig,
        *,
        cwd: Path,
        log_dir: Path,
        emit: Callable[[Event], None],
    ) -> None:
        self.config = config
        self.name = config.name
        self.state = UpstreamState.STARTING
        self.protocol_version = ""
        self.tools: list[dict[str, Any]] = []
        self.pid = 0
        self._cwd = cwd
        self._emit = emit
        self._stderr = BoundedLog(log_dir / f"{config.name}.log")
        self._stdout = jsonrpc.LineBuffer(MAX_LINE_BYTES)
        self._next_id = 1
        self._pending: dict[int, CallInflight | _Request] = {}
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._protocol: _ChildProtocol | None = None
        self._restart: asyncio.TimerHandle | None = None
        self._stopping = False
        self.restarts = 0
        self.first_attempt = asyncio.Event()

    # ---------------------------------------------------------------- life cycle

    async def start(self) -> None:
        """Spawn the child, run the handshake and fetch the tool catalogue; failures mark it down."""
        self.state = UpstreamState.STARTING
        try:
            await self._spawn()
            await self._handshake()
        except Exception as exc:  # any failure leaves the link down, never the daemon
            log.warning("upstream %s: start failed: %s", self.name, exc)
            self._stderr.write(f"[harness] start failed: {exc}\n".encode())
            self._kill_child()
        finally:
            self.first_attempt.set()

    async def _spawn(self) -> None:
        argv = self.config.argv
        assert argv is not None
        env = minimal_env(resolve_upstream_env(self.config))
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _ChildProtocol(self),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=self._cwd,
            start_new_session=True,
        )
        self._transport, self._protocol = transport, protocol
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self._stdin = stdin
        self._stdout = jsonrpc.LineBuffer(MAX_LINE_BYTES)
        self.pid = transport.get_pid()
        self._emit(UpstreamStarted(ts=time.time(), upstream=self.name, pid=self.pid, command=argv[0]))

    async def _handshake(self) -> None:
        init = await self.request(
            "initialize",
            {
                "protocolVersion": UPSTREAM_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "harness-gateway", "version": __version__},
            },
        )
        self.protocol_version = str(init.get("protocolVersion", ""))
        self.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self.refresh_tools(init)

    async def refresh_tools(self, init: dict[str, Any] | None = None) -> None:
        """Fetch every page of ``tools/list``, then publish the catalogue and mark the link up."""
        tools: list[dict[str, Any]] = []
        cursor: Any = None
        for _page in range(1000):
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(t for t in page.get("tools", ()) if isinstance(t, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        self.tools = tools
        info = (init or {}).get("serverInfo") or {}
        self._emit(
            ToolCatalogFetched(
                ts=time.time(),
                upstream=self.name,
                protocol_version=self.protocol_version,
                server_name=str(info.get("name", "")),
                server_version=str(info.get("version", "")),
                tools_json=json.dumps(tools, ensure_ascii=False, separators=(",", ":")),
                tool_count=len(tools),
            )
        )
        self.state = UpstreamState.UP
        UPSTREAM_UP.labels(self.name).set(1)

    async def request(
        self, method: str, params: dict[str, Any], timeout: float = INIT_TIMEOUT_S
    ) -> dict[str, Any]:
        """Send an internal request and wait for its result (RuntimeError on an error reply)."""
        uid = self._allocate_id()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[uid] = _Request(future)
        self.send_message({"jsonrpc": "2.0", "id": uid, "method": method, "params": params})
        try:
            reply = await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(uid, None)
        if "error" in reply:
            raise RuntimeError(f"{method} failed: {reply['error']}")
        result = reply.get("result")
        if not isinstance(result, dict):
            raise RuntimeError(f"{method}: result is not an object")  # noqa: TRY004 - a protocol fault
        return result

    async def stop(self) -> None:
        """Stop for good: close stdin, then SIGTERM and SIGKILL the process group as needed."""
        self._stopping = True
        if self._restart is not None:
            self._restart.cancel()
        protocol, transport = self._protocol, self._transport
        if protocol is not None and transport is not None and not protocol.exited.is_set():
            if self._stdin is not None:
                self._stdin.close()
            await stop_group(self.pid, protocol.exited)
        self.state = UpstreamState.STOPPED
        self._stderr.close()

    def _kill_child(self) -> None:
        if self._transport is not None and self._protocol is not None and not self._protocol.exited.is_set():
            with contextlib.suppress(ProcessLookupError):
                self._transport.kill()

    def child_exited(self, protocol: _ChildProtocol) -> None:
        """The child is gone: fail what was in flight, record it, schedule a restart."""
        if protocol is not self._protocol or self._transport is None:
            return
        returncode = self._transport.get_returncode()
        self._transport.close()
        self.state = UpstreamState.STOPPED if self._stopping else UpstreamState.DOWN
        UPSTREAM_UP.labels(self.name).set(0)
        pending, self._pending = self._pending, {}
        for item in pending.values():
            if isinstance(item, CallInflight):
                item.failed("upstream_error", f"upstream {self.name!r} exited during the call")
            elif not item.future.done():
                item.future.set_exception(ConnectionError(f"upstream {self.name!r} exited"))
        reason = "stopped" if self._stopping else "exited"
        self._emit(
            UpstreamExited(
                ts=time.time(), upstream=self.name, pid=self.pid, returncode=returncode, reason=reason
            )
        )
        if not self._stopping:
            delay = self.config.restart_delay
            self._restart = asyncio.get_running_loop().call_later(delay, self._restart_now)

    def _restart_now(self) -> None:
        self.restarts += 1
        UPSTREAM_RESTARTS.labels(self.name).inc()
        task = asyncio.get_running_loop().create_task(self.start())
        task.add_done_callback(lambda _t: None)

    # ---------------------------------------------------------------- wire

    def _allocate_id(self) -> int:
        uid = self._next_id
        self._next_id = uid + 1
        return uid

    def send_message(self, message: dict[str, Any]) -> None:
        """Write one message to the child's stdin (dropped if the child is gone)."""
        stdin = self._stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(jsonrpc.encode(message))

    def stderr_received(self, data: bytes) -> None:
        """Child stderr goes to its bounded log file."""
        self._stderr.write(data)

    def stdout_received(self, data: bytes) -> None:
        """Parse each complete line once and route it."""
        try:
            lines = self._stdout.feed(data)
        except ValueError as exc:
            self._stderr.write(f"[harness] protocol violation: {exc}; stopping the upstream\n".encode())
            self._kill_child()
            return
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._stderr.write(b"[harness] not JSON on stdout: " + line[:200] + b"\n")
                continue
            if isinstance(message, dict):
                self._route(message)

    def _route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            uid = message.get("id")
            item = self._pending.pop(uid, None) if type(uid) is int else None
            if isinstance(item, CallInflight):
                item.answered(message)
            elif item is not None and not item.future.done():
                item.future.set_result(message)
            return
        if "id" in message:
            self._answer_server_request(message)
        elif method == "notifications/progress":
            self._route_progress(message)
        elif method == "notifications/tools/list_changed" and self.state is UpstreamState.UP:
            task = asyncio.get_running_loop().create_task(self._refresh_quietly())
            task.add_done_callback(lambda _t: None)

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(Exception):
            await self.refresh_tools()

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        if message.get("method") == "ping":
            self.send_message({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return
        self.send_message(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {
                    "code": jsonrpc.METHOD_NOT_FOUND,
                    "message": "the gateway does not forward this request",
                },
            }
        )

    def _route_progress(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, dict):
            return
        item = self._pending.get(params.get("progressToken"))  # type: ignore[arg-type]
        if isinstance(item, CallInflight) and item.progress_token is not None:
            params["progressToken"] = item.progress_token
            item.session.send(jsonrpc.encode(message))

    # ---------------------------------------------------------------- calls

    def forward_call(self, call: CallInflight, message: dict[str, Any], params: dict[str, Any]) -> None:
        """Send a caller's ``tools/call`` upstream under this link's own id, with a deadline."""
        uid = call.upstream_id
        message["id"] = uid
        params["name"] = call.route.tool
        if call.progress_token is not None:
            params["_meta"] = {**params["_meta"], "progressToken": uid}
        self._pending[uid] = call
        call.timer = asyncio.get_running_loop().call_later(self.config.timeout, self._deadline_passed, uid)
        self.send_message(message)

    def new_call_id(self) -> int:
        """An upstream request id for a call about to be forwarded."""
        return self._allocate_id()

    def _deadline_passed(self, uid: int) -> None:
        item = self._pending.pop(uid, None)
        if isinstance(item, CallInflight):
            item.timer = None
            self._send_cancelled(uid, "timeout")
            item.failed("timeout", f"no answer from {self.name!r} within {self.config.timeout:g}s")

    def cancel_call(self, uid: int, reason: str) -> None:
        """The caller gave up: tell the upstream, drop the entry (a late reply goes nowhere)."""
        item = self._pending.pop(uid, None)
        if isinstance(item, CallInflight):
            self._send_cancelled(uid, reason)
            item.cancelled()

    def _send_cancelled(self, uid: int, reason: str) -> None:
        self.send_message(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": uid, "reason": reason},
            }
        )

    @property
    def in_flight(self) -> int:
        """Requests awaiting a reply."""
        return len(self._pending)
