"""A downstream MCP session: one agent's endpoint, with its identity, revision and tool view.

The session is the one owner of its control-plane state (identity, effective tool set, listing).
It is an actor on the loop rather than a pykka thread: its mailbox is :meth:`deliver`, called on
the loop, so the per-call path reads its state with no thread hop (a pykka ask costs 50-135 µs,
more than the gateway's whole per-call overhead).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from harness import __version__
from harness.events import Event, SessionClosed, SessionInitialized, ToolSearchCompleted
from harness.gateway.calls.inflight import CallInflight, new_span_id
from harness.gateway.downstream import modern_era
from harness.gateway.downstream.features import MISSING_CAPABILITY, ServerFeatures
from harness.gateway.downstream.log_relay import LogRelay
from harness.gateway.downstream.modern_era import ModernWire
from harness.gateway.downstream.resource_proxy import Subscriptions
from harness.gateway.downstream.tool_pages import StaleCursor, ToolPages, paged
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.library.prompts import PromptLibrary
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.batch import BatchReplies
from harness.gateway.wire.outbox import OUTBOX
from harness.rules.access import NotPermitted
from harness.rules.exposure import Route, ToolView, session_listing
from harness.rules.gateway_tools import (
    CALL_TOOL,
    GATEWAY_TOOL_TIERS,
    SEARCH_K_DEFAULT,
    SEARCH_K_MAX,
    SEARCH_TOOLS,
)
from harness.rules.routing import Identity, RoutingSnapshot
from harness.vocabulary import Outcome, Tier

log = logging.getLogger("harness.session")

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Revisions a downstream session can negotiate through ``initialize`` (oldest first)."""

SERVER_NAME = "harness"
INSTRUCTIONS = (
    "Harness gateway: tools of the upstream MCP servers your policy allows, named <upstream>__<tool>."
)

MAX_OWN_CALLS = 16
"""Gateway tool calls (facade, trajectory, skills) one session may have in flight; more are refused."""

SearchDone = Callable[[Any, BaseException | None], None]
Searcher = Callable[[str, int, frozenset[str], SearchDone], None]
"""Runs a tool search off the loop: (query, k, allowed names, callback(hits, error) on the loop)."""


class OwnTools(Protocol):
    """The gateway's own tools and prompts (:class:`harness.gateway.facade.GatewayTools`)."""

    prompts: PromptLibrary

    def call(self, name: str, arguments: Mapping[str, Any], identity: Identity) -> Awaitable[dict[str, Any]]:
        """One facade, trajectory or skill tool call's structured result."""
        ...


def _own_route(tool: str, tier: Tier = "read") -> Route:
    """Where a call-log row of the gateway's own puts it: upstream ``harness``."""
    return Route(tool, "harness", tool, tier)


def _no_search(query: str, k: int, allowed: frozenset[str], done: SearchDone) -> None:
    done([], None)


@dataclass(frozen=True, slots=True)
class PolicyPublished:
    """Message: the policy actor published a new routing snapshot."""

    snapshot: RoutingSnapshot


def one_line(text: str, limit: int = 160) -> str:
    """The first line or sentence of a description, at most ``limit`` characters."""
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    if 0 < end < limit:
        line = line[: end + 1]
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


