"""What a control-plane or facade caller may see (pure rules).

The operator sees everything. A harness sees itself (its logs, description and calls, its runs'
calls) and the upstreams its policy exposes; a harness allowed ``write`` may start and stop its
siblings (ADR-0035's accepted risk), so it also sees their name, state, pid and run id, never their
logs or calls. Whatever a caller may not see is answered as if it did not exist: no existence oracle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.config import Config
from harness.rules.access import Caller
from harness.rules.routing import Identity, RoutingSnapshot

SIBLING_FIELDS = ("name", "state", "pid", "run_id")
"""What a write-tier harness sees of a sibling in ``list``."""


def may_see_harness(caller: Caller, name: str) -> bool:
    """Whether ``caller`` may read harness ``name``'s logs, description and calls."""
    return caller.operator or (caller.harness is not None and caller.harness == name)


def may_see_upstream(caller: Caller, key: str) -> bool:
    """Whether ``caller`` may read upstream ``key``'s logs and description."""
    return caller.operator or key in caller.upstreams


def sees_siblings(caller: Caller) -> bool:
    """Whether ``caller`` sees the other harnesses at all (name, state, pid, run id)."""
    return caller.operator or caller.permits("write")


def listed(caller: Caller, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``list`` rows ``caller`` may see: every field of its own (all, for the operator), the
    :data:`SIBLING_FIELDS` of a sibling when it may drive siblings, nothing else."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if may_see_harness(caller, row["name"]):
            out.append(dict(row))
        elif sees_siblings(caller):
            out.append({key: row[key] for key in SIBLING_FIELDS})
    return out


def unseen(name: str) -> str:
    """The answer for a name the caller may not see, the same whether it exists or not."""
    return f"no harness or upstream named {name!r} that this session may see"


def exposed_upstreams(snapshot: RoutingSnapshot, config: Config, identity: Identity) -> frozenset[str]:
    """The keys of the upstreams ``identity``'s policy exposes: each NAME of its view resolved in
    its project (a project upstream, an unshared one)."""
    servers = snapshot.view_for(identity).servers
    return frozenset(
        up.key for name in servers if (up := config.upstream_for(name, identity.project)) is not None
    )
