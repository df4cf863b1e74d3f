"""Every refusal the gateway answers a tool call with, in one table (docs/call-log.md shows it).

A row is keyed by its cause and says what the agent and the call log see: the reason word
(``data.reason`` and ``error_reason``), the JSON-RPC code, the call's outcome, the message and the
next step. Several causes may share a reason (an excluded tool and a write tool are both
``not_permitted``); what differs is what the agent is told to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal

from harness.vocabulary import Outcome

Reason = Literal[
    "invalid_request",
    "unknown_tool",
    "not_permitted",
    "upstream_unavailable",
    "upstream_error",
    "circuit_open",
    "timeout",
]
"""The reason word of a refusal: the error's ``data.reason`` and the call-log row's ``error_reason``."""

Denial = Literal["unknown_tool", "excluded", "write_tier"]
"""Why the policy decision (:func:`harness.rules.decision.decide`) refuses a call."""

Cause = Literal[
    Denial,
    "invalid_request",
    "unattributed_unknown",
    "unattributed_denied",
    "upstream_down",
    "upstream_failed",
    "upstream_unavailable",
    "upstream_error",
    "circuit_open",
    "timeout",
]
"""A row of :data:`REFUSALS`."""

_INVALID_PARAMS: Final = -32602  # JSON-RPC's own code (harness.gateway.wire.jsonrpc.INVALID_PARAMS)
_NOT_PERMITTED: Final = -32003


@dataclass(frozen=True, slots=True)
class Refusal:
    """One kind of refusal: what it is called, coded and recorded as, and what it says."""

    reason: Reason
    code: int
    outcome: Outcome
    message: str
    """A ``str.format`` template over ``name`` (the tool), ``state`` (its upstream's) or ``detail``."""
    next_step: str
    summary: str = ""
    """A policy denial as ``harness policy what-if`` prints it."""

    def text(self, **fields: Any) -> str:
        """The error's message: the reason, what happened, what to do next."""
        return f"{self.reason}: {self.message.format(**fields)}. {self.next_step}"


_UNATTRIBUTED = "{name!r} is not available: this session has no harness identity"
_NO_IDENTITY_STEP = (
    "The bridge presented no valid HARNESS_MCP_TOKEN (missing, wrong, or of a harness that "
    "exited); start the agent from the daemon so it gets its own token."
)

REFUSALS: Final[Mapping[Cause, Refusal]] = MappingProxyType(
    {
        "invalid_request": Refusal(
            "invalid_request",
            _INVALID_PARAMS,
            "denied",
            "{detail}",
            "Fix the request; it was not sent to any upstream.",
        ),
        "unknown_tool": Refusal(
            "unknown_tool",
            _INVALID_PARAMS,
            "denied",
            "no tool named {name!r} in this session",
            "List or search tools and use a listed name.",
            "not in its upstream's latest catalogue",
        ),
        "excluded": Refusal(
            "not_permitted",
            _NOT_PERMITTED,
            "denied",
            "{name!r} is not among the tools this harness's policy allows",
            "Use a tool you were given, or ask the operator to change this harness's policy.",
            "excluded by policy",
        ),
        "write_tier": Refusal(
            "not_permitted",
            _NOT_PERMITTED,
            "denied",
            "{name!r} is a write tool and this harness may only call read tools",
            "Ask the operator to add 'write' to this harness's mcp_allow, or use a read tool.",
            "write tool, mcp_allow lacks write",
        ),
        "unattributed_unknown": Refusal(
            "unknown_tool", _INVALID_PARAMS, "denied", _UNATTRIBUTED, _NO_IDENTITY_STEP
        ),
        "unattributed_denied": Refusal(
            "not_permitted", _NOT_PERMITTED, "denied", _UNATTRIBUTED, _NO_IDENTITY_STEP
        ),
        "upstream_down": Refusal(
            "upstream_unavailable",
            -32010,
            "upstream_error",
            "the upstream of {name!r} is {state}",
            "Its tools stay listed; retry in a few seconds.",
        ),
        "upstream_failed": Refusal(
            "upstream_unavailable",
            -32010,
            "upstream_error",
            "the upstream of {name!r} failed after restarting too often",
            "Its tools stay listed; the operator must run `harness restart` or reload.",
        ),
        "upstream_unavailable": Refusal(
            "upstream_unavailable",
            -32010,
            "upstream_error",
            "{detail}",
            "The upstream is down or restarting; retry later.",
        ),
        "upstream_error": Refusal(
            "upstream_error",
            -32011,
            "upstream_error",
            "{detail}",
            "The upstream failed during the call; retry once, then report it to the operator.",
        ),
        "circuit_open": Refusal(
            "circuit_open",
            -32012,
            "circuit_open",
            "{detail}",
            "Calls to this upstream fail fast for a while; retry after its cooldown.",
        ),
        "timeout": Refusal(
            "timeout",
            -32001,
            "timeout",
            "{detail}",
            "The call took longer than the upstream's timeout; retry with a smaller request.",
        ),
    }
)


def denial_cause(denial: Denial, attributed: bool) -> Cause:
    """The row a session answers a policy denial with: a session with no harness identity is told
    why it has none, whatever the tool."""
    if attributed:
        return denial
    return "unattributed_unknown" if denial == "unknown_tool" else "unattributed_denied"
