"""Runs and trajectories read from the ``runs`` and ``call_log`` projections."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import apsw

from harness.projections.runs import COLUMNS as RUN_COLUMNS
from harness.vocabulary import FAILED_OUTCOMES


@dataclass(frozen=True)
class Run:
    """One harness run (a spawn): its metadata, its life and its call counts."""

    run_id: str
    harness: str
    adapter: str | None
    model: str | None
    config_hash: str | None
    trace_id: str | None
    started: str | None
    """Spawn time (ISO-8601 UTC ms Z); None when the spawn is not in the log."""
    ended: str | None
    """Exit time; None while it runs."""
    exit_code: int | None
    restarted_run_id: str | None
    """The failed run this one restarted (the supervisor's restart), else None."""
    calls: int
    failures: int
    """Calls that failed (``harness.vocabulary.FAILED_OUTCOMES``)."""
    denials: int


@dataclass(frozen=True)
class Step:
    """One call of a run, as the agent made it."""

    index: int
    """0, 1, 2 … in the run, by start time (then log position)."""
    position: int
    ts: str
    """Call start, ISO-8601 UTC ms Z."""
    session_id: str
    name: str
    """The name the agent called, as its session listed it (gateway tools unprefixed)."""
    upstream: str
    tool: str
    tier: str
    via_call_tool: bool | None
    """Reached through the gateway's ``call_tool`` (None: not recorded, events before v3)."""
    request_id: str | None
    """The JSON-RPC request id as JSON text."""
    arguments: str | None
    """Redacted arguments as JSON text (per ``call_log_args``); past 4 KiB its longest strings are
    cut (still JSON; events before tool_call.completed v3: cut anywhere)."""
    arguments_truncated: bool | None
    """Whether ``arguments`` was cut to fit 4 KiB (None: an older ``call_log`` that lacks it)."""
    outcome: str
    error_reason: str | None
    latency_ms: float
    response_bytes: int
    failed: bool
    """``outcome`` in ``harness.vocabulary.FAILED_OUTCOMES``."""


@dataclass(frozen=True)
class Trajectory:
    """A run and its steps in order."""

    run: Run
    steps: tuple[Step, ...]


def query_runs(
    conn: apsw.Connection,
    *,
    harness: str | None = None,
    since: str | None = None,
    run_ids: Collection[str] | None = None,
) -> list[Run]:
    """Rows of ``runs``, oldest start first (runs whose spawn is not in the log first)."""
    where, args = ["1"], []
    if harness is not None:
        where.append("harness = ?")
        args.append(harness)
    if since is not None:
        where.append("started >= ?")
        args.append(since)
    if run_ids is not None:
        ids = list(run_ids)
        where.append(f"run_id IN ({','.join('?' * len(ids))})")
        args.extend(ids)
    sql = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE {' AND '.join(where)} ORDER BY started, run_id"
    return [Run(*row) for row in conn.execute(sql, args)]


_STEP_SQL = (
    "SELECT run_id, position, ts, session_id, exposed_name, upstream, tool, tier, via_call_tool,"
    " request_id, args, args_truncated, outcome, error_reason, latency_ms, response_bytes FROM call_log"
    " WHERE run_id IN ({marks}) ORDER BY run_id, ts, position"
)


def query_trajectories(conn: apsw.Connection, runs: list[Run]) -> list[Trajectory]:
    """Each run's steps, in the order of ``runs``."""
    steps: dict[str, list[Step]] = {run.run_id: [] for run in runs}
    ids = list(steps)
    for start in range(0, len(ids), 500):  # SQLite's bound-parameter limit
        chunk = ids[start : start + 500]
        for row in conn.execute(_STEP_SQL.format(marks=",".join("?" * len(chunk))), chunk):
            mine = steps[row[0]]
            mine.append(_step(len(mine), row[1:]))
    return [Trajectory(run, tuple(steps[run.run_id])) for run in runs]


def _step(index: int, row: tuple[Any, ...]) -> Step:
    position, ts, session, name, upstream, tool, tier, via = row[:8]
    request_id, args, cut, outcome, reason, latency, size = row[8:]
    via_call_tool = None if via is None else bool(via)
    truncated = None if cut is None else bool(cut)
    return Step(
        index, position, ts, session, name, upstream, tool, tier, via_call_tool,
        request_id, args, truncated, outcome, reason, latency, size, outcome in FAILED_OUTCOMES,
    )  # fmt: skip
