"""A session's tool calls: each ``tools/call`` as a :class:`ToolCall` through named stages.

validate → resolve (``call_tool`` unwrapped, the gateway's own tools apart) → decide (the one
policy function, :func:`harness.rules.decision.decide`) → admit (the upstream is up, or the call
waits for its first start) → forward → record (after the answer went out). Every refusal is a row
of :data:`harness.rules.refusals.REFUSALS`. The hot path is :meth:`ToolCalls.handle` down to
:meth:`ToolCalls._forward`: one dict lookup for the route, no task, no actor ask.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from harness.events import Event, ToolSearchCompleted
from harness.gateway import tool_answers
from harness.gateway.calls.inflight import CallInflight, new_span_id
from harness.gateway.downstream import modern_era
from harness.gateway.downstream.features import MISSING_CAPABILITY, ServerFeatures
from harness.gateway.downstream.modern_era import ModernWire
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.library.prompts import PromptLibrary
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.outbox import OUTBOX
from harness.rules.access import NotPermitted
from harness.rules.decision import Denied, decide
from harness.rules.exposure import Route, ToolView
from harness.rules.gateway_tools import CALL_TOOL, GATEWAY_TOOL_TIERS, SEARCH_TOOLS
from harness.rules.refusals import REFUSALS, Cause, denial_cause
from harness.rules.routing import Identity
from harness.vocabulary import Outcome, Tier

log = logging.getLogger("harness.session")

MAX_OWN_CALLS = 16
"""Gateway tool calls (facade, trajectory, skills) one session may have in flight; more are refused."""

SearchDone = Callable[[Any, BaseException | None], None]
Searcher = Callable[[str, int, frozenset[str], SearchDone], None]
"""Runs a tool search off the loop: (query, k, allowed names, callback(hits, error) on the loop)."""

LAZY_TOOLS = frozenset((SEARCH_TOOLS, CALL_TOOL))


class OwnTools(Protocol):
    """The gateway's own tools and prompts (:class:`harness.gateway.facade.GatewayTools`)."""

    prompts: PromptLibrary

    def call(self, name: str, arguments: Mapping[str, Any], identity: Identity) -> Awaitable[dict[str, Any]]:
        """One facade, trajectory or skill tool call's structured result."""
        ...


class Session(Protocol):
    """What the tool calls read of their session (:class:`~.session.DownstreamSession`)."""

    session_id: str
    identity: Identity
    view: ToolView
    modern: ModernWire | None
    features: ServerFeatures
    recorder: CallRecorder

    def send(self, line: bytes) -> None:
        """Write one message line to the agent."""
        ...

    def call_ended(
        self, call: CallInflight, outcome: Outcome, reason: str | None, response_bytes: int
    ) -> None:
        """A forwarded call is over."""
        ...

    def relay_request(
        self, call: CallInflight, message: dict[str, Any], answer: Callable[[dict[str, Any]], None]
    ) -> None:
        """An upstream's elicitation during a call."""
        ...


def own_route(tool: str, tier: Tier = "read") -> Route:
    """Where a call-log row of the gateway's own puts it: upstream ``harness``."""
    return Route(tool, "harness", tool, tier)


OWN_ROUTES: Mapping[str, Route] = {name: own_route(name, tier) for name, tier in GATEWAY_TOOL_TIERS.items()}


def _no_search(query: str, k: int, allowed: frozenset[str], done: SearchDone) -> None:
    done([], None)


@dataclass(slots=True)
class ToolCall:
    """One ``tools/call`` request as the stages see it (after ``call_tool``, the inner call)."""

    request_id: Any
    message: dict[str, Any]
    params: dict[str, Any]
    name: str
    arguments: dict[str, Any]
    started: float
    """A ``time.perf_counter()`` reading: when the request arrived."""
    via: bool = False
    """Asked through the gateway's ``call_tool``."""


