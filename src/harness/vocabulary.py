"""The closed sets of words the gateway uses, each defined once (config, events, rules and gateway
import them from here). Plain ``Literal`` types: they validate in pydantic, check in mypy and are
stored as the strings they are."""

from __future__ import annotations

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

UpstreamStatus = Literal["starting", "up", "restarting", "failed", "stopped"]
"""Where an upstream is in its supervised life (owned by its ``UpstreamActor``)."""

HarnessState = Literal["running", "exited", "restarting", "failed", "stopped"]
"""Where a harness is in its supervised life (owned by the ``HarnessSpawner``): ``running``;
``exited`` on its own with status 0; ``restarting`` (waiting out a backoff); ``failed`` (restarted too
often); ``stopped`` (by the daemon, or never started)."""

HarnessRestart = Literal["restarting", "failed"]
"""What a harness's failed exit leads to (``harness.state_changed``)."""

StopReason = Literal["daemon stopping", "reload", "harness exited", "catalogue probed"]
"""Why the daemon stopped an upstream instance for good (``upstream.state_changed`` to ``stopped``):
the daemon stops; a reload removed or changed its table; the harness a ``shared = false`` instance
ran for exited; a probe that only read the catalogue is done."""

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
