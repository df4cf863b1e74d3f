"""An upstream link: one connection (stdio child or HTTP session), many multiplexed callers.

The link owns the upstream's request-id allocator and its table of requests in flight (upstream id →
caller, downstream id, progress token, deadline). Messages are parsed once and forwarded as received,
with ids, progress tokens and tool names rewritten. Supervision decisions come from the upstream's
``UpstreamActor``; breaker state from its ``BreakerActor``, read here as a published snapshot.
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

import pykka

from harness import __version__
from harness.actors.breaker import (
    BreakerActor,
    BreakerState,
    CallFailed,
    CallSucceeded,
    ProbeAbandoned,
    ProbeStarted,
    admit,
)
from harness.actors.supervision import Decision
from harness.actors.upstream import Exited, Initialized, Restarted, Stopped, UpstreamActor
from harness.config import UpstreamConfig
from harness.events import (
    CircuitClosed,
    CircuitOpened,
    Event,
    ToolCatalogFetched,
    UpstreamExited,
    UpstreamStarted,
)
from harness.gateway import jsonrpc
from harness.gateway.actor_bridge import tell_then
from harness.gateway.calls import CallInflight
from harness.gateway.processes import BoundedLog
from harness.gateway.transports import HttpSession, StdioChild, Transport
from harness.metrics import CIRCUIT_OPEN, UPSTREAM_RESTARTS, UPSTREAM_UP

log = logging.getLogger(__name__)

UPSTREAM_PROTOCOL_VERSION = "2025-11-25"
"""Upstream sessions are pinned to the handshake era (design.md §2)."""

INIT_TIMEOUT_S = 30.0


class UpstreamState(StrEnum):
    """Where an upstream link is in its life."""

    STARTING = "starting"
    UP = "up"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


class _Request:
    """An internal request of the link (initialize, tools/list) awaiting its reply."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future[dict[str, Any]]) -> None:
        self.future = future


