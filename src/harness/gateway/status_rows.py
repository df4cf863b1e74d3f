"""The rows ``harness status`` and ``describe`` give an upstream: one per running instance, its
2026-07-28 twin's beside it (``KEY~2026-07-28``, ``era_twins.py``), and a ``shared = false``
upstream's summing up its instances."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.gateway.upstream.era_twins import twin_name
from harness.gateway.upstream.supervised import SupervisedUpstream

Twins = Mapping[SupervisedUpstream, SupervisedUpstream]
"""The 2026-07-28 twin of each instance that has one, by that instance."""


def folder(path: Path | None) -> str | None:
    """A project folder as shown (None: global, or no project)."""
    return str(path) if path is not None else None


def upstream_row(up: SupervisedUpstream) -> dict[str, Any]:
    """One instance: its state, process, tools, calls and breaker."""
    return {
        "project": folder(up.config.project),
        "state": up.link.status,
        "pid": up.pid or None,
        "tools": len(up.tools),
        "in_flight": up.link.in_flight,
        "waiting": up.link.waiting,
        "breaker": up.link.gate.state.status,
        "catalogue_notes": list(up.catalogue_notes),
    }


def with_twin(name: str, up: SupervisedUpstream, twins: Twins) -> dict[str, dict[str, Any]]:
    """An instance's row by ``name``, and its twin's as ``<name>~2026-07-28``."""
    rows = {name: upstream_row(up)}
    if (twin := twins.get(up)) is not None:
        rows[twin_name(name)] = upstream_row(twin)
    return rows


def unshared_row(
    instances: Mapping[str, SupervisedUpstream], project: Path | None, twins: Twins
) -> dict[str, Any]:
    """A ``shared = false`` upstream: the ``instances`` shown (by harness) each with its twin
    (``HARNESS~2026-07-28``), and their sums."""
    rows = {
        name: row for harness, up in instances.items() for name, row in with_twin(harness, up, twins).items()
    }
    return {
        "project": folder(project),
        "state": "unshared",
        "pid": None,
        "tools": max((row["tools"] for row in rows.values()), default=0),
        "in_flight": sum(row["in_flight"] for row in rows.values()),
        "waiting": sum(row["waiting"] for row in rows.values()),
        "breaker": "-",
        "catalogue_notes": sorted({n for row in rows.values() for n in row["catalogue_notes"]}),
        "instances": rows,
    }
