"""An upstream link's wire: one connection, many multiplexed callers.

The link owns the upstream's request-id allocator and its table of requests in flight (upstream id →
caller, downstream id, progress token, deadline). Messages are parsed once and forwarded as received,
with ids, progress tokens and tool names rewritten. Admission (breaker, slots) is
``admission.py``'s; the connection's life (start, handshake, restarts) is ``supervised.py``'s; what
the upstream asks of the gateway is ``server_requests.py``'s; the 2026-07-28 envelope is
``modern.py``'s; the connection itself is a ``Transport``, so a test can drive a link with a fake one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from harness.actors.snapshots import Published
from harness.config import UpstreamConfig
from harness.gateway.calls.inflight import CallInflight, Failure
from harness.gateway.upstream import modern
from harness.gateway.upstream.admission import BreakerGate, Deadlines, Slots
from harness.gateway.upstream.modern import ModernUpstream
from harness.gateway.upstream.server_requests import answer_server_request
from harness.gateway.upstream.transports import Transport
from harness.gateway.wire import jsonrpc
from harness.vocabulary import UpstreamStatus

INIT_TIMEOUT_S = 30.0


class _Request:
    """An internal request of the link (initialize, tools/list) awaiting its reply."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future[dict[str, Any]]) -> None:
        self.future = future


_Admitting = tuple[CallInflight, dict[str, Any], dict[str, Any]]


