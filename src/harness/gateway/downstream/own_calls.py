"""The gateway's own tools as a session calls them: facade, trajectory and skill tools run as tasks
on the loop; ``search_tools`` runs its search off the loop. Decided by the same policy function as
any call (:func:`harness.rules.decision.decide`); answered and recorded under upstream ``harness``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Protocol

from harness.events import Event, ToolSearchCompleted
from harness.gateway import tool_answers
from harness.gateway.downstream.call_records import CallRecords, Session, ToolCall, own_route
from harness.gateway.library.prompts import PromptLibrary
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.outbox import OUTBOX
from harness.rules.access import NotPermitted
from harness.rules.decision import Denied, decide
from harness.rules.exposure import Route
from harness.rules.gateway_tools import GATEWAY_TOOL_TIERS, SEARCH_TOOLS
from harness.rules.refusals import denial_cause
from harness.rules.routing import Identity
from harness.vocabulary import Outcome

log = logging.getLogger("harness.session")

MAX_OWN_CALLS = 16
"""Gateway tool calls (facade, trajectory, skills) one session may have in flight; more are refused."""

SearchDone = Callable[[Any, BaseException | None], None]
Searcher = Callable[[str, int, frozenset[str], SearchDone], None]
"""Runs a tool search off the loop: (query, k, allowed names, callback(hits, error) on the loop)."""

OWN_ROUTES: Mapping[str, Route] = {name: own_route(name, tier) for name, tier in GATEWAY_TOOL_TIERS.items()}


class OwnTools(Protocol):
    """The gateway's own tools and prompts (:class:`harness.gateway.facade.GatewayTools`)."""

    prompts: PromptLibrary

    def call(self, name: str, arguments: Mapping[str, Any], identity: Identity) -> Awaitable[dict[str, Any]]:
        """One facade, trajectory or skill tool call's structured result."""
        ...


def _no_search(query: str, k: int, allowed: frozenset[str], done: SearchDone) -> None:
    done([], None)


class OwnCalls:
    """A session's calls of the gateway's own tools, and those in flight."""

    def __init__(
        self,
        session: Session,
        emit: Callable[[Event], None],
        search: Searcher | None,
        own: OwnTools | None,
    ) -> None:
        self._session = session
        self.records = CallRecords(session)
        """How the session's calls are refused and recorded (shared with :class:`.tool_calls.ToolCalls`)."""
        self._emit = emit
        self._search = search or _no_search
        self._own = own
        self.running: dict[Any, bool] = {}
        """Gateway tool calls in flight, by request id: True once the client cancelled it."""

    def cancel(self, request_id: Any) -> bool:
        """The client cancelled a gateway tool call: it is recorded, never answered (True: it was one)."""
        if request_id not in self.running:
            return False
        self.running[request_id] = True
        return True

    def call(self, call: ToolCall) -> None:
        """A facade, trajectory or skill tool: decided here, run as a task on the loop, answered
        and recorded (under ``harness``) when it ends."""
        session = self._session
        attributed = session.identity.harness is not None
        if self._own is None:
            self.records.refuse(call, denial_cause("unknown_tool", attributed), None)
            return
        decision = decide(call.name, OWN_ROUTES[call.name], session.identity.allow)
        if isinstance(decision, Denied):
            self.records.refuse(call, denial_cause(decision.denial, attributed), decision.route)
            return
        if len(self.running) >= MAX_OWN_CALLS:
            self.records.invalid_call(
                call, f"{MAX_OWN_CALLS} gateway tool calls are already in flight; wait for their answers"
            )
            return
        self.running[call.request_id] = False
        task = asyncio.ensure_future(self._own.call(call.name, call.arguments, session.identity))
        task.add_done_callback(partial(self._done, call, decision))

    def _done(self, call: ToolCall, route: Route, task: asyncio.Future[Any]) -> None:
        cancelled = self.running.pop(call.request_id, False)
        if task.cancelled():  # the daemon is stopping
            self.records.record(call, route, "cancelled", None, 0)
            return
        error = task.exception()
        if isinstance(error, NotPermitted):
            self.records.refuse(
                call, denial_cause("write_tier", self._session.identity.harness is not None), route
            )
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
        self.records.record(call, route, outcome, None, len(line))

    def search(self, call: ToolCall) -> None:
        """``search_tools``: the search runs off the loop; its answer is sent and recorded here."""
        asked = tool_answers.search_arguments(call.arguments)
        if isinstance(asked, str):
            self.records.invalid_call(call, asked)
            return
        query, k = asked
        session = self._session
        view = session.view
        route = own_route(SEARCH_TOOLS)

        def done(hits: Any, error: BaseException | None) -> None:
            if error is not None:
                line = jsonrpc.error(call.request_id, jsonrpc.INTERNAL_ERROR, "tool search failed; retry")
                session.send(line)
                self.records.record(call, route, "upstream_error", "search_failed", len(line))
                return
            result, found = tool_answers.search_result((hit.name for hit in hits), view)
            line = jsonrpc.result(call.request_id, result)
            session.send(line)
            self.records.record(call, route, "ok", None, len(line))
            who = session.identity
            searched = ToolSearchCompleted(
                ts=time.time(),
                session_id=session.session_id,
                harness=who.harness,
                run_id=who.run_id,
                query=session.recorder.stored_text(query),
                k=k,
                results=found,
                latency_ms=round((time.perf_counter() - call.started) * 1000, 3),
            )
            OUTBOX.after(self._emit, searched)

        self._search(query, k, frozenset(view.tools), done)
