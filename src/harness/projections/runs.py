"""The ``runs`` projection: one row per harness run (a spawn), with its end and its call counts.

A run's row comes from its ``harness.spawned`` (metadata, start, the run it restarted), its
``harness.exited`` (end, exit code) and its ``tool_call.completed`` events (calls, failures,
denials; a call also carries the run's harness, adapter, model, config hash and trace id, so a run
whose spawn event was lost still has a row). Each statement only sets its own columns or adds to
counts, so the three commute: a batch folds them in any order with the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import apsw

from harness.events import Envelope, HarnessExited, HarnessSpawned, ToolCallCompleted
from harness.projections.base import Folding
from harness.projections.call_log import TS_SQL, CallLogProjection
from harness.vocabulary import FAILED_OUTCOMES, outcome_in

COLUMNS: tuple[str, ...] = (
    "run_id",
    "harness",
    "adapter",
    "model",
    "config_hash",
    "trace_id",
    "started",
    "ended",
    "exit_code",
    "restarted_run_id",
    "calls",
    "failures",
    "denials",
)

_DDL = """
CREATE TABLE runs(
    run_id           TEXT    PRIMARY KEY,
    harness          TEXT    NOT NULL,
    adapter          TEXT,
    model            TEXT,
    config_hash      TEXT,
    trace_id         TEXT,
    started          TEXT,               -- spawn time, ISO-8601 UTC ms Z; NULL if the spawn is not in the log
    ended            TEXT,               -- exit time; NULL while it runs (or if its exit is not in the log)
    exit_code        INTEGER,            -- the exit status (negative: the signal); NULL if unknown
    restarted_run_id TEXT,               -- the failed run this one restarted (the supervisor's restart)
    calls            INTEGER NOT NULL DEFAULT 0,
    failures         INTEGER NOT NULL DEFAULT 0,  -- outcome in vocabulary.FAILED_OUTCOMES
    denials          INTEGER NOT NULL DEFAULT 0   -- outcome denied
);
CREATE INDEX runs_harness_started ON runs(harness, started);
"""

_RANGE = "FROM events WHERE position BETWEEN ? AND ? AND name = ?"

_SPAWNS = f"""
INSERT INTO runs(run_id, harness, adapter, model, config_hash, trace_id, started, restarted_run_id)
SELECT data ->> 'run_id', data ->> 'harness', data ->> 'adapter', data ->> 'model',
       data ->> 'config_hash', data ->> 'trace_id', {TS_SQL.format("ts")}, data ->> 'restarted_run_id'
{_RANGE}
ON CONFLICT(run_id) DO UPDATE SET
    adapter = excluded.adapter, model = excluded.model, config_hash = excluded.config_hash,
    trace_id = excluded.trace_id, started = excluded.started, restarted_run_id = excluded.restarted_run_id
"""

_EXITS = f"""
INSERT INTO runs(run_id, harness, ended, exit_code)
SELECT data ->> 'run_id', data ->> 'harness', {TS_SQL.format("ts")}, data ->> 'returncode'
{_RANGE}
ON CONFLICT(run_id) DO UPDATE SET ended = excluded.ended, exit_code = excluded.exit_code
"""

_CALL_COUNTS = """
INSERT INTO runs(run_id, harness, adapter, model, config_hash, trace_id, calls, failures, denials)
SELECT run_id, harness, adapter, model, config_hash, trace_id,
       count(*), sum({failed}), sum(outcome = 'denied')
FROM ({source}) WHERE run_id IS NOT NULL AND harness IS NOT NULL GROUP BY run_id
ON CONFLICT(run_id) DO UPDATE SET
    calls = calls + excluded.calls, failures = failures + excluded.failures,
    denials = denials + excluded.denials
"""
_FIELDS = "run_id, harness, adapter, model, config_hash, trace_id, outcome"
_CALLS_FROM_CALL_LOG = _CALL_COUNTS.format(
    failed=outcome_in(FAILED_OUTCOMES),
    source=f"SELECT {_FIELDS} FROM call_log WHERE position BETWEEN ? AND ?",
)
_CALLS_FROM_LOG = _CALL_COUNTS.format(
    failed=outcome_in(FAILED_OUTCOMES),
    source=f"SELECT {', '.join(f'data ->> {f!r} AS {f}' for f in _FIELDS.split(', '))} {_RANGE}",
)


class RunsProjection(
    Folding,
    name="runs",
    version=1,
    handles={HarnessSpawned.STORED_NAME, HarnessExited.STORED_NAME, ToolCallCompleted.STORED_NAME},
    ddl=_DDL,
):
    """Folds spawns, exits and calls into one row per run."""

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Fold the stored rows these envelopes stand for (every fold runs over stored rows). The
        fields read exist in every version of the three events, so no row needs upcasting."""
        folded = cursor.execute(
            "SELECT position FROM projection_checkpoints WHERE name = ?", (CallLogProjection.name,)
        ).fetchone()
        through = {CallLogProjection.name: int(folded[0])} if folded is not None else {}
        self.apply_stored(cursor, envelopes[0].position, envelopes[-1].position, through)

    def apply_stored(self, cursor: apsw.Cursor, first: int, last: int, folded: Mapping[str, int]) -> bool:
        """Three upserts from the stored JSON; the call counts from the ``call_log`` rows when
        ``call_log`` is folded through ``last`` (columns, not JSON)."""
        cursor.execute(_SPAWNS, (first, last, HarnessSpawned.STORED_NAME))
        cursor.execute(_EXITS, (first, last, HarnessExited.STORED_NAME))
        if folded.get(CallLogProjection.name, 0) >= last:
            cursor.execute(_CALLS_FROM_CALL_LOG, (first, last))
        else:
            cursor.execute(_CALLS_FROM_LOG, (first, last, ToolCallCompleted.STORED_NAME))
        return True

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Retention removed old calls (and spawns and exits): refold every run from what remains,
        the counts from ``call_log`` (which folds, and forgets, before this projection)."""
        cursor.execute("DELETE FROM runs")
        last = int(cursor.execute("SELECT coalesce(max(position), 0) FROM events").get)
        self.apply_stored(cursor, 0, last, {CallLogProjection.name: last})
