"""A downstream MCP session: one agent's endpoint, with its identity, revision and tool view.

The session is the one owner of its control-plane state (identity, effective tool set, listing).
It is an actor on the loop rather than a pykka thread: its mailbox is :meth:`deliver`, called on
the loop, so the per-call path reads its state with no thread hop (a pykka ask costs 50-135 µs,
more than the gateway's whole per-call overhead). It keeps the connection's state and dispatches
each message by its method: tool calls to :mod:`.tool_calls`, the handshake and the 2026-07-28
envelope to :mod:`.eras`, prompts, resources and the rest to :mod:`.features`. Its era is given
when it is built (``modern``): who opens it decides (:func:`.eras.opens_modern`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from harness.events import Event, SessionClosed, SessionInitialized
from harness.gateway.calls.inflight import CallInflight
from harness.gateway.downstream import eras
from harness.gateway.downstream.eras import HANDSHAKE_VERSIONS
from harness.gateway.downstream.features import ServerFeatures
from harness.gateway.downstream.log_relay import LogRelay
from harness.gateway.downstream.modern_era import ModernWire
from harness.gateway.downstream.own_calls import OwnCalls, OwnTools, Searcher
from harness.gateway.downstream.resource_proxy import Reading, Subscriptions, same_link
from harness.gateway.downstream.tool_calls import ToolCalls
from harness.gateway.downstream.tool_pages import ToolPages, paged
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.batch import BatchReplies
from harness.gateway.wire.outbox import OUTBOX
from harness.rules.exposure import Route, ToolView, session_listing
from harness.rules.routing import Identity, RoutingSnapshot
from harness.vocabulary import Outcome

__all__ = ["HANDSHAKE_VERSIONS", "DownstreamSession", "PolicyPublished"]

Handler = Callable[[Any, dict[str, Any]], None]
"""Answers one request: (request id, the message)."""

BEFORE_INITIALIZE = frozenset(("ping", "initialize"))
"""The only requests a session answers before its revision is settled."""


@dataclass(frozen=True, slots=True)
class PolicyPublished:
    """Message: the policy actor published a new routing snapshot."""

    snapshot: RoutingSnapshot


class DownstreamSession:
    """Handles one agent's JSON-RPC messages: connection state, dispatch and the mailbox."""

    def __init__(
        self,
        *,
        identity: Identity,
        view: ToolView,
        links: Callable[[str], UpstreamLink | None],
        recorder: CallRecorder,
        emit: Callable[[Event], None],
        send: Callable[[bytes], None],
        on_close: Callable[[DownstreamSession], None] | None = None,
        known: Callable[[str], Route | None] = lambda _name: None,
        search: Searcher | None = None,
        token: str | None = None,
        own: OwnTools | None = None,
        running: Callable[[str], UpstreamLink | None] | None = None,
        subscriptions: Subscriptions | None = None,
        log_relay: LogRelay | None = None,
        modern: bool = False,
        reading: Reading = same_link,
    ) -> None:
        self.session_id = os.urandom(8).hex()
        self.token = token
        self.identity = identity
        self.view = view
        self.listing = session_listing(view, identity.top_tools)
        self._pages: ToolPages | None = None
        """:attr:`listing` in pages, made at its first ``tools/list``."""
        self.protocol_version = ""
        """The revision, once ``initialize`` (or a first valid 2026-07-28 request) settled it."""
        self.modern = ModernWire(send) if modern else None
        """The 2026-07-28 era's adapter (None: the handshake era)."""
        self.wire = send if self.modern is None else self.modern.send
        """The era's output (under an open batch, see :meth:`send`)."""
        self.answers_batches = True
        """Whether a batch's answers go out as one array line (False: the transport assembles them)."""
        self.batches: BatchReplies | None = None
        """The open batch's collector (see :func:`.eras.batch`)."""
        self.recorder = recorder
        self._emit = emit
        self._closed = False
        self._on_close = on_close
        self.features = ServerFeatures(
            send=self.send,
            servers=lambda: self.view.servers,
            prompt_allowed=self._allows_prompt,
            running=running or links,
            prompts=(lambda: own.prompts) if own is not None else None,
            subscriptions=subscriptions,
            log_relay=log_relay,
            reading=reading,
        )
        self.tool_calls = ToolCalls(self, OwnCalls(self, emit, search, own), links=links, known=known)
        self.calls = self.tool_calls.inflight
        """Forwarded calls in flight, by the agent's request id."""
        self._handlers: dict[str, Handler] = {
            "ping": self._ping,
            "initialize": partial(eras.initialize, self),
            "tools/call": self.tool_calls.handle,
            "tools/list": self._list_tools,
        }

    def _allows_prompt(self, name: str) -> bool:
        """Whether the session's current policy lets an upstream's prompt through."""
        return self.view.allows_prompt(name)

    # ---------------------------------------------------------------- dispatch

    def handle(self, message: Any) -> None:
        """Dispatch one parsed message."""
        if not isinstance(message, dict):
            if isinstance(message, list) and self.protocol_version == "2025-03-26":
                eras.batch(self, message)
                return
            self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "a message must be a JSON object"))
            return
        method = message.get("method")
        request_id = message.get("id")
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                self.features.answer(message)
                return
            valid_id = request_id if jsonrpc.is_id(request_id) else None
            detail = "not a JSON-RPC request: method must be a string"
            self.send(jsonrpc.error(valid_id, jsonrpc.INVALID_REQUEST, detail))
            return
        if "id" not in message:
            self._notification(method, message.get("params"))
            return
        if not jsonrpc.is_id(request_id):
            detail = "a request id must be a string or an integer"
            self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, detail))
            return
        params = message.get("params")
        if self.modern is not None:
            if not eras.modern_request(self, request_id, method, params):
                return
        elif eras.opens_modern(message):
            eras.refuse_envelope(self, request_id)
            return
        if not self.protocol_version and method not in BEFORE_INITIALIZE:
            detail = f"{method} before initialize: send initialize first (only ping may come before it)"
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
            return
        handler = self._handlers.get(method)
        if handler is not None:
            handler(request_id, message)
        elif self.features.serves(method):
            self.features.handle(request_id, method, params)
        else:
            self.send(jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}"))

    def send(self, line: bytes) -> None:
        """The session's output: through the open batch's collector (see :func:`.eras.batch`), else
        the era's wire."""
        if self.batches is None:
            self.wire(line)
        else:
            self.batches.route(line)

    def _ping(self, request_id: Any, _message: dict[str, Any]) -> None:
        self.send(jsonrpc.result(request_id, {}))

    def _list_tools(self, request_id: Any, message: dict[str, Any]) -> None:
        if self._pages is None or self._pages.listing is not self.listing:
            self._pages = paged(self.listing)
        self.send(self._pages.answer(request_id, message.get("params")))

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            request_id = params.get("requestId")
            if not jsonrpc.is_id(request_id):  # not an id (true == 1)
                return
            if not (
                self.tool_calls.cancel(request_id)
                or self.features.cancel(request_id)
                or self.tool_calls.cancel_held(request_id)
            ):
                eras.stop_listening(self, request_id)

    def refuse_unparsable(self, line: bytes, reason: str) -> None:
        """A line that is not strict JSON (NaN, Infinity, bad UTF-8, syntax): never forwarded. Answered
        with -32700, or -32602 and the request's id when a lenient reading finds one; a
        ``tools/call`` so refused is recorded as a denied call."""
        request_id, method = jsonrpc.lenient_id(line)
        if request_id is None:
            self.send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"parse error: {reason}"))
        elif method == "tools/call":
            self.tool_calls.records.invalid(request_id, reason, time.perf_counter())
        else:
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"invalid request: {reason}"))

    def refuse_oversized(self, reason: str) -> None:
        """A message past the size limit, skipped unread: -32600 with a null id (its id was never read)."""
        self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, f"invalid request: {reason}; it was skipped"))

    def begin(self, version: str, info: Any) -> None:
        """The session's revision is settled (by ``initialize``, or a first 2026-07-28 request)."""
        self.protocol_version = version
        info = info if isinstance(info, dict) else {}
        OUTBOX.after(
            self._emit,
            SessionInitialized(
                ts=time.time(),
                session_id=self.session_id,
                harness=self.identity.harness,
                protocol_version=version,
                client_name=str(info.get("name", ""))[:200],
                client_version=str(info.get("version", ""))[:200],
            ),
        )

    # ---------------------------------------------------------------- calls (inflight.Caller)

    def call_ended(
        self, call: CallInflight, outcome: Outcome, reason: str | None, response_bytes: int
    ) -> None:
        """A forwarded call is over: forget it and record it (after its answer went out)."""
        self.tool_calls.ended(call, outcome, reason, response_bytes)

    def input_required(self, call: CallInflight, result: dict[str, Any]) -> None:
        """The upstream asked for input during this session's call (:mod:`.input_rounds`)."""
        self.tool_calls.rounds.arrived(call, result)

    def relay_request(
        self, call: CallInflight, message: dict[str, Any], answer: Callable[[dict[str, Any]], None]
    ) -> None:
        """An upstream's elicitation during this session's call (:meth:`ToolCalls.relay`)."""
        self.tool_calls.relay(call, message, answer)

    # ---------------------------------------------------------------- mailbox

    def deliver(self, message: PolicyPublished) -> None:
        """The session's mailbox (on the loop): its identity and view change only here."""
        if not isinstance(message, PolicyPublished):
            raise TypeError(f"DownstreamSession: unhandled message {message!r}")
        snapshot = message.snapshot
        if self.token and (identity := snapshot.identities.get(self.token)) is not None:
            self.identity = identity
        self._replace_view(snapshot.view_for(self.identity))

    def _replace_view(self, view: ToolView) -> None:
        """A new effective tool set: tell the client only if what it lists changed.

        A top_k session's listing is fixed for the session; what it may call follows the policy.
        """
        old = self.view
        self.view = view
        if old.exposure == "top_k" and view.exposure == "top_k":
            return
        listing = session_listing(view, self.identity.top_tools)
        if listing != self.listing:
            self.listing = listing
            self.send(jsonrpc.notification("notifications/tools/list_changed"))

    def close(self, reason: str) -> None:
        """The connection ended: cancel what is in flight upstream and record the end."""
        if self._closed:
            return
        self._closed = True
        self.tool_calls.close()
        self.features.close()
        OUTBOX.after(
            self._emit,
            SessionClosed(
                ts=time.time(), session_id=self.session_id, harness=self.identity.harness, reason=reason
            ),
        )
        if self._on_close is not None:
            self._on_close(self)