class DownstreamSession:
    """Handles one agent's JSON-RPC messages; the hot path is :meth:`_call_tool`."""

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
        search: Searcher = _no_search,
        token: str | None = None,
        own: OwnTools | None = None,
        running: Callable[[str], UpstreamLink | None] | None = None,
        subscriptions: Subscriptions | None = None,
        log_relay: LogRelay | None = None,
    ) -> None:
        self.session_id = os.urandom(8).hex()
        self.token = token
        self.identity = identity
        self.view = view
        self.listing = session_listing(view, identity.top_tools)
        self._pages: ToolPages | None = None
        """:attr:`listing` in pages, made at its first ``tools/list``."""
        self._known = known
        self._search = search
        self.protocol_version = ""
        self.modern: ModernWire | None = None
        """The 2026-07-28 era's adapter, once the session's first request carried its envelope."""
        self.calls: dict[Any, tuple[UpstreamLink, CallInflight]] = {}
        self.recorder = recorder
        self.send = send
        self._links = links
        self._emit = emit
        self._closed = False
        self._on_close = on_close
        self._own = own
        self.features = ServerFeatures(
            send=send,
            servers=lambda: self.view.servers,
            prompt_allowed=self._allows_prompt,
            running=running or links,
            prompts=(lambda: own.prompts) if own is not None else None,
            subscriptions=subscriptions,
            log_relay=log_relay,
        )
        self._own_calls: dict[Any, bool] = {}
        """Gateway tool calls in flight, by request id: True once the client cancelled it."""
        self._held: dict[Any, asyncio.Task[None]] = {}
        """Calls waiting for their upstream's first start (a ``shared = false`` instance)."""
        self.answers_batches = True
        """Whether a batch's answers go out as one array line (False: the transport assembles them)."""
        self._batches: BatchReplies | None = None

    def _allows_prompt(self, name: str) -> bool:
        """Whether the session's current policy lets an upstream's prompt through."""
        return self.view.allows_prompt(name)

    # ---------------------------------------------------------------- dispatch

    def handle(self, message: Any) -> None:
        """Dispatch one parsed message."""
        if not isinstance(message, dict):
            if isinstance(message, list) and self.protocol_version == "2025-03-26":
                self._batch(message)
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
            self.send(
                jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "a request id must be a string or an integer")
            )
            return
        params = message.get("params")
        modern = self.modern is not None or (method != "initialize" and modern_era.has_envelope(params))
        if modern and not self._modern_request(request_id, method, params):
            return
        if method == "ping":
            self.send(jsonrpc.result(request_id, {}))
        elif method == "initialize":
            self._initialize(request_id, params)
        elif not self.protocol_version:
            detail = f"{method} before initialize: send initialize first (only ping may come before it)"
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
        elif method == "tools/call":
            self._call_tool(request_id, message)
        elif method == "tools/list":
            self._list_tools(request_id, params)
        elif self.features.serves(method):
            self.features.handle(request_id, method, message.get("params"))
        else:
            self.send(jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}"))

    def _batch(self, messages: list[Any]) -> None:
        """A JSON-RPC batch (legal in 2025-03-26 only): each member handled as if sent alone; the
        answers go out as one array once all are in (an empty batch is an invalid request). While a
        batch is open, the session's output passes through its :class:`BatchReplies`."""
        if not messages:
            self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "an empty batch"))
            return
        replies = self._batch_replies()
        if replies is not None:
            replies.begin(messages)
        try:
            for message in messages:
                if isinstance(message, list):
                    self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "a batch inside a batch"))
                else:
                    self.handle(message)
        finally:
            if replies is not None:
                replies.handled()

    def _batch_replies(self) -> BatchReplies | None:
        """The open batches' collector, routing the output through it from now (None: the transport
        assembles batch answers itself, as the HTTP endpoint does)."""
        if not self.answers_batches:
            return None
        if self._batches is None:
            wire = self.send

            def idle() -> None:
                self._batches = None
                self.send = self.features.send = wire

            self._batches = BatchReplies(wire, idle)
            self.send = self.features.send = self._batches.route
        return self._batches

    def refuse_unparsable(self, line: bytes, reason: str) -> None:
        """A line that is not strict JSON (NaN, Infinity, bad UTF-8, syntax): never forwarded. Answered
        with -32700, or -32602 and the request's id when a lenient reading finds one; a
        ``tools/call`` so refused is recorded as a denied call."""
        request_id, method = jsonrpc.lenient_id(line)
        if request_id is None:
            self.send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"parse error: {reason}"))
            return
        if method == "tools/call":
            self._invalid(request_id, reason, None, None, time.perf_counter())
            return
        self.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"invalid request: {reason}"))

    def refuse_oversized(self, reason: str) -> None:
        """A message past the size limit, skipped unread: -32600 with a null id (its id was never read)."""
        self.send(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, f"invalid request: {reason}; it was skipped"))

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            request_id = params.get("requestId")
            if not jsonrpc.is_id(request_id):  # not an id (true == 1)
                return
            entry = self.calls.get(request_id)
            if entry is not None:
                link, call = entry
                link.cancel_call(call.upstream_id, "cancelled by the client")
            elif request_id in self._own_calls:
                self._own_calls[request_id] = True
            elif self.features.cancel(request_id):
                pass
            elif (held := self._held.pop(request_id, None)) is not None:
                held.cancel()
            elif self.modern is not None and (listen := self.modern.listens.pop(request_id, None)):
                self.features.watch(listen.uris, False)

    def _initialize(self, request_id: Any, params: Any) -> None:
        if self.protocol_version:
            detail = f"already initialized at {self.protocol_version}; a session initializes once"
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
            return
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        info = params.get("clientInfo") if isinstance(params, dict) else None
        declared = params.get("capabilities") if isinstance(params, dict) else None
        self.features.client_capabilities = declared if isinstance(declared, dict) else {}
        self.send(
            jsonrpc.result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": self._capabilities(),
                    "serverInfo": {"name": SERVER_NAME, "version": __version__},
                    "instructions": INSTRUCTIONS,
                },
            )
        )
        self._begin(version, info)

    def _capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": True}, **self.features.capabilities()}

    def _begin(self, version: str, info: Any) -> None:
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

    # ---------------------------------------------------------------- the 2026-07-28 era

    def _modern_request(self, request_id: Any, method: str, params: Any) -> bool:
        """A request on a 2026-07-28 session, or the one that makes the session one: its envelope
        checked, the era's own methods answered. True: dispatch it as usual."""
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            why = (
                "this session serves the 2026-07-28 protocol; the initialize handshake is not accepted on it"
            )
            self.send(modern_era.unsupported_version(request_id, asked, why))
            return False
        if self.modern is None and self.protocol_version:
            detail = (
                f"this session serves the handshake era ({self.protocol_version}); "
                "requests carrying the 2026-07-28 envelope are not accepted on it"
            )
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
            return False
        envelope = modern_era.read_envelope(request_id, params)
        if isinstance(envelope, bytes):
            self.send(envelope)
            return False
        wire = self.modern
        if wire is None:
            wire = self.modern = ModernWire(self.send)
            self.send = self.features.send = wire.send
            self._begin(envelope.version, envelope.client_info)
        self.features.client_capabilities = envelope.capabilities
        modern_era.strip_envelope(params)
        if method in modern_era.CACHEABLE_METHODS:
            wire.cacheable.add(request_id)
        if method == "server/discover":
            result = {
                "supportedVersions": list(modern_era.MODERN_VERSIONS),
                "capabilities": self._capabilities(),
                "instructions": INSTRUCTIONS,
                "_meta": {modern_era.SERVER_INFO_KEY: {"name": SERVER_NAME, "version": __version__}},
            }
            self.send(jsonrpc.result(request_id, result))
            return False
        if method == "subscriptions/listen":
            self._listen(wire, request_id, params)
            return False
        return True

    def _listen(self, wire: ModernWire, request_id: Any, params: Any) -> None:
        """Open a change stream: acknowledged now, fed by :class:`ModernWire`, answered never (the
        client ends it by cancelling)."""
        listen = modern_era.read_listen(params)
        if isinstance(listen, str):
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, listen))
        elif request_id in wire.listens or len(wire.listens) >= modern_era.MAX_LISTENS:
            detail = f"at most {modern_era.MAX_LISTENS} listen streams, each with its own request id"
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, detail))
        else:
            wire.acknowledge(request_id, listen)
            self.features.watch(listen.uris, True)

    def _resume(self, wire: ModernWire, request_id: Any, params: dict[str, Any], started: float) -> None:
        """A call again with ``inputResponses``: the suspended upstream call gets the client's answer
        to its elicitation and is this request's from now on."""
        state = params["requestState"]
        entry = wire.suspended.pop(state, None) if isinstance(state, str) else None
        if entry is None or entry.call.done:
            detail = "requestState is unknown or its call has ended; call the tool again without it"
            self._invalid(request_id, detail, params.get("name"), params.get("arguments"), started)
            return
        call = entry.call
        responses = params.get("inputResponses")
        response = responses.get(modern_era.ELICITATION_KEY) if isinstance(responses, dict) else None
        meta = params.get("_meta")
        call.downstream_id = request_id
        call.progress_token = meta.get("progressToken") if isinstance(meta, dict) else None
        call.answerable = True
        self.calls[request_id] = (entry.link, call)
        if isinstance(response, dict):
            entry.answer({"result": response})
        else:
            detail = f"the agent's client called again without inputResponses[{modern_era.ELICITATION_KEY!r}]"
            entry.answer({"error": {"code": jsonrpc.INVALID_PARAMS, "message": detail}})

    def _list_tools(self, request_id: Any, params: Any) -> None:
        if self._pages is None or self._pages.listing is not self.listing:
            self._pages = paged(self.listing)
        try:
            tools, following = self._pages.page(params.get("cursor") if isinstance(params, dict) else None)
        except StaleCursor as exc:
            self.send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, str(exc)))
            return
        result: dict[str, Any] = {"tools": []}
        if following is not None:
            result["nextCursor"] = following
        head = jsonrpc.encode({"jsonrpc": "2.0", "id": request_id, "result": result})
        # Splice the pre-encoded tool array in place of the empty one.
        self.send(head.replace(b'"tools":[]', b'"tools":' + tools, 1))

    # ---------------------------------------------------------------- calls

    def _call_tool(self, request_id: Any, message: dict[str, Any]) -> None:
        started = time.perf_counter()
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            self._invalid(request_id, "tools/call needs params.name, a string", None, None, started)
            return
        name: str = params["name"]
        arguments = params.get("arguments")
        if arguments is None:
            arguments = params["arguments"] = {}
        elif not isinstance(arguments, dict):
            self._invalid(request_id, "tools/call params.arguments must be an object", name, None, started)
            return
        if request_id in self.calls or request_id in self._own_calls or request_id in self._held:
            self._invalid(request_id, "a call with this request id is already in flight", name, None, started)
            return
        if self.modern is not None and "requestState" in params:
            self._resume(self.modern, request_id, params, started)
            return
        via = False
        if self.view.exposure != "full" and name in (SEARCH_TOOLS, CALL_TOOL):
            if name == SEARCH_TOOLS:
                self._search_tools(request_id, arguments, started)
                return
            inner = arguments.get("name")
            inner_args = arguments.get("arguments")
            if not isinstance(inner, str) or not isinstance(inner_args, dict | None):
                detail = "call_tool needs arguments {name: string, arguments: object}"
                self._invalid(request_id, detail, CALL_TOOL, arguments, started)
                return
            name, arguments = inner, inner_args or {}
            params = {
                "name": inner,
                "arguments": arguments,
                **({"_meta": params["_meta"]} if "_meta" in params else {}),
            }
            message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            via = True
        if name in GATEWAY_TOOL_TIERS:
            self._own_call(request_id, name, arguments, started, via)
            return
        self._forward(request_id, message, params, name, arguments, started, via)

    def _forward(
        self,
        request_id: Any,
        message: dict[str, Any],
        params: dict[str, Any],
        name: str,
        arguments: dict[str, Any],
        started: float,
        via: bool = False,
    ) -> None:
        """The checks every call gets, direct or through call_tool (``via``), then the upstream."""
        route = self.view.resolve(name)
        if route is None:
            excluded = self._known(name)
            reason = "not_permitted" if excluded is not None else "unknown_tool"
            self._refuse(request_id, reason, name, None, arguments, started, excluded, via=via)
            return
        if route.tier == "write" and "write" not in self.identity.allow:
            self._refuse(request_id, "not_permitted", name, route, arguments, started, via=via)
            return
        link = self._links(route.upstream)
        if link is None or not link.available:
            if link is not None and link.status == "starting" and not link.first_attempt.is_set():
                self._hold(
                    link,
                    request_id,
                    started,
                    forward=lambda: self._forward(request_id, message, params, name, arguments, started, via),
                    cancelled=lambda: self._record(
                        request_id, route, arguments, "cancelled", None, started, 0, via=via
                    ),
                )
                return
            self._refuse(request_id, "upstream_unavailable", name, route, arguments, started, via=via)
            return
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        call = CallInflight(self, request_id, link.new_call_id(), route, arguments, token, started, via=via)
        self.calls[request_id] = (link, call)
        link.submit(call, message, params)

    def _hold(
        self,
        link: UpstreamLink,
        request_id: Any,
        started: float,
        *,
        forward: Callable[[], None],
        cancelled: Callable[[], None],
    ) -> None:
        """Forward a call once its upstream's first start is over (within the upstream's timeout,
        counted from the call's arrival); a cancellation meanwhile ends it unanswered."""

        async def when_started() -> None:
            remaining = link.config.timeout - (time.perf_counter() - started)
            try:
                await asyncio.wait_for(link.first_attempt.wait(), max(remaining, 0.0))
            except TimeoutError:
                pass
            finally:
                self._held.pop(request_id, None)
            forward()

        task = asyncio.ensure_future(when_started())
        self._held[request_id] = task
        task.add_done_callback(lambda done: cancelled() if done.cancelled() else None)

    def call_ended(
        self, call: CallInflight, outcome: Outcome, reason: str | None, response_bytes: int
    ) -> None:
        """A forwarded call is over: forget it and record it (after its answer went out)."""
        entry = self.calls.get(call.downstream_id)
        if entry is not None and entry[1] is call:
            del self.calls[call.downstream_id]
        elif not call.answerable and self.modern is not None:
            self.modern.forget(call)
        self._record(
            call.downstream_id,
            call.route,
            call.arguments,
            outcome,
            reason,
            call.started,
            response_bytes,
            call.span_id,
            via=call.via,
        )

    def relay_request(
        self, call: CallInflight, message: dict[str, Any], answer: Callable[[dict[str, Any]], None]
    ) -> None:
        """An upstream's elicitation during this session's call: relayed as a request
        (``ServerFeatures``), or for a 2026-07-28 client, the call's ``input_required`` result."""
        wire = self.modern
        if wire is None:
            self.features.relay_request(message, answer, call.downstream_id)
            return
        entry = self.calls.get(call.downstream_id)
        why = self.features.refusal(message)
        if why is None and (entry is None or entry[1] is not call):
            why = "the call already waits for the agent's answer to another request"
        if why is not None or entry is None:
            answer(
                {"error": {"code": MISSING_CAPABILITY, "message": f"{message.get('method')} refused: {why}"}}
            )
            return
        del self.calls[call.downstream_id]
        call.answerable = False
        wire.suspend(entry[0], call, message, answer)

    def _own_call(
        self, request_id: Any, name: str, arguments: dict[str, Any], started: float, via: bool = False
    ) -> None:
        """A facade, trajectory or skill tool: tier-checked here, run as a task on the loop, answered
        and recorded (under ``harness``) when it ends."""
        route = _own_route(name, GATEWAY_TOOL_TIERS[name])
        if self._own is None:
            self._refuse(request_id, "unknown_tool", name, None, arguments, started, via=via)
            return
        if route.tier == "write" and "write" not in self.identity.allow:
            self._refuse(request_id, "not_permitted", name, route, arguments, started, via=via)
            return
        if len(self._own_calls) >= MAX_OWN_CALLS:
            detail = f"{MAX_OWN_CALLS} gateway tool calls are already in flight; wait for their answers"
            self._invalid(request_id, detail, name, arguments, started, via)
            return
        self._own_calls[request_id] = False
        task = asyncio.ensure_future(self._own.call(name, arguments, self.identity))
        task.add_done_callback(
            lambda done: self._own_call_done(request_id, route, arguments, started, done, via)
        )

    def _own_call_done(
        self,
        request_id: Any,
        route: Route,
        arguments: Any,
        started: float,
        task: asyncio.Future[Any],
        via: bool,
    ) -> None:
        cancelled = self._own_calls.pop(request_id, False)
        if task.cancelled():  # the daemon is stopping
            self._record(request_id, route, arguments, "cancelled", None, started, 0, via=via)
            return
        error = task.exception()
        if isinstance(error, NotPermitted):
            self._refuse(request_id, "not_permitted", route.tool, route, arguments, started, via=via)
            return
        outcome: Outcome = "ok"
        reason = None
        if error is None:
            value = task.result()
            text = json.dumps(value, ensure_ascii=False, default=str)
            result = {
                "content": [{"type": "text", "text": text}],
                "structuredContent": value,
                "isError": False,
            }
        else:
            if not isinstance(error, ValueError):
                log.error("gateway tool %s failed", route.tool, exc_info=error)
            message = (
                str(error) if isinstance(error, ValueError) else f"{route.tool} failed inside the gateway"
            )
            result = {"content": [{"type": "text", "text": message}], "isError": True}
            outcome, reason = "tool_error", None
        line = jsonrpc.result(request_id, result)
        if cancelled:
            outcome, reason = "cancelled", None
        else:
            self.send(line)
        self._record(request_id, route, arguments, outcome, reason, started, len(line), via=via)

    def _search_tools(self, request_id: Any, arguments: dict[str, Any], started: float) -> None:
        query = arguments.get("query")
        k = arguments.get("k", SEARCH_K_DEFAULT)
        if not isinstance(query, str) or not isinstance(k, int) or isinstance(k, bool):
            detail = "search_tools needs arguments {query: string, k: integer}"
            self._invalid(request_id, detail, SEARCH_TOOLS, arguments, started)
            return
        if not 1 <= k <= SEARCH_K_MAX:
            detail = f"search_tools: 'k' must be an integer from 1 to {SEARCH_K_MAX}"
            self._invalid(request_id, detail, SEARCH_TOOLS, arguments, started)
            return
        view = self.view

        def done(hits: Any, error: BaseException | None) -> None:
            if error is not None:
                line = jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, "tool search failed; retry")
                self.send(line)
                route = _own_route(SEARCH_TOOLS)
                self._record(
                    request_id, route, arguments, "upstream_error", "search_failed", started, len(line)
                )
                return
            found = [self._describe(hit.name, view) for hit in hits if hit.name in view.tools]
            result = {
                "content": [{"type": "text", "text": json.dumps(found, ensure_ascii=False)}],
                "structuredContent": {"tools": found},
                "isError": False,
            }
            line = jsonrpc.result(request_id, result)
            self.send(line)
            self._record(request_id, _own_route(SEARCH_TOOLS), arguments, "ok", None, started, len(line))
            OUTBOX.after(
                self._emit,
                ToolSearchCompleted(
                    ts=time.time(),
                    session_id=self.session_id,
                    harness=self.identity.harness,
                    run_id=self.identity.run_id,
                    query=self.recorder.stored_text(query),
                    k=k,
                    results=tuple(tool["name"] for tool in found),
                    latency_ms=round((time.perf_counter() - started) * 1000, 3),
                ),
            )

        self._search(query, k, frozenset(view.tools), done)

    @staticmethod
    def _describe(name: str, view: ToolView) -> dict[str, Any]:
        tool = view.tools[name]
        description = tool.get("description")
        full = description if isinstance(description, str) else ""
        return {
            "name": name,
            "description": one_line(full),
            "full_description": full,
            "inputSchema": tool.get("inputSchema", {}),
        }

    def _record(
        self,
        request_id: Any,
        route: Route,
        arguments: Any,
        outcome: Outcome,
        reason: str | None,
        started: float,
        size: int,
        span_id: str | None = None,
        *,
        via: bool = False,
    ) -> None:
        """One call-log row for request ``request_id``'s call to ``route`` (a gateway tool's route
        names ``harness``; ``via``: asked through ``call_tool``), made once the answer went out
        (``OUTBOX.after``): recording never delays the agent's answer."""
        OUTBOX.after(
            partial(
                self.recorder.record,
                session=self,
                upstream=route.upstream,
                tool=route.tool,
                tier=route.tier,
                arguments=arguments,
                outcome=outcome,
                reason=reason,
                started=started,
                response_bytes=size,
                span_id=span_id or new_span_id(),
                exposed=route.exposed,
                via_call_tool=via,
                request_id=request_id,
            )
        )

    def _invalid(
        self,
        request_id: Any,
        detail: str,
        name: str | None,
        arguments: Any,
        started: float,
        via: bool = False,
    ) -> None:
        """A malformed call: a structured ``invalid_request`` error, and a denied row under ``harness``
        (the tool named, if any; the arguments per ``call_log_args``)."""
        line = jsonrpc.gateway_error(
            request_id, "invalid_request", detail, "Fix the request; it was not sent to any upstream."
        )
        self.send(line)
        route = _own_route((name or "tools/call")[:200])
        args = arguments if arguments is not None else {}
        self._record(request_id, route, args, "denied", "invalid_request", started, len(line), via=via)

    def _refuse(
        self,
        request_id: Any,
        reason: str,
        name: str,
        route: Route | None,
        arguments: Any,
        started: float,
        excluded: Route | None = None,
        *,
        via: bool = False,
    ) -> None:
        """Answer with a structured refusal and record it: under the real upstream when the tool
        exists (``route``, or ``excluded`` when the policy hides it), else under ``harness``."""
        if self.identity.harness is None and reason in ("unknown_tool", "not_permitted"):
            detail = f"{name!r} is not available: this session has no harness identity"
            step = (
                "The bridge presented no valid HARNESS_MCP_TOKEN (missing, wrong, or of a harness that "
                "exited); start the agent from the daemon so it gets its own token."
            )
        elif reason == "unknown_tool":
            detail, step = (
                f"no tool named {name!r} in this session",
                "List or search tools and use a listed name.",
            )
        elif route is None:
            detail = f"{name!r} is not among the tools this harness's policy allows"
            step = "Use a tool you were given, or ask the operator to change this harness's policy."
        elif reason == "not_permitted":
            detail = f"{name!r} is a write tool and this harness may only call read tools"
            step = "Ask the operator to add 'write' to this harness's mcp_allow, or use a read tool."
        else:
            link = self._links(route.upstream)
            state = link.status if link is not None else "gone"
            if state == "failed":
                detail = f"the upstream of {name!r} failed after restarting too often"
                step = "Its tools stay listed; the operator must run `harness restart` or reload."
            else:
                detail = f"the upstream of {name!r} is {state}"
                step = "Its tools stay listed; retry in a few seconds."
        line = jsonrpc.gateway_error(request_id, reason, detail, step)
        self.send(line)
        real = route or excluded or _own_route(name[:200])
        outcome = jsonrpc.OUTCOME_OF_REASON[reason]
        self._record(request_id, real, arguments, outcome, reason, started, len(line), via=via)

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
        for link, call in list(self.calls.values()):
            link.cancel_call(call.upstream_id, "the client disconnected")
        self.calls.clear()
        for held in list(self._held.values()):
            held.cancel()
        self._held.clear()
        if self.modern is not None:
            for waiting in self.modern.suspended.values():
                waiting.answer({"error": {"code": MISSING_CAPABILITY, "message": "the agent disconnected"}})
                waiting.link.cancel_call(waiting.call.upstream_id, "the client disconnected")
            self.modern.suspended.clear()
        self.features.close()
        OUTBOX.after(
            self._emit,
            SessionClosed(
                ts=time.time(), session_id=self.session_id, harness=self.identity.harness, reason=reason
            ),
        )
        if self._on_close is not None:
            self._on_close(self)
