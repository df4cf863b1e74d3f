"""Retention: remove events and call-log rows older than a cutoff, in steps, recorded as an event.

The writer runs ``compact`` in its own thread (``LogWriterActor``'s ``Compact`` message) with
``between_steps`` draining its intake, so calls keep landing between steps and readers (WAL) are
never blocked. Each step is one transaction that:

1. sets ``store_meta.retention_cutoff`` to the step's bound — the only way past the log's DELETE
   trigger, which refuses deleting anything else (and everything when the key is absent);
2. deletes the events older than the bound, except the latest tool catalogue of each upstream;
3. calls ``forget`` so that whatever was folded from those events (the projections, which the store
   does not know) can drop it and still equal a fold of the events that remain;
4. removes the key again before committing.

The last step also appends one ``retention.compacted`` event, handed to ``fold`` in the same
transaction (with nothing to remove, that is the only step). Bounds are whole hours of event time
(the cutoff is rounded down to the hour): ``top_k`` counts by the hour, and a bucket is dropped only
when every call in it is gone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import apsw

from harness.events import Envelope, RetentionCompacted, ToolCallCompleted, ToolCatalogFetched
from harness.store.log import append, envelopes_for, last_position
from harness.store.schema import RETENTION_CUTOFF_KEY

HOUR = 3600.0
Forget = Callable[[apsw.Cursor, float], object]
"""Called inside each step's transaction with the step's bound, after its events are deleted."""

Fold = Callable[[apsw.Cursor, Sequence[Envelope]], object]
"""Called with the appended ``retention.compacted`` envelope, inside the last step's transaction."""

STEP_EVENTS = 20_000
"""Events deleted per step at most (a single hour holding more is still one step)."""


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction did; ``position`` is that of its ``retention.compacted`` event."""

    older_than: float
    events_removed: int
    calls_removed: int
    catalogs_kept: int
    steps: int
    seconds: float
    position: int


def _kept(conn: apsw.Connection) -> list[int]:
    rows = conn.execute(
        "SELECT max(position) FROM events WHERE name = ? GROUP BY json_extract(data, '$.upstream')",
        (ToolCatalogFetched.STORED_NAME,),
    )
    return sorted(int(p) for (p,) in rows)


def _next_bound(conn: apsw.Connection, done: float, cutoff: float, kept_json: str, step: int) -> float | None:
    """The next step's bound (a whole hour ≤ cutoff), or None when nothing is left to remove."""
    first = conn.execute(
        "SELECT min(ts) FROM events WHERE ts >= ? AND ts < ?"
        " AND position NOT IN (SELECT value FROM json_each(?))",
        (done, cutoff, kept_json),
    ).fetchone()
    if first is None or first[0] is None:
        return None
    far = conn.execute(
        "SELECT ts FROM events WHERE ts >= ? AND ts < ? ORDER BY ts LIMIT 1 OFFSET ?", (done, cutoff, step)
    ).fetchone()
    bound = cutoff if far is None else math.floor(float(far[0]) / HOUR) * HOUR
    if bound <= float(first[0]):
        bound = math.floor(float(first[0]) / HOUR) * HOUR + HOUR
    return min(bound, cutoff)


def _remove(cursor: apsw.Cursor, bound: float, kept_json: str, forget: Forget, totals: list[int]) -> None:
    """One step, inside the caller's transaction: delete events before ``bound``, then forget them."""
    cursor.execute("DELETE FROM temp.retention_removed")
    cursor.execute(
        "INSERT INTO temp.retention_removed SELECT position FROM events"
        " WHERE ts < ? AND position NOT IN (SELECT value FROM json_each(?))",
        (bound, kept_json),
    )
    totals[0] += int(cursor.execute("SELECT count(*) FROM temp.retention_removed").get)
    totals[1] += int(
        cursor.execute(
            "SELECT count(*) FROM events WHERE name = ?"
            " AND position IN (SELECT position FROM temp.retention_removed)",
            (ToolCallCompleted.STORED_NAME,),
        ).get
    )
    cursor.execute("INSERT INTO store_meta(key, value) VALUES (?, ?)", (RETENTION_CUTOFF_KEY, repr(bound)))
    cursor.execute("DELETE FROM events WHERE position IN (SELECT position FROM temp.retention_removed)")
    cursor.execute("DELETE FROM store_meta WHERE key = ?", (RETENTION_CUTOFF_KEY,))
    forget(cursor, bound)
    cursor.execute("DELETE FROM temp.retention_removed")


def compact(
    conn: apsw.Connection,
    *,
    older_than: float,
    forget: Forget,
    fold: Fold,
    between_steps: Callable[[], object] | None = None,
    step_events: int = STEP_EVENTS,
    clock: Callable[[], float] = time.time,
) -> CompactionResult:
    """Remove events with ``ts`` before ``older_than`` (rounded down to the hour) and their rows.

    Must run on the writer's connection, with everything ``fold`` feeds caught up (the writer's is). The
    latest ``upstream.tool_catalog_fetched`` of each upstream is kept whatever its age. Appends a
    ``retention.compacted`` event (event time from ``clock``) in the last step's transaction.
    """
    started = time.perf_counter()
    cutoff = math.floor(older_than / HOUR) * HOUR
    kept = _kept(conn)
    kept_json = "[" + ",".join(map(str, kept)) + "]"
    catalogs_kept = int(
        conn.execute(
            "SELECT count(*) FROM events WHERE ts < ? AND position IN (SELECT value FROM json_each(?))",
            (cutoff, kept_json),
        ).get
    )
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS retention_removed(position INTEGER PRIMARY KEY)")
    totals = [0, 0]  # events removed, calls removed
    steps = 0
    done = -math.inf
    position = 0
    while position == 0:
        bound = _next_bound(conn, done, cutoff, kept_json, step_events)
        with conn:
            cursor = conn.cursor()
            if bound is not None:
                _remove(cursor, bound, kept_json, forget, totals)
                steps += 1
                done = bound
            if bound is None or bound >= cutoff:  # the last step records the compaction
                event = RetentionCompacted(
                    ts=clock(),
                    older_than=cutoff,
                    events_removed=totals[0],
                    calls_removed=totals[1],
                    catalogs_kept=catalogs_kept,
                    seconds=round(time.perf_counter() - started, 6),
                )
                envelopes = envelopes_for([event], last_position(conn) + 1)
                append(cursor, envelopes)
                fold(cursor, envelopes)
                position = envelopes[0].position
        if position == 0 and between_steps is not None:
            between_steps()
    return CompactionResult(
        older_than=cutoff,
        events_removed=totals[0],
        calls_removed=totals[1],
        catalogs_kept=catalogs_kept,
        steps=steps,
        seconds=time.perf_counter() - started,
        position=position,
    )
