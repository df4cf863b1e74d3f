"""``harness policy what-if --policy FILE [--since DURATION] [--json]``, from the store alone."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.cli.common import Globals, iso_z, parse_since
from harness.cli.proposal import apply_proposal, read_proposal
from harness.cli.tools import configured, store_catalogs
from harness.cli.whatif import HarnessWhatIf, Reach, WhatIf, what_if
from harness.config import Config
from harness.reading import StoreView, open_store
from harness.rules.refusals import REFUSALS


def grouped_calls(view: StoreView, since: str) -> list[dict[str, Any]]:
    """Call-log rows at or after ``since`` counted per (harness, upstream, tool)."""
    sql = (
        "SELECT harness, upstream, tool, count(*) FROM call_log WHERE ts >= ? "
        "GROUP BY harness, upstream, tool ORDER BY harness, upstream, tool"
    )
    return [
        {"harness": h, "upstream": u, "tool": t, "calls": n}
        for h, u, t, n in view.conn.execute(sql, (since,))
    ]


def _top_k(*configs: Config) -> int:
    return max((p.top_k for c in configs for p in c.policies.values()), default=1)


def run_what_if(g: Globals, policy_file: Path, since_text: str, *, as_json: bool) -> int:
    """Replay the logged calls since ``since_text`` under the policy file; print the report."""
    config = configured(g)
    proposed = apply_proposal(config, read_proposal(policy_file.expanduser().absolute()))
    since = iso_z(parse_since(since_text))
    with open_store(g.paths.db) as view:
        catalogs = store_catalogs(view)
        rows = grouped_calls(view, since)
        k = _top_k(config, proposed)
        top = {h: [(u, t) for u, t, _n in view.top_tools(h, k)] for h in config.harnesses}
    result = what_if(config, proposed, catalogs, rows, top)
    if as_json:
        print(json.dumps(as_object(result, policy_file, since), ensure_ascii=False))
    else:
        print_report(result, policy_file, since)
    return 0


def _reach(now: Reach, proposed: Reach) -> dict[str, Any]:
    return {
        "policy": {"now": _name(now), "proposed": _name(proposed)},
        "mcp_allow": {"now": list(now.allow), "proposed": list(proposed.allow)},
        "exposure": {"now": now.exposure, "proposed": proposed.exposure},
        "bytes_per_mode": dict(proposed.bytes_per_mode),
        "bytes_per_mode_now": dict(now.bytes_per_mode),
    }


def _name(reach: Reach) -> str | None:
    return reach.policy.name if reach.policy else None


def as_object(result: WhatIf, policy_file: Path, since: str) -> dict[str, Any]:
    """The ``--json`` object."""
    return {
        "policy_file": str(policy_file),
        "since": since,
        "calls": result.calls,
        "gateway_calls": result.gateway_calls,
        "unattributed_calls": result.unattributed_calls,
        "unconfigured_harnesses": dict(result.unconfigured),
        "harnesses": [
            {
                "harness": h.harness,
                "calls": h.calls,
                "denied": h.denied,
                "denied_now": h.denied_now,
                "denied_tools": [asdict(d) for d in h.denied_tools],
                "tools_leaving": list(h.leaves),
                "tools_joining": list(h.joins),
                **_reach(h.now, h.proposed),
            }
            for h in result.harnesses
        ],
    }


def _in_use(reach: Reach) -> int:
    return reach.bytes_per_mode[reach.exposure or "full"]


def print_report(result: WhatIf, policy_file: Path, since: str) -> None:
    """The human report: one line per harness, then each harness's details."""
    print(f"{result.calls:,} calls since {since} replayed under {policy_file}")
    print()
    print(
        f"{'HARNESS':<20} {'POLICY (NOW -> PROPOSED)':<32} {'CALLS':>7} {'DENIED':>7} {'NOW':>6} "
        f"{'LEAVE':>5} {'JOIN':>5}  BYTES IN USE (NOW -> PROPOSED)"
    )
    for h in result.harnesses:
        policies = f"{_name(h.now) or '-'} -> {_name(h.proposed) or '-'}"
        print(
            f"{h.harness:<20} {policies:<32} {h.calls:>7,} {h.denied:>7,} {h.denied_now:>6,} "
            f"{len(h.leaves):>5} {len(h.joins):>5}  {_in_use(h.now):,} -> {_in_use(h.proposed):,}"
        )
    for h in result.harnesses:
        print()
        _details(h)
    _not_evaluated(result)


def _details(h: HarnessWhatIf) -> None:
    now = f"the current configuration denies {h.denied_now:,}"
    print(f"{h.harness}: would deny {h.denied:,} of {h.calls:,} calls ({now})")
    for d in h.denied_tools:
        print(f"  {d.name:<50} {d.calls:>7,}  {REFUSALS[d.reason].summary}")
    if h.leaves:
        print(f"  leaves its list ({len(h.leaves)}): {', '.join(h.leaves)}")
    if h.joins:
        print(f"  joins its list ({len(h.joins)}): {', '.join(h.joins)}")
    modes = ", ".join(f"{mode} {size:,}" for mode, size in h.proposed.bytes_per_mode.items())
    exposure = h.proposed.exposure or "none (no policy)"
    print(f"  schema bytes per session: {modes} (proposed exposure: {exposure})")


def _not_evaluated(result: WhatIf) -> None:
    skipped: Mapping[str, int] = {
        "calls of the gateway's own tools": result.gateway_calls,
        "unattributed calls": result.unattributed_calls,
        **{f"calls of {name} (no longer configured)": n for name, n in result.unconfigured.items()},
    }
    shown = [f"{n:,} {what}" for what, n in skipped.items() if n]
    if shown:
        print()
        print("not governed by a harness's policy, not replayed: " + "; ".join(shown))
