"""One tool call in flight: where its answer goes and how each ending is answered.

A call knows its caller only through :class:`Caller` (a downstream session satisfies it), so the
upstream side never imports the downstream side.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from harness.gateway.wire import jsonrpc
from harness.rules.exposure import Route
from harness.rules.refusals import REFUSALS
from harness.vocabulary import Outcome

Failure = Literal["upstream_unavailable", "upstream_error", "circuit_open", "timeout"]
"""How the gateway may end a forwarded call (rows of :data:`harness.rules.refusals.REFUSALS`)."""

_bits = random.Random().getrandbits
"""A generator of the gateway's own (seeded from ``os.urandom``; nobody else's seed reaches it)."""


def new_span_id() -> str:
    """A span id: 16 hex digits, never all zero (OpenTelemetry's rule). Random, not secret: the
    process's own generator costs no system call, where ``os.urandom`` does one per call."""
    return f"{_bits(64) or 1:016x}"


class Caller(Protocol):
    """What a call needs of the session that made it."""

    def send(self, line: bytes) -> None:
        """Write one message line to the agent."""
        ...

    def call_ended(
        self, call: CallInflight, outcome: Outcome, reason: str | None, response_bytes: int
    ) -> None:
        """The call is over (answered, failed or cancelled): forget it and record it."""
        ...

    def relay_request(
        self, call: CallInflight, message: dict[str, Any], answer: Callable[[dict[str, Any]], None]
    ) -> None:
        """Pass a server-to-client request (an elicitation during ``call``) to the agent; ``answer``
        gets the agent's reply (``result`` or ``error``), exactly once."""
        ...

    def input_required(self, call: CallInflight, result: dict[str, Any]) -> None:
        """A 2026-07-28 upstream answered ``call`` with ``resultType: "input_required"``: ask the
        agent for the input, then retry the call (the call goes on; it is not over)."""
        ...


@dataclass(slots=True, eq=False)
class CallInflight:
    """A forwarded ``tools/call``: its caller, ids, progress token, deadline and what to record."""

    caller: Caller
    downstream_id: Any
    upstream_id: int
    route: Route
    arguments: Any
    progress_token: Any
    started: float
    """A ``time.perf_counter()`` reading: when the request arrived."""
    span_id: str = field(default_factory=new_span_id)
    probe: bool = False
    """Admitted as the breaker's half-open probe."""
    done: bool = False
    via: bool = False
    """Asked through the gateway's ``call_tool``."""
    answerable: bool = True
    """False while the call's request was answered ``input_required`` (a 2026-07-28 client) and the
    client has not called again: an ending then is recorded but has no request to answer."""

    def _finish(self, outcome: Outcome, reason: str | None, response_bytes: int) -> None:
        self.done = True
        self.caller.call_ended(self, outcome, reason, response_bytes)

    def answered(self, message: dict[str, Any]) -> None:
        """The upstream replied: pass the reply through with the caller's id, then record it."""
        if self.done:
            return
        message["id"] = self.downstream_id
        line = jsonrpc.encode(message)
        if self.answerable:
            self.caller.send(line)
        result = message.get("result")
        if isinstance(result, dict):
            outcome: Outcome = "tool_error" if result.get("isError") is True else "ok"
            reason = None
        else:
            error = message.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            outcome, reason = "tool_error", f"jsonrpc_error {code}"
        self._finish(outcome, reason, len(line))

    def failed(self, cause: Failure, detail: str) -> None:
        """The gateway ends the call with a structured error (crash, transport error, deadline)."""
        if self.done:
            return
        refusal = REFUSALS[cause]
        line = jsonrpc.gateway_error(self.downstream_id, refusal, detail=detail)
        if self.answerable:
            self.caller.send(line)
        self._finish(refusal.outcome, refusal.reason, len(line))

    def cancelled(self) -> None:
        """The caller cancelled (or went away): no answer is sent."""
        if not self.done:
            self._finish("cancelled", "cancelled", 0)