class UpstreamLink:
    """One upstream: connect, initialize, list tools, forward calls, restart under its policy."""

    def __init__(
        self,
        config: UpstreamConfig,
        *,
        cwd: Path,
        log_dir: Path,
        emit: Callable[[Event], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.name = config.name
        self.state = UpstreamState.STARTING
        self.protocol_version = ""
        self.tools: list[dict[str, Any]] = []
        self.pid = 0
        self.restarts = 0
        self.first_attempt = asyncio.Event()
        self.breaker_state = BreakerState()
        self._cwd = cwd
        self._emit = emit
        self._clock = clock
        self._log = BoundedLog(log_dir / f"{config.name}.log")
        self._next_id = 1
        self._pending: dict[int, CallInflight | _Request] = {}
        self._queued: dict[int, tuple[CallInflight, dict[str, Any], dict[str, Any]]] = {}
        self._active = 0
        self._probe_out = False
        self._transport: Transport | None = None
        self._restart: asyncio.TimerHandle | None = None
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.supervisor: pykka.ActorRef[Any] = UpstreamActor.start(config.name, config.restart_delay, emit)
        self.breaker: pykka.ActorRef[Any] = BreakerActor.start(
            config.name, config.breaker_failures, self._publish_breaker, self._breaker_moved
        )

    # ---------------------------------------------------------------- actors

    def _publish_breaker(self, state: BreakerState) -> None:
        """Called on the breaker's thread: a plain attribute swap the loop reads."""
        self.breaker_state = state

    def _breaker_moved(self, upstream: str, old: BreakerState, new: BreakerState) -> None:
        if new.status == "open" and old.status != "open":
            CIRCUIT_OPEN.labels(upstream).set(1)
            self._emit(
                CircuitOpened(
                    ts=time.time(),
                    upstream=upstream,
                    failures=new.failures,
                    cooldown_s=self.config.breaker_cooldown,
                )
            )
        elif new.status == "closed":
            CIRCUIT_OPEN.labels(upstream).set(0)
            self._emit(CircuitClosed(ts=time.time(), upstream=upstream))

    def _tell_then(self, actor: pykka.ActorRef[Any], message: Any, then: Callable[[Any], None]) -> None:
        """Continue on the loop once the actor has handled the message (its answer to ``then``)."""

        def continue_(value: Any, exc: BaseException | None) -> None:
            if exc is not None:
                log.error("upstream %s: actor failed on %r: %s", self.name, message, exc)
            then(value)

        tell_then(actor, message, continue_)

    def _spawn_task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---------------------------------------------------------------- life cycle

    async def start(self) -> None:
        """Connect, run the handshake and fetch the catalogue; a failure counts as an exit."""
        self.state = UpstreamState.STARTING
        transport: Transport
        if self.config.argv is not None:
            transport = StdioChild(self.config, self._cwd, self._log, self._route, self._closed)
        else:
            transport = HttpSession(self.config, self._route, self._closed)
        self._transport = transport
        try:
            await transport.open()
            self.pid = transport.pid
            command = self.config.argv[0] if self.config.argv else str(self.config.url)
            self._emit(UpstreamStarted(ts=time.time(), upstream=self.name, pid=self.pid, command=command))
            await self._handshake()
        except Exception as exc:  # any failure leaves the link down, never the daemon
            log.warning("upstream %s: start failed: %s", self.name, exc)
            self._log.write(f"[harness] start failed: {exc}\n".encode())
            if self._transport is transport:
                transport.abort()
                if isinstance(exc, OSError):  # nothing was spawned: no exit will be reported
                    self._closed(None, f"cannot start: {exc.strerror or exc}")
        finally:
            self.first_attempt.set()

    async def _handshake(self) -> None:
        init = await self.request(
            "initialize",
            {
                "protocolVersion": UPSTREAM_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "harness-gateway", "version": __version__},
            },
            timeout=INIT_TIMEOUT_S,  # a slow start (npx, a JVM) is not a slow call
        )
        self.protocol_version = str(init.get("protocolVersion", ""))
        self.send_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self.refresh_tools(init)
        self.supervisor.tell(Initialized(self._clock()))

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
        changed = tools != self.tools or init is not None
        self.tools = tools
        if changed:
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
        """Stop for good; the actors stop too."""
        self._stopping = True
        if self._restart is not None:
            self._restart.cancel()
        if self._transport is not None:
            await self._transport.close()
        self.state = UpstreamState.STOPPED
        UPSTREAM_UP.labels(self.name).set(0)
        self.supervisor.tell(Stopped())
        for task in list(self._tasks):
            task.cancel()
        await asyncio.to_thread(self._stop_actors)
        self._log.close()

    def _stop_actors(self) -> None:
        for actor in (self.supervisor, self.breaker):
            with contextlib.suppress(pykka.ActorDeadError):
                actor.stop(timeout=5)

    def restart_now(self, reason: str) -> None:
        """Forget the restart history and start again (``harness restart``)."""
        if self._restart is not None:
            self._restart.cancel()
        self.supervisor.tell(Restarted(reason))
        if self._transport is not None and self.state is UpstreamState.UP:
            self._transport.abort()  # its exit restarts it
        else:
            self._spawn_task(self.start())

    def _closed(self, returncode: int | None, reason: str) -> None:
        """The connection ended: fail what was in flight, record it, ask the supervisor what now."""
        if self._transport is None:
            return
        self._transport = None
        self.state = UpstreamState.STOPPED if self._stopping else UpstreamState.RESTARTING
        UPSTREAM_UP.labels(self.name).set(0)
        pending, self._pending = self._pending, {}
        for item in pending.values():
            if isinstance(item, CallInflight):
                self._active -= 1
                self._failed(item, "upstream_error", f"upstream {self.name!r} exited during the call")
            elif not item.future.done():
                item.future.set_exception(ConnectionError(f"upstream {self.name!r} {reason}"))
        self._drain_queue("upstream_error", f"upstream {self.name!r} exited before the call was sent")
        self._emit(
            UpstreamExited(
                ts=time.time(),
                upstream=self.name,
                pid=self.pid,
                returncode=returncode,
                reason="stopped" if self._stopping else reason,
            )
        )
        if not self._stopping:
            self._tell_then(self.supervisor, Exited(self._clock()), self._decided)

    def _decided(self, decision: Decision | None) -> None:
        if self._stopping or decision is None:
            return
        if decision.delay is None:
            self.state = UpstreamState.FAILED
            log.error(
                "upstream %s: restarted too often; failed until `harness restart` or a reload", self.name
            )
            self._drain_queue("upstream_unavailable", f"upstream {self.name!r} failed")
            return
        self._restart = asyncio.get_running_loop().call_later(decision.delay, self._restart_now)

    def _restart_now(self) -> None:
        self.restarts += 1
        UPSTREAM_RESTARTS.labels(self.name).inc()
        self._spawn_task(self.start())

    # ---------------------------------------------------------------- wire

    def _allocate_id(self) -> int:
        uid = self._next_id
        self._next_id = uid + 1
        return uid

    def send_message(self, message: dict[str, Any]) -> None:
        """Send one message upstream (dropped if the connection is gone)."""
        if self._transport is not None:
            self._transport.send(message)

    def _route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            uid = message.get("id")
            item = self._pending.pop(uid, None) if type(uid) is int else None
            if isinstance(item, CallInflight):
                self._answered(item, message)
            elif item is not None and not item.future.done():
                item.future.set_result(message)
            return
        if "id" in message:
            self._answer_server_request(message)
        elif method == "notifications/progress":
            self._route_progress(message)
        elif method == "notifications/tools/list_changed" and self.state is UpstreamState.UP:
            self._spawn_task(self._refresh_quietly())

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

    def new_call_id(self) -> int:
        """An upstream request id for a call about to be submitted."""
        return self._allocate_id()

    def submit(self, call: CallInflight, message: dict[str, Any], params: dict[str, Any]) -> None:
        """Admit a caller's ``tools/call``: breaker, then a concurrency slot (waiting within the
        call's deadline), then the upstream under this link's own id."""
        uid = call.upstream_id
        call.timer = asyncio.get_running_loop().call_later(self.config.timeout, self._deadline_passed, uid)
        admission = admit(self.breaker_state, self._clock(), self.config.breaker_cooldown)
        if admission == "refuse" or (admission == "probe" and self._probe_out):
            call.failed("circuit_open", f"upstream {self.name!r} failed repeatedly; its breaker is open")
            return
        if admission == "probe":
            self._probe_out = call.probe = True
            self.breaker.tell(ProbeStarted())
        if self._active >= self.config.max_concurrency:
            self._queued[uid] = (call, message, params)
            return
        self._send_call(call, message, params)

    def _send_call(self, call: CallInflight, message: dict[str, Any], params: dict[str, Any]) -> None:
        uid = call.upstream_id
        message["id"] = uid
        params["name"] = call.route.tool
        if call.progress_token is not None:
            params["_meta"] = {**params["_meta"], "progressToken": uid}
        self._pending[uid] = call
        self._active += 1
        self.send_message(message)

    def _slot_freed(self) -> None:
        self._active -= 1
        while self._queued and self._active < self.config.max_concurrency:
            uid = next(iter(self._queued))
            call, message, params = self._queued.pop(uid)
            self._send_call(call, message, params)

    def _drain_queue(self, reason: str, detail: str) -> None:
        queued, self._queued = self._queued, {}
        for call, _message, _params in queued.values():
            call.failed(reason, detail)

    def _answered(self, call: CallInflight, message: dict[str, Any]) -> None:
        self._slot_freed()
        if call.probe:  # the probe decides: acknowledged before anyone hears of it
            self._probe_out = False
            self._tell_then(self.breaker, CallSucceeded(), lambda _s: call.answered(message))
            return
        if self.breaker_state.failures:
            self.breaker.tell(CallSucceeded())
        call.answered(message)

    def _failed(self, call: CallInflight, reason: str, detail: str) -> None:
        """A transport error or timeout: the breaker counts it before the caller hears of it."""
        if call.probe:
            self._probe_out = False
        self._tell_then(self.breaker, CallFailed(self._clock()), lambda _s: call.failed(reason, detail))

    def _deadline_passed(self, uid: int) -> None:
        queued = self._queued.pop(uid, None)
        if queued is not None:
            queued[0].timer = None
            queued[0].failed("timeout", f"no free slot on {self.name!r} within {self.config.timeout:g}s")
            return
        item = self._pending.pop(uid, None)
        if isinstance(item, CallInflight):
            item.timer = None
            self._slot_freed()
            self._send_cancelled(uid, "timeout")
            self._failed(item, "timeout", f"no answer from {self.name!r} within {self.config.timeout:g}s")

    def cancel_call(self, uid: int, reason: str) -> None:
        """The caller gave up: tell the upstream, free the slot; a late reply goes nowhere."""
        queued = self._queued.pop(uid, None)
        if queued is not None:
            queued[0].cancelled()
            return
        item = self._pending.pop(uid, None)
        if isinstance(item, CallInflight):
            self._send_cancelled(uid, reason)
            self._slot_freed()
            if item.probe:
                self._probe_out = False
                self.breaker.tell(ProbeAbandoned())
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
        """Calls sent upstream and not answered yet."""
        return self._active

    @property
    def waiting(self) -> int:
        """Calls waiting for a concurrency slot."""
        return len(self._queued)
