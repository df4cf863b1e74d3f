"""What a proposed policy would have done to the logged calls: pure, over plain data.

For each harness, every logged call of an upstream tool is checked by the function a session's
calls are checked by (:func:`harness.rules.decision.decide`): a name outside the harness's view is
``excluded`` by its policy (servers, tools, deny) when some upstream's latest catalogue has it, else
``unknown_tool``; a write tool for a harness without ``write`` in ``mcp_allow`` is ``write_tier``.
The view is the one :func:`harness.rules.exposure.build_view` builds.
Calls of the gateway's own tools (upstream ``harness``) and unattributed calls are not governed by
a harness's policy and are only counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.cli.tools import NO_POLICY, bytes_per_mode, mode_views
from harness.config import Config, PolicyConfig
from harness.naming import GATEWAY_UPSTREAM, exposed_name
from harness.rules.decision import Denied, decide
from harness.rules.exposure import Route, ToolView, catalogue_routes
from harness.rules.refusals import Denial
from harness.vocabulary import Exposure, Tier

Catalogs = Mapping[str, Sequence[Mapping[str, Any]]]


@dataclass(frozen=True)
class DeniedTool:
    """A tool whose logged calls the proposal would refuse."""

    name: str
    upstream: str
    tool: str
    reason: Denial
    calls: int


@dataclass(frozen=True)
class Reach:
    """A harness's policy and allowance in one configuration, and the tools it sees."""

    policy: PolicyConfig | None
    allow: tuple[Tier, ...]
    views: Mapping[str, ToolView]
    bytes_per_mode: Mapping[str, int]

    @property
    def exposure(self) -> Exposure | None:
        """The policy's exposure mode (None without a policy)."""
        return self.policy.exposure if self.policy else None

    @property
    def listed(self) -> frozenset[str]:
        """The tools it sees: listed in full mode, found by ``search_tools`` in the others."""
        return frozenset(self.views["full"].tools)

    def refusal(self, known: Mapping[str, Route], upstream: str, tool: str) -> Denial | None:
        """Why a call of ``upstream``'s ``tool`` would be refused, or None when it would go through."""
        name = exposed_name(upstream, tool)
        decision = decide(name, self.views["full"].resolve(name), self.allow, known.get)
        return decision.denial if isinstance(decision, Denied) else None


@dataclass(frozen=True)
class HarnessWhatIf:
    """One harness under the current configuration and under the proposed one."""

    harness: str
    now: Reach
    proposed: Reach
    calls: int
    """Its logged calls of upstream tools in the window."""
    denied: int
    """How many of them the proposal would refuse."""
    denied_now: int
    """How many of them the current configuration refuses (replayed the same way)."""
    denied_tools: tuple[DeniedTool, ...]
    leaves: tuple[str, ...]
    """Tools it sees now and would not see under the proposal."""
    joins: tuple[str, ...]
    """Tools it would see under the proposal and does not see now."""


@dataclass(frozen=True)
class WhatIf:
    """The whole replay: per configured harness, and what was not evaluated."""

    harnesses: tuple[HarnessWhatIf, ...]
    calls: int
    """Calls read."""
    gateway_calls: int
    """Calls of the gateway's own tools (no policy governs them)."""
    unattributed_calls: int
    """Calls without a harness (read-only, no upstream tools, whatever the policy)."""
    unconfigured: Mapping[str, int]
    """Calls of harnesses the configuration no longer has, by harness."""


def reach(config: Config, harness: str, catalogs: Catalogs, top: Sequence[tuple[str, str]]) -> Reach:
    """The harness's reach under ``config``; ``top``: its most-called (upstream, tool), best first."""
    policy = config.policy_for(harness)
    allow = config.harnesses[harness].mcp_allow
    views = mode_views(
        policy or NO_POLICY,
        config,
        catalogs,
        read_only="write" not in allow,
        project=config.project_of(harness),
    )
    k = (policy or NO_POLICY).top_k
    return Reach(policy, allow, views, bytes_per_mode(views, top[:k]))


def what_if(
    current: Config,
    proposed: Config,
    catalogs: Catalogs,
    rows: Iterable[Mapping[str, Any]],
    top: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> WhatIf:
    """Replay call-log ``rows`` (``harness``, ``upstream``, ``tool``; ``calls`` when one row stands
    for that many calls, else 1) under both configurations.

    ``catalogs``: each upstream's latest tool list as it returned it; ``top``: per harness, its
    most-called (upstream, tool) pairs, best first, at least as many as either policy's ``top_k``.
    """
    known, _aliases, _tools = catalogue_routes(current, catalogs)
    per_harness: dict[str, Counter[tuple[str, str]]] = {h: Counter() for h in current.harnesses}
    total = gateway = unattributed = 0
    unconfigured: Counter[str] = Counter()
    for row in rows:
        n = int(row.get("calls", 1))
        total += n
        harness, upstream = row["harness"], row["upstream"]
        if upstream == GATEWAY_UPSTREAM:
            gateway += n
        elif harness is None:
            unattributed += n
        elif harness not in per_harness:
            unconfigured[harness] += n
        else:
            per_harness[harness][upstream, row["tool"]] += n
    results = []
    for harness, counts in per_harness.items():
        mine = (top or {}).get(harness, ())
        now, then = reach(current, harness, catalogs, mine), reach(proposed, harness, catalogs, mine)
        denied: list[DeniedTool] = []
        denied_now = 0
        for (upstream, tool), calls in counts.items():
            if now.refusal(known, upstream, tool) is not None:
                denied_now += calls
            if (reason := then.refusal(known, upstream, tool)) is not None:
                denied.append(DeniedTool(exposed_name(upstream, tool), upstream, tool, reason, calls))
        denied.sort(key=lambda d: (-d.calls, d.name))
        results.append(
            HarnessWhatIf(
                harness=harness,
                now=now,
                proposed=then,
                calls=sum(counts.values()),
                denied=sum(d.calls for d in denied),
                denied_now=denied_now,
                denied_tools=tuple(denied),
                leaves=tuple(sorted(now.listed - then.listed)),
                joins=tuple(sorted(then.listed - now.listed)),
            )
        )
    return WhatIf(tuple(results), total, gateway, unattributed, dict(sorted(unconfigured.items())))
