"""A session's tool calls: each ``tools/call`` as a :class:`ToolCall` through named stages.

validate → resolve (``call_tool`` unwrapped, the gateway's own tools apart) → decide (the one
policy function, :func:`harness.rules.decision.decide`) → admit (the upstream is up, or the call
waits for its first start) → forward → record (after the answer went out). Every refusal is a row
of :data:`harness.rules.refusals.REFUSALS`. The hot path is :meth:`ToolCalls.handle` down to
:meth:`ToolCalls._forward`: one dict lookup for the route, no task, no actor ask.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from harness.gateway import tool_answers
from harness.gateway.calls.inflight import CallInflight
from harness.gateway.downstream import modern_era
from harness.gateway.downstream.call_records import Session, ToolCall
from harness.gateway.downstream.features import MISSING_CAPABILITY
from harness.gateway.downstream.input_rounds import Continuation, InputRounds, declare
from harness.gateway.downstream.modern_era import ModernWire, Suspended
from harness.gateway.downstream.own_calls import OwnCalls
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc
from harness.rules.decision import Denied, decide
from harness.rules.exposure import Route
from harness.rules.gateway_tools import CALL_TOOL, GATEWAY_TOOL_TIERS, SEARCH_TOOLS
from harness.rules.refusals import denial_cause
from harness.vocabulary import Outcome

LAZY_TOOLS = frozenset((SEARCH_TOOLS, CALL_TOOL))


class ToolCalls:
    """A session's calls: the stages, and what is in flight (forwarded, the gateway's own, held)."""

    def __init__(
        self,
        session: Session,
        own: OwnCalls,
        *,
        links: Callable[[str], UpstreamLink | None],
        known: Callable[[str], Route | None],
    ) -> None:
        self._session = session
        self._links = links
        self._known = known
        self.own = own
        self.records = own.records
        self.inflight: dict[Any, tuple[UpstreamLink, CallInflight]] = {}
        """Forwarded calls, by the agent's request id."""
        self._held: dict[Any, asyncio.Task[None]] = {}
        """Calls waiting for their upstream's first start (a ``shared = false`` instance)."""
        self.rounds = InputRounds(session, self.inflight)
        """Calls whose 2026-07-28 upstream asked for input."""

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
                self.own.search(call)
                return
            call = self._unwrap(call)
            if call is None:
                return
        if call.name in GATEWAY_TOOL_TIERS:
            self.own.call(call)
            return
        self._forward(call)

    def _validate(self, request_id: Any, message: dict[str, Any], started: float) -> ToolCall | None:
        """The request's name and arguments, or None once refused as an invalid request."""
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            self.records.invalid(request_id, "tools/call needs params.name, a string", started)
            return None
        name: str = params["name"]
        arguments = params.get("arguments")
        if arguments is None:
            arguments = params["arguments"] = {}
        elif not isinstance(arguments, dict):
            self.records.invalid(request_id, "tools/call params.arguments must be an object", started, name)
            return None
        if (
            request_id in self.inflight
            or request_id in self.own.running
            or request_id in self._held
            or request_id in self.rounds.asking
        ):
            self.records.invalid(
                request_id, "a call with this request id is already in flight", started, name
            )
            return None
        return ToolCall(request_id, message, params, name, arguments, started)

    def _unwrap(self, call: ToolCall) -> ToolCall | None:
        """``call_tool``'s inner call, asked as if directly (recorded ``via``)."""
        inner = tool_answers.call_tool_arguments(call.arguments)
        if isinstance(inner, str):
            self.records.invalid_call(call, inner)
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
            self.records.refuse(call, denial_cause(decision.denial, attributed), decision.route)
            return
        link = self._links(decision.upstream)  # admit: the upstream takes calls now
        if link is None or not link.available:
            self._not_admitted(call, decision, link)
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
        declare(session, link, call.params)
        link.submit(inflight, call.message, call.params)

    def _not_admitted(self, call: ToolCall, route: Route, link: UpstreamLink | None) -> None:
        """The route's upstream takes no calls now: the call waits for the upstream's first start,
        or is refused naming the upstream's state."""
        if link is not None and link.status == "starting" and not link.first_attempt.is_set():
            self._hold(link, call, route)
            return
        state = link.status if link is not None else "gone"
        self.records.refuse(
            call, "upstream_failed" if state == "failed" else "upstream_down", route, state=state
        )

    def _hold(self, link: UpstreamLink, call: ToolCall, route: Route) -> None:
        """Forward a call once its upstream's first start is over, or refuse it naming the upstream's
        state when that start outlasts the upstream's timeout (counted from the call's arrival); a
        cancellation meanwhile ends it unanswered."""

        async def when_started() -> None:
            remaining = link.config.timeout - (time.perf_counter() - call.started)
            try:
                await asyncio.wait_for(link.first_attempt.wait(), max(remaining, 0.0))
            except TimeoutError:
                self.records.refuse(call, "upstream_down", route, state=link.status)
                return
            finally:
                self._held.pop(call.request_id, None)
            self._forward(call)

        task = asyncio.ensure_future(when_started())
        self._held[call.request_id] = task
        task.add_done_callback(
            lambda done: self.records.record(call, route, "cancelled", None, 0) if done.cancelled() else None
        )

    def _resume(self, wire: ModernWire, call: ToolCall) -> None:
        """A call again with ``inputResponses``: the suspended upstream call gets the client's answer
        to its elicitation and is this request's from now on."""
        state = call.params["requestState"]
        entry = wire.suspended.pop(state, None) if isinstance(state, str) else None
        if entry is None or entry.call.done:
            self.records.invalid_call(
                call, "requestState is unknown or its call has ended; call the tool again without it"
            )
            return
        if isinstance(entry, Continuation):
            self.rounds.resume(entry, call)
            return
        assert isinstance(entry, Suspended)
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
        self.rounds.ended(call)
        self.records.write_row(
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

    # ---------------------------------------------------------------- cancel and close

    def cancel(self, request_id: Any) -> bool:
        """The client cancelled a forwarded or gateway tool call (True: it was one)."""
        entry = self.inflight.get(request_id)
        if entry is not None:
            link, call = entry
            link.cancel_call(call.upstream_id, "cancelled by the client")
            return True
        return self.rounds.cancel(request_id) or self.own.cancel(request_id)

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
        self.rounds.close()
        modern = self._session.modern
        if modern is not None:
            for waiting in list(modern.suspended.values()):
                waiting.drop()
            modern.suspended.clear()
