"""The closed sets of words the gateway uses, each defined once (config, events, rules and gateway
import them from here), and the moves a supervisor makes between its statuses. Plain ``Literal``
types: they validate in pydantic, check in mypy and are stored as the strings they are."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, get_args

Tier = Literal["read", "write"]
"""What a tool may do: ``read`` tools are callable under ``mcp_allow = ["read"]``."""

Outcome = Literal["ok", "tool_error", "upstream_error", "timeout", "denied", "circuit_open", "cancelled"]
"""How a call ended: exactly one per call-log row."""

ArgsMode = Literal["redacted", "hash", "none"]
"""``call_log_args``: redacted arguments and their hash; the hash only; neither."""

Exposure = Literal["full", "lazy", "top_k"]
"""How a policy's tools reach a session's context."""

Adapter = Literal["generic", "claude-code", "codex", "crush"]
"""How a harness's client is wired to the gateway."""

SupervisedStatus = Literal["starting", "up", "restarting", "failed", "stopped"]
"""Where a supervised child (an upstream connection, a harness process) is, as its ``Supervisor``
(``gateway/supervision.py``) says: ``starting`` (started afresh); ``up`` (an upstream answered its
handshake, a harness process runs); ``restarting`` (it ended unasked: a restart is due after a
backoff); ``failed`` (restarted too often: down until a start or ``harness restart``); ``stopped``
(by the daemon)."""

SUPERVISED_MOVES: Mapping[SupervisedStatus, frozenset[SupervisedStatus]] = MappingProxyType(
    {
        "starting": frozenset({"starting", "up", "restarting", "failed", "stopped"}),
        "up": frozenset({"starting", "restarting", "failed", "stopped"}),
        "restarting": frozenset({"starting", "up", "restarting", "failed", "stopped"}),
        "failed": frozenset({"starting", "stopped"}),
        "stopped": frozenset({"starting"}),
    }
)
"""The moves a supervisor makes: from each status, the statuses it may go to. A start afresh
(``starting``) is allowed from anywhere; a failed or stopped child is not up, nor restarted, until
then (a late fact about it is ignored)."""

UpstreamStatus = SupervisedStatus
"""Where an upstream is: its supervisor's status (``upstream.state_changed``)."""

HarnessState = Literal["running", "exited", "restarting", "failed", "stopped"]
"""Where a harness is, as ``harness status`` says: its supervisor's status read with its process
(``HarnessSpawner.state_of``): ``running`` (its process runs); ``exited`` on its own with status 0;
``restarting`` (waiting out a backoff, or starting again); ``failed`` (restarted too often);
``stopped`` (by the daemon, or never started)."""

HarnessRestart = Literal["restarting", "failed"]
"""What a harness's failed exit leads to (``harness.state_changed``)."""

StopReason = Literal[
    "daemon stopping", "reload", "harness exited", "catalogue probed", "handshake only", "restarted"
]
"""Why the daemon stopped an upstream instance for good (``upstream.state_changed`` to ``stopped``):
the daemon stops; a reload removed or changed its table; the harness a ``shared = false`` instance
ran for exited; a probe that only read the catalogue is done; a 2026-07-28 twin of a server that
speaks no 2026-07-28, or of a handshake instance that starts again (``era_twins.py``)."""

BreakerStatus = Literal["closed", "open", "half_open"]
"""An upstream's circuit breaker (owned by its ``BreakerActor``)."""

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
TIERS: tuple[Tier, ...] = get_args(Tier)

FAILED_OUTCOMES: tuple[Outcome, ...] = ("tool_error", "upstream_error", "timeout", "denied", "circuit_open")
"""A call *failed* when it ended in one of these: every outcome but ``ok`` and ``cancelled`` (the
caller withdrew it). The one definition every reader, the CLI and the runs projection use."""

TOOL_RAN_OUTCOMES: tuple[Outcome, ...] = ("ok", "tool_error")
"""The tool ran (a tool error is still the agent choosing that tool): what ``top_k`` counts."""


def outcome_in(outcomes: tuple[Outcome, ...], column: str = "outcome") -> str:
    """SQL: ``column IN ('a', 'b')`` for a set of outcomes above (constants, never input)."""
    return f"{column} IN ({', '.join(repr(o) for o in outcomes)})"