class UpstreamLink:
    """Forwards calls to one upstream and routes what comes back."""

    def __init__(
        self,
        config: UpstreamConfig,
        *,
        gate: BreakerGate,
        status: Published[UpstreamStatus],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.name = config.name
        self.gate = gate
        self._status = status
        self._clock = clock
        self._slots = Slots(config.max_concurrency)
        self._next_id = 1
        self._pending: dict[int, CallInflight | _Request] = {}
        self._admitting: dict[int, _Admitting] = {}
        self._deadlines = Deadlines(self._deadline_passed)
        self._transport: Transport | None = None
        self.on_list_changed: Callable[[], None] = lambda: None
        self.on_resource_updated: Callable[[UpstreamLink, str], None] = lambda _link, _uri: None
        """``notifications/resources/updated`` for a URI (the subscriptions fan it out)."""
        self.on_resources_changed: Callable[[UpstreamLink], None] = lambda _link: None
        """``notifications/resources/list_changed``."""
        self.on_log_message: Callable[[UpstreamLink, Any], None] = lambda _link, _params: None
        """``notifications/message`` (the log relay fans it out)."""
        self.capabilities: dict[str, Any] = {}
        """What the upstream's ``initialize`` said it serves (``prompts``, ``resources``, …)."""
        self.modern: ModernUpstream | None = None
        """The 2026-07-28 revision when the upstream speaks only that (every request carries its envelope)."""
        self.first_attempt = asyncio.Event()
        """Set once the first start finished, up or not (a call to a ``starting`` link waits for it)."""

    # ---------------------------------------------------------------- state

    @property
    def status(self) -> UpstreamStatus:
        """The supervisor's published status."""
        return self._status.current

    @property
    def available(self) -> bool:
        """Up (as its supervisor says) and connected (as the wire knows)."""
        return self._status.current == "up" and self._transport is not None

    @property
    def in_flight(self) -> int:
        """Calls sent upstream and not answered yet."""
        return self._slots.active

    @property
    def waiting(self) -> int:
        """Calls waiting for a concurrency slot."""
        return self._slots.waiting

    # ---------------------------------------------------------------- connection

    def attach(self, transport: Transport) -> None:
        """Use this connection from now on."""
        self._transport = transport

    def detach(self) -> bool:
        """The connection ended: fail everything waiting or in flight. False if none was attached."""
        if self._transport is None:
            return False
        self._transport = None
        self._deadlines.clear()  # every call below ends now
        admitting, self._admitting = self._admitting, {}
        self._slots.drain()
        for call, _message, _params in admitting.values():
            call.failed("upstream_error", f"upstream {self.name!r} exited before the call was sent")
        pending, self._pending = self._pending, {}
        for item in pending.values():
            if isinstance(item, CallInflight):
                self._slots.release()
                self._failed(item, "upstream_error", f"upstream {self.name!r} exited during the call")
            elif not item.future.done():
                item.future.set_exception(ConnectionError(f"upstream {self.name!r} went away"))
        return True

    def send_message(self, message: dict[str, Any]) -> None:
        """Send one message upstream (dropped if the connection is gone)."""
        if self._transport is not None:
            self._transport.send(message)

    async def ask(
        self, method: str, params: dict[str, Any], timeout: float = INIT_TIMEOUT_S
    ) -> dict[str, Any]:
        """Send a request of the gateway's own and wait for the whole reply (``result`` or ``error``);
        TimeoutError when none comes in time."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        uid = self.send_request(method, params, _Request(future))
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(uid, None)

    def send_request(self, method: str, params: dict[str, Any], waiter: _Request | None = None) -> int:
        """Send a request of the gateway's own under a new id; without a ``waiter`` its answer, if
        one ever comes, goes nowhere (a ``subscriptions/listen`` stream)."""
        uid = self.new_call_id()
        if waiter is not None:
            self._pending[uid] = waiter
        if self.modern is not None:
            params = self.modern.stamp(dict(params))
        self.send_message({"jsonrpc": "2.0", "id": uid, "method": method, "params": params})
        return uid

    def serves(self, capability: str) -> bool:
        """Whether the upstream is up and declared ``capability`` (``prompts``, ``resources``, …)."""
        return self.available and capability in self.capabilities

    async def request(
        self, method: str, params: dict[str, Any], timeout: float = INIT_TIMEOUT_S
    ) -> dict[str, Any]:
        """Send an internal request and wait for its result (RuntimeError on an error reply)."""
        return result_of(method, await self.ask(method, params, timeout))

    # ---------------------------------------------------------------- from the upstream

    def receive(self, message: dict[str, Any], related: int | None = None) -> None:
        """One message from the upstream, parsed once (``related``: the id of the request whose
        response stream carried it, when the transport knows)."""
        method = message.get("method")
        if method is None:
            uid = message.get("id")
            item = self._pending.pop(uid, None) if type(uid) is int else None
            if isinstance(item, CallInflight):
                self._deadlines.discard(item.upstream_id)
                asks = modern.input_required(message) if self.modern is not None else None
                self._slots.release()
                if asks is None:
                    self.gate.succeeded(item.probe, lambda: item.answered(message))
                else:
                    self.gate.succeeded(item.probe, lambda: item.caller.input_required(item, asks))
            elif item is not None and not item.future.done():
                item.future.set_result(message)
            return
        if "id" in message:
            owner = self._pending.get(related) if related is not None else None
            answer_server_request(
                message,
                owner if isinstance(owner, CallInflight) else None,
                self._calls_in_flight,
                self.send_message,
            )
        elif method == "notifications/progress":
            self._route_progress(message)
        elif method == "notifications/tools/list_changed":
            self.on_list_changed()
        elif method == "notifications/resources/updated":
            params = message.get("params")
            uri = params.get("uri") if isinstance(params, dict) else None
            if isinstance(uri, str):
                self.on_resource_updated(self, uri)
        elif method == "notifications/resources/list_changed":
            self.on_resources_changed(self)
        elif method == "notifications/message":
            self.on_log_message(self, message.get("params"))

    def _calls_in_flight(self) -> list[CallInflight]:
        return [item for item in self._pending.values() if isinstance(item, CallInflight) and not item.done]

    def _route_progress(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, dict):
            return
        token = params.get("progressToken")
        item = self._pending.get(token) if type(token) is int else None
        if isinstance(item, CallInflight) and item.progress_token is not None:
            params["progressToken"] = item.progress_token
            item.caller.send(jsonrpc.encode(message))

    # ---------------------------------------------------------------- calls

    def new_call_id(self) -> int:
        """A new upstream request id (for a call about to be submitted, say)."""
        uid = self._next_id
        self._next_id = uid + 1
        return uid

    def submit(self, call: CallInflight, message: dict[str, Any], params: dict[str, Any]) -> None:
        """Admit a caller's ``tools/call``: breaker, then a concurrency slot (waiting within the
        call's deadline), then the upstream under this link's own id."""
        uid = call.upstream_id
        self._deadlines.start(uid, self.config.timeout)
        self._admitting[uid] = (call, message, params)
        verdict = self.gate.admit(lambda granted: self._claimed(uid, granted))
        if verdict is True:
            if self._slots.take():  # the common case: no waiting, no closure
                self._send_call(uid)
            else:
                self._slots.acquire(uid, lambda: self._send_call(uid))
        elif verdict is False:
            del self._admitting[uid]
            self._deadlines.discard(uid)
            call.failed("circuit_open", f"upstream {self.name!r} failed repeatedly; its breaker is open")

    def _claimed(self, uid: int, granted: bool) -> None:
        """The breaker's owner decided on this call's probe claim."""
        entry = self._admitting.get(uid)
        if entry is None:  # the call ended meanwhile (deadline, cancel, exit)
            if granted:
                self.gate.abandoned()
            return
        call = entry[0]
        if not granted:
            del self._admitting[uid]
            call.failed("circuit_open", f"upstream {self.name!r} failed repeatedly; its breaker is open")
            return
        call.probe = True
        self._slots.acquire(uid, lambda: self._send_call(uid))

    def _send_call(self, uid: int) -> None:
        call, message, params = self._admitting.pop(uid)
        if self._transport is None:
            self._slots.release()
            if call.probe:
                self.gate.abandoned()
            call.failed("upstream_unavailable", f"upstream {self.name!r} is not connected")
            return
        message["id"] = uid
        params["name"] = call.route.tool
        if call.progress_token is not None:
            params["_meta"] = {**params["_meta"], "progressToken": uid}
        if self.modern is not None:
            self.modern.stamp(params)
        self._pending[uid] = call
        self._transport.send(message)

    def _failed(self, call: CallInflight, reason: Failure, detail: str) -> None:
        """A transport error or timeout: the breaker counts it before the caller hears of it."""
        self.gate.failed(lambda: call.failed(reason, detail))

    def _withdrawn(self, uid: int) -> CallInflight | None:
        """The call still waiting for admission under ``uid``, taken out of the queue (None: none)."""
        entry = self._admitting.pop(uid, None)
        if entry is None:
            return None
        self._slots.withdraw(uid)
        if entry[0].probe:
            self.gate.abandoned()
        return entry[0]

    def _deadline_passed(self, uid: int) -> None:
        call = self._withdrawn(uid)
        if call is not None:
            call.failed("timeout", f"no free slot on {self.name!r} within {self.config.timeout:g}s")
            return
        item = self._pending.pop(uid, None)
        if isinstance(item, CallInflight):
            self._slots.release()
            self._send_cancelled(uid, "timeout")
            self._failed(item, "timeout", f"no answer from {self.name!r} within {self.config.timeout:g}s")

    def cancel_call(self, uid: int, reason: str) -> None:
        """The caller gave up: tell the upstream, free the slot; a late reply goes nowhere."""
        self._deadlines.discard(uid)
        call = self._withdrawn(uid)
        if call is not None:
            call.cancelled()
            return
        item = self._pending.pop(uid, None)
        if isinstance(item, CallInflight):
            self._send_cancelled(uid, reason)
            self._slots.release()
            if item.probe:
                self.gate.abandoned()
            item.cancelled()

    def _send_cancelled(self, uid: int, reason: str) -> None:
        self.send_message(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": uid, "reason": reason},
            }
        )


def result_of(method: str, reply: dict[str, Any]) -> dict[str, Any]:
    """The result of a reply to a request of the gateway's own (RuntimeError on an error reply)."""
    if "error" in reply:
        error = reply["error"]
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str) and message.startswith(jsonrpc.GARBLED):
            raise RuntimeError(f"{method} {message}")  # the transport could not read the answer
        raise RuntimeError(f"{method} failed: {error}")
    result = reply.get("result")
    if not isinstance(result, dict):
        raise RuntimeError(f"{method}: result is not an object")  # noqa: TRY004 - a protocol fault
    return result


async def list_all(
    link: UpstreamLink, method: str, key: str, timeout: float, pages: int = 20
) -> list[dict[str, Any]]:
    """The ``key`` objects of every page of a ``*/list`` request (at most ``pages`` pages; an
    answer that is not a result ends the list where it is)."""
    items: list[dict[str, Any]] = []
    cursor: Any = None
    for _page in range(pages):
        result = (await link.ask(method, {"cursor": cursor} if cursor else {}, timeout)).get("result")
        if not isinstance(result, dict):
            break
        items.extend(item for item in result.get(key, ()) if isinstance(item, dict))
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items
