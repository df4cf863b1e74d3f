"""A tool call as a value (:class:`ToolCall`), and its last stage: how it is refused and recorded.

Every refusal is a row of :data:`harness.rules.refusals.REFUSALS`; every call's row is written once
its answer went out (``OUTBOX.after``), so recording never delays the agent's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from harness.gateway.calls.inflight import Caller, new_span_id
from harness.gateway.downstream.features import ServerFeatures
from harness.gateway.downstream.modern_era import ModernWire
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.wire import jsonrpc
from harness.gateway.wire.outbox import OUTBOX
from harness.naming import GATEWAY_UPSTREAM
from harness.rules.exposure import Route, ToolView
from harness.rules.refusals import REFUSALS, Cause
from harness.rules.routing import Identity
from harness.vocabulary import Outcome, Tier


class Session(Caller, Protocol):
    """What the tool calls read of their session (:class:`~.session.DownstreamSession`): a call's
    :class:`~harness.gateway.calls.inflight.Caller`, and its identity, view, era and recorder."""

    session_id: str
    identity: Identity
    view: ToolView
    modern: ModernWire | None
    features: ServerFeatures
    recorder: CallRecorder


def own_route(tool: str, tier: Tier = "read") -> Route:
    """Where a call-log row of the gateway's own puts it: upstream ``harness``."""
    return Route(tool, GATEWAY_UPSTREAM, tool, tier)


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


class CallRecords:
    """Sends a session's refusals and writes its calls' rows."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def refuse(self, call: ToolCall, cause: Cause, route: Route | None, **fields: str) -> None:
        """Answer with a structured refusal and record it: under the tool's upstream when it has a
        route (even one the policy hides), else under ``harness``."""
        refusal = REFUSALS[cause]
        line = jsonrpc.gateway_error(call.request_id, refusal, name=call.name, **fields)
        self._session.send(line)
        real = route or own_route(call.name[:200])
        self.record(call, real, refusal.outcome, refusal.reason, len(line))

    def invalid_call(self, call: ToolCall, detail: str) -> None:
        """``call`` is malformed: :meth:`invalid` with what it named."""
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
        self.write_row(
            request_id, route, args, refusal.outcome, refusal.reason, started, len(line), None, via
        )

    def record(self, call: ToolCall, route: Route, outcome: Outcome, reason: str | None, size: int) -> None:
        """``call``'s row, under ``route``."""
        self.write_row(
            call.request_id, route, call.arguments, outcome, reason, call.started, size, None, call.via
        )

    def write_row(
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
