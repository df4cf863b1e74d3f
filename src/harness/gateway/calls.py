"""One tool call in flight: where its answer goes and how each ending is answered and recorded."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from harness.actors.tool_views import Route
from harness.events import Outcome
from harness.gateway import jsonrpc

if TYPE_CHECKING:
    from harness.gateway.session import DownstreamSession

_NEXT_STEP = {
    "upstream_error": "The upstream failed during the call; retry once, then report it to the operator.",
    "upstream_unavailable": "The upstream is down or restarting; retry later.",
    "timeout": "The call took longer than the upstream's timeout; retry with a smaller request.",
    "circuit_open": "Calls to this upstream fail fast for a while; retry after its cooldown.",
}


class CallInflight:
    """A forwarded ``tools/call``: its caller, ids, progress token, deadline and what to record."""

    __slots__ = (
        "arguments",
        "downstream_id",
        "probe",
        "progress_token",
        "route",
        "session",
        "span_id",
        "started",
        "timer",
        "upstream_id",
    )

    def __init__(
        self,
        session: DownstreamSession,
        downstream_id: Any,
        upstream_id: int,
        route: Route,
        arguments: Any,
        progress_token: Any,
        started: float,
    ) -> None:
        self.session = session
        self.downstream_id = downstream_id
        self.upstream_id = upstream_id
        self.route = route
        self.arguments = arguments
        self.progress_token = progress_token
        self.started = started
        self.span_id = os.urandom(8).hex()
        self.timer: asyncio.TimerHandle | None = None
        self.probe = False

    def _finish(self, outcome: Outcome, reason: str | None, response_bytes: int) -> None:
        if self.timer is not None:
            self.timer.cancel()
        session = self.session
        session.calls.pop(self.downstream_id, None)
        route = self.route
        session.recorder.record(
            session=session,
            upstream=route.upstream,
            tool=route.tool,
            tier=route.tier,
            arguments=self.arguments,
            outcome=outcome,
            reason=reason,
            started=self.started,
            response_bytes=response_bytes,
            span_id=self.span_id,
        )

    def answered(self, message: dict[str, Any]) -> None:
        """The upstream replied: pass the reply through with the caller's id, then record it."""
        message["id"] = self.downstream_id
        line = jsonrpc.encode(message)
        self.session.send(line)
        result = message.get("result")
        if isinstance(result, dict):
            outcome: Outcome = "tool_error" if result.get("isError") is True else "ok"
            reason = None
        else:
            error = message.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            outcome, reason = "tool_error", f"jsonrpc_error {code}"
        self._finish(outcome, reason, len(line))

    def failed(self, reason: str, detail: str) -> None:
        """The gateway ends the call with a structured error (crash, transport error, deadline)."""
        line = jsonrpc.gateway_error(self.downstream_id, reason, detail, _NEXT_STEP[reason])
        self.session.send(line)
        outcome: Outcome = jsonrpc.OUTCOME_OF_REASON[reason]  # type: ignore[assignment]
        self._finish(outcome, reason, len(line))

    def cancelled(self) -> None:
        """The caller cancelled (or went away): no answer is sent."""
        self._finish("cancelled", "cancelled", 0)