class ToolCalls:
    """A session's calls: the stages, and what is in flight (forwarded, the gateway's own, held)."""

    def __init__(
        self,
        session: Session,
        *,
        links: Callable[[str], UpstreamLink | None],
        emit: Callable[[Event], None],
        known: Callable[[str], Route | None],
        search: Searcher | None,
        own: OwnTools | None,
    ) -> None:
        self._session = session
        self._links = links
        self._emit = emit
        self._known = known
        self._search = search or _no_search
        self._own = own
        self.inflight: dict[Any, tuple[UpstreamLink, CallInflight]] = {}
        """Forwarded calls, by the agent's request id."""
        self._own_calls: dict[Any, bool] = {}
        """Gateway tool calls in flight, by request id: True once the client cancelled it."""
        self._held: dict[Any, asyncio.Task[None]] = {}
        """Calls waiting for their upstream's first start (a ``shared = false`` instance)."""

    # ---------------------------------------------------------------- validate and resolve

    def handle(self, request_id: Any, message: dict[str, Any]) -> None:
        """One ``tools/call`` request, through every stage."""
        call = self._validate(request_id, message, time.perf_counter())
        if call is None:
            return
        session = self._session
        if session.modern is not None and "requestState" in call.params:
            self._resume(session.modern, call)
            return
        if call.name in LAZY_TOOLS and session.view.exposure != "full":
            if call.name == SEARCH_TOOLS:
                self._search_tools(call)
                return
            call = self._unwrap(call)
            if call is None:
                return
        if call.name in GATEWAY_TOOL_TIERS:
            self._own_call(call)
            return
        self._forward(call)

    def _validate(self, request_id: Any, message: dict[str, Any], started: float) -> ToolCall | None:
        """The request's name and arguments, or None once refused as an invalid request."""
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            self.invalid(request_id, "tools/call needs params.name, a string", started)
            return None
        name: str = params["name"]
        arguments = params.get("arguments")
        if arguments is None:
            arguments = params["arguments"] = {}
        elif not isinstance(arguments, dict):
            self.invalid(request_id, "tools/call params.arguments must be an object", started, name)
            return None
        if request_id in self.inflight or request_id in self._own_calls or request_id in self._held:
            self.invalid(request_id, "a call with this request id is already in flight", started, name)
            return None
        return ToolCall(request_id, message, params, name, arguments, started)

    def _unwrap(self, call: ToolCall) -> ToolCall | None:
        """``call_tool``'s inner call, asked as if directly (recorded ``via``)."""
        inner = tool_answers.call_tool_arguments(call.arguments)
        if isinstance(inner, str):
            self._invalid(call, inner)
            return None
        name, arguments = inner
        params = {
            "name": name,
            "arguments": arguments,
            **({"_meta": call.params["_meta"]} if "_meta" in call.params else {}),
        }
        message = {"jsonrpc": "2.0", "id": call.request_id, "method": "tools/call", "params": params}
        return ToolCall(call.request_id, message, params, name, arguments, call.started, via=True)

    # ---------------------------------------------------------------- decide, admit, forward

    def _forward(self, call: ToolCall) -> None:
        """The checks every upstream call gets, direct or through call_tool, then the upstream."""
        session = self._session
        decision = decide(call.name, session.view.resolve(call.name), session.identity.allow, self._known)
        if isinstance(decision, Denied):
            attributed = session.identity.harness is not None
            self.refuse(call, denial_cause(decision.denial, attributed), decision.route)
            return
        link = self._admit(call, decision)
        if link is None:
            return
        meta = call.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        inflight = CallInflight(
            session,
            call.request_id,
            link.new_call_id(),
            decision,
            call.arguments,
            token,
            call.started,
            via=call.via,
        )
        self.inflight[call.request_id] = (link, inflight)
        link.submit(inflight, call.message, call.params)

    def _admit(self, call: ToolCall, route: Route) -> UpstreamLink | None:
        """The route's upstream link when it takes calls; else the call waits for the upstream's first
        start, or is refused naming the upstream's state (None either way)."""
        link = self._links(route.upstream)
        if link is not None and link.available:
            return link
        if link is not None and link.status == "starting" and not link.first_attempt.is_set():
            self._hold(link, call, route)
            return None
        state = link.status if link is not None else "gone"
        self.refuse(call, "upstream_failed" if state == "failed" else "upstream_down", route, state=state)
        return None

    def _hold(self, link: UpstreamLink, call: ToolCall, route: Route) -> None:
        """Forward a call once its upstream's first start is over (within the upstream's timeout,
        counted from the call's arrival); a cancellation meanwhile ends it unanswered."""

        async def when_started() -> None:
            remaining = link.config.timeout - (time.perf_counter() - call.started)
            try:
                await asyncio.wait_for(link.first_attempt.wait(), max(remaining, 0.0))
            except TimeoutError:
                pass
            finally:
                self._held.pop(call.request_id, None)
            self._forward(call)

        task = asyncio.ensure_future(when_started())
        self._held[call.request_id] = task
        task.add_done_callback(
            lambda done: self._record(call, route, "cancelled", None, 0) if done.cancelled() else None
        )

    def _resume(self, wire: ModernWire, call: ToolCall) -> None:
        """A call again with ``inputResponses``: the suspended upstream call gets the client's answer
        to its elicitation and is this request's from now on."""
        state = call.params["requestState"]
        entry = wire.suspended.pop(state, None) if isinstance(state, str) else None
        if entry is None or entry.call.done:
            self._invalid(
                call, "requestState is unknown or its call has ended; call the tool again without it"
            )
            return
        inflight = entry.call
        responses = call.params.get("inputResponses")
        response = responses.get(modern_era.ELICITATION_KEY) if isinstance(responses, dict) else None
        meta = call.params.get("_meta")
        inflight.downstream_id = call.request_id
        inflight.progress_token = meta.get("progressToken") if isinstance(meta, dict) else None
        inflight.answerable = True
        self.inflight[call.request_id] = (entry.link, inflight)
        if isinstance(response, dict):
            entry.answer({"result": response})
        else:
            detail = f"the agent's client called again without inputResponses[{modern_era.ELICITATION_KEY!r}]"
            entry.answer({"error": {"code": jsonrpc.INVALID_PARAMS, "message": detail}})

    def ended(self, call: CallInflight, outcome: Outcome, reason: str | None, response_bytes: int) -> None:
        """A forwarded call is over: forget it and record it (after its answer went out)."""
        entry = self.inflight.get(call.downstream_id)
        if entry is not None and entry[1] is call:
            del self.inflight[call.downstream_id]
        elif not call.answerable and self._session.modern is not None:
            self._session.modern.forget(call)
        self._write_row(
            call.downstream_id,
            call.route,
            call.arguments,
            outcome,
            reason,
            call.started,
            response_bytes,
            call.span_id,
            call.via,
        )

    def relay(
        self, call: CallInflight, message: dict[str, Any], answer: Callable[[dict[str, Any]], None]
    ) -> None:
        """An upstream's elicitation during a call: relayed as a request (``ServerFeatures``), or for
        a 2026-07-28 client, the call's ``input_required`` result."""
        session = self._session
        wire = session.modern
        if wire is None:
            session.features.relay_request(message, answer, call.downstream_id)
            return
        entry = self.inflight.get(call.downstream_id)
        why = session.features.refusal(message)
        if why is None and (entry is None or entry[1] is not call):
            why = "the call already waits for the agent's answer to another request"
        if why is not None or entry is None:
            answer(
                {"error": {"code": MISSING_CAPABILITY, "message": f"{message.get('method')} refused: {why}"}}
            )
            return
        del self.inflight[call.downstream_id]
        call.answerable = False
        wire.suspend(entry[0], call, message, answer)

    # ---------------------------------------------------------------- the gateway's own tools

    def _own_call(self, call: ToolCall) -> None:
        """A facade, trajectory or skill tool: decided here, run as a task on the loop, answered
        and recorded (under ``harness``) when it ends."""
        session = self._session
        attributed = session.identity.harness is not None
        if self._own is None:
            self.refuse(call, denial_cause("unknown_tool", attributed), None)
            return
        decision = decide(call.name, OWN_ROUTES[call.name], session.identity.allow)
        if isinstance(decision, Denied):
            self.refuse(call, denial_cause(decision.denial, attributed), decision.route)
            return
        if len(self._own_calls) >= MAX_OWN_CALLS:
            self._invalid(
                call, f"{MAX_OWN_CALLS} gateway tool calls are already in flight; wait for their answers"
            )
            return
        self._own_calls[call.request_id] = False
        task = asyncio.ensure_future(self._own.call(call.name, call.arguments, session.identity))
        task.add_done_callback(partial(self._own_call_done, call, decision))

    def _own_call_done(self, call: ToolCall, route: Route, task: asyncio.Future[Any]) -> None:
        cancelled = self._own_calls.pop(call.request_id, False)
        if task.cancelled():  # the daemon is stopping
            self._record(call, route, "cancelled", None, 0)
            return
        error = task.exception()
        if isinstance(error, NotPermitted):
            self.refuse(call, denial_cause("write_tier", self._session.identity.harness is not None), route)
            return
        outcome: Outcome = "ok"
        if error is None:
            result = tool_answers.structured_result(task.result())
        else:
            if not isinstance(error, ValueError):
                log.error("gateway tool %s failed", route.tool, exc_info=error)
            message = (
                str(error) if isinstance(error, ValueError) else f"{route.tool} failed inside the gateway"
            )
            result = tool_answers.tool_error(message)
            outcome = "tool_error"
        line = jsonrpc.result(call.request_id, result)
        if cancelled:
            outcome = "cancelled"
        else:
            self._session.send(line)
        self._record(call, route, outcome, None, len(line))

    def _search_tools(self, call: ToolCall) -> None:
        """``search_tools``: the search runs off the loop; its answer is sent and recorded here."""
        asked = tool_answers.search_arguments(call.arguments)
        if isinstance(asked, str):
            self._invalid(call, asked)
            return
        query, k = asked
        session = self._session
        view = session.view
        route = own_route(SEARCH_TOOLS)

        def done(hits: Any, error: BaseException | None) -> None:
            if error is not None:
                line = jsonrpc.error(call.request_id, jsonrpc.INTERNAL_ERROR, "tool search failed; retry")
                session.send(line)
                self._record(call, route, "upstream_error", "search_failed", len(line))
                return
            result, found = tool_answers.search_result((hit.name for hit in hits), view)
            line = jsonrpc.result(call.request_id, result)
            session.send(line)
            self._record(call, route, "ok", None, len(line))
            OUTBOX.after(
                self._emit,
                ToolSearchCompleted(
                    ts=time.time(),
                    session_id=session.session_id,
                    harness=session.identity.harness,
                    run_id=session.identity.run_id,
                    query=session.recorder.stored_text(query),
                    k=k,
                    results=found,
                    latency_ms=round((time.perf_counter() - call.started) * 1000, 3),
                ),
            )

        self._search(query, k, frozenset(view.tools), done)

    # ---------------------------------------------------------------- refuse and record

    def refuse(self, call: ToolCall, cause: Cause, route: Route | None, **fields: str) -> None:
        """Answer with a structured refusal and record it: under the tool's upstream when it has a
        route (even one the policy hides), else under ``harness``."""
        refusal = REFUSALS[cause]
        line = jsonrpc.gateway_error(call.request_id, refusal, name=call.name, **fields)
        self._session.send(line)
        real = route or own_route(call.name[:200])
        self._record(call, real, refusal.outcome, refusal.reason, len(line))

    def _invalid(self, call: ToolCall, detail: str) -> None:
        self.invalid(call.request_id, detail, call.started, call.name, call.arguments, call.via)

    def invalid(
        self,
        request_id: Any,
        detail: str,
        started: float,
        name: str | None = None,
        arguments: Any = None,
        via: bool = False,
    ) -> None:
        """A malformed call: a structured ``invalid_request`` error, and a denied row under ``harness``
        (the tool named, if any; the arguments per ``call_log_args``)."""
        refusal = REFUSALS["invalid_request"]
        line = jsonrpc.gateway_error(request_id, refusal, detail=detail)
        self._session.send(line)
        args = arguments if arguments is not None else {}
        route = own_route((name or "tools/call")[:200])
        self._write_row(
            request_id, route, args, refusal.outcome, refusal.reason, started, len(line), None, via
        )

    def _record(self, call: ToolCall, route: Route, outcome: Outcome, reason: str | None, size: int) -> None:
        self._write_row(
            call.request_id, route, call.arguments, outcome, reason, call.started, size, None, call.via
        )

    def _write_row(
        self,
        request_id: Any,
        route: Route,
        arguments: Any,
        outcome: Outcome,
        reason: str | None,
        started: float,
        size: int,
        span_id: str | None,
        via: bool,
    ) -> None:
        """One call-log row for request ``request_id``'s call to ``route`` (``via``: asked through
        ``call_tool``), made once the answer went out (``OUTBOX.after``): recording never delays the
        agent's answer."""
        OUTBOX.after(
            partial(
                self._session.recorder.record,
                session=self._session,
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

    # ---------------------------------------------------------------- cancel and close

    def cancel(self, request_id: Any) -> bool:
        """The client cancelled a forwarded or gateway tool call (True: it was one)."""
        entry = self.inflight.get(request_id)
        if entry is not None:
            link, call = entry
            link.cancel_call(call.upstream_id, "cancelled by the client")
            return True
        if request_id in self._own_calls:
            self._own_calls[request_id] = True
            return True
        return False

    def cancel_held(self, request_id: Any) -> bool:
        """The client cancelled a call waiting for its upstream's first start (True: it was one)."""
        held = self._held.pop(request_id, None)
        if held is None:
            return False
        held.cancel()
        return True

    def close(self) -> None:
        """The agent went away: cancel what is in flight upstream or waiting."""
        for link, call in list(self.inflight.values()):
            link.cancel_call(call.upstream_id, "the client disconnected")
        self.inflight.clear()
        for held in list(self._held.values()):
            held.cancel()
        self._held.clear()
        modern = self._session.modern
        if modern is not None:
            for waiting in modern.suspended.values():
                waiting.answer({"error": {"code": MISSING_CAPABILITY, "message": "the agent disconnected"}})
                waiting.link.cancel_call(waiting.call.upstream_id, "the client disconnected")
            modern.suspended.clear()
