"""The ``top_k`` projection: per harness, the tools it called most, kept as hourly counts.

``top_k_hourly`` holds, per (harness, hour of event time, upstream, tool), how many calls counted
and the position of the latest. ``top_tools`` sums the whole hours inside the window and counts the
two partial hours at its edges exactly from ``call_log``, so the window is exact to the event.

What counts: calls with outcome ``ok`` or ``tool_error`` (the tool ran; a tool error is still the
agent choosing that tool), by an attributed harness, to an upstream tool. Gateway and facade tools
(upstream ``harness``) and calls that never reached a tool (denied, unknown, circuit open, timeout,
upstream error, cancelled) do not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import apsw

from harness.events import Envelope, ToolCallCompleted
from harness.naming import GATEWAY_UPSTREAM
from harness.projections.base import Folding
from harness.projections.call_log import CallLogProjection
from harness.vocabulary import TOOL_RAN_OUTCOMES, outcome_in

COUNTED_OUTCOMES: tuple[str, ...] = TOOL_RAN_OUTCOMES
HOUR = 3600.0

_DDL = """
CREATE TABLE top_k_hourly(
    harness       TEXT    NOT NULL,
    hour          INTEGER NOT NULL,  -- floor(ts / 3600) of event time
    upstream      TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    calls         INTEGER NOT NULL,
    last_position INTEGER NOT NULL,  -- the latest counted call's event position
    PRIMARY KEY (harness, hour, upstream, tool)
) WITHOUT ROWID;
"""

_UPSERT = """
INSERT INTO top_k_hourly(harness, hour, upstream, tool, calls, last_position) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(harness, hour, upstream, tool) DO UPDATE SET
    calls = calls + excluded.calls,
    last_position = max(last_position, excluded.last_position)
"""


_RAN = outcome_in(TOOL_RAN_OUTCOMES)
_C_RAN = outcome_in(TOOL_RAN_OUTCOMES, "c.outcome")

_UPSERT_FROM_LOG = f"""
INSERT INTO top_k_hourly(harness, hour, upstream, tool, calls, last_position)
SELECT harness, hour, upstream, tool, count(*), max(position) FROM (
    SELECT data ->> 'harness' AS harness, CAST(floor(ts / 3600.0) AS INTEGER) AS hour,
           data ->> 'upstream' AS upstream, data ->> 'tool' AS tool,
           data ->> 'outcome' AS outcome, position
    FROM events WHERE position BETWEEN ? AND ? AND name = ? AND version = ?
) WHERE harness IS NOT NULL AND {_RAN} AND upstream != 'harness'
GROUP BY harness, hour, upstream, tool
ON CONFLICT(harness, hour, upstream, tool) DO UPDATE SET
    calls = calls + excluded.calls,
    last_position = max(last_position, excluded.last_position)
"""


_UPSERT_FROM_CALL_LOG = f"""
INSERT INTO top_k_hourly(harness, hour, upstream, tool, calls, last_position)
SELECT c.harness, CAST(floor(e.ts / 3600.0) AS INTEGER) AS hour, c.upstream, c.tool, count(*), max(c.position)
FROM call_log AS c JOIN events AS e ON e.position = c.position
WHERE c.position BETWEEN ? AND ?
  AND c.harness IS NOT NULL AND {_C_RAN} AND c.upstream != 'harness'
GROUP BY 1, 2, 3, 4
ON CONFLICT(harness, hour, upstream, tool) DO UPDATE SET
    calls = calls + excluded.calls,
    last_position = max(last_position, excluded.last_position)
"""
"""The batch's counted calls from the ``call_log`` rows just folded (columns, not JSON), the hour
from the event's ``ts`` column: what ``_UPSERT_FROM_LOG`` computes, without parsing JSON."""

_CALL_LOG_FOLDED = "SELECT position FROM projection_checkpoints WHERE name = ?"


class TopKProjection(Folding, name="top_k", version=1, handles={ToolCallCompleted.STORED_NAME}, ddl=_DDL):
    """Folds ``tool_call.completed`` events into hourly call counts per harness and tool."""

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Add the batch's counted calls to their hourly buckets (one upsert per bucket).

        A batch at the current version goes to ``apply_stored``; older rows (decoded and upcast) are
        counted in Python, with the same result.
        """
        version = ToolCallCompleted.VERSION
        if all(e.version == version for e in envelopes):
            folded = cursor.execute(_CALL_LOG_FOLDED, (CallLogProjection.name,)).fetchone()
            through = {CallLogProjection.name: int(folded[0])} if folded is not None else {}
            self.apply_stored(cursor, envelopes[0].position, envelopes[-1].position, through)
            return
        buckets: dict[tuple[str, int, str, str], list[int]] = {}
        for env in envelopes:
            ev = env.event
            assert isinstance(ev, ToolCallCompleted)
            f = ev.__dict__
            harness, upstream = f["harness"], f["upstream"]
            if harness is None or f["outcome"] not in COUNTED_OUTCOMES or upstream == GATEWAY_UPSTREAM:
                continue
            key = (harness, math.floor(f["ts"] / HOUR), upstream, f["tool"])
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [1, env.position]
            else:
                bucket[0] += 1
                bucket[1] = env.position  # envelopes come in position order
        if buckets:
            cursor.executemany(_UPSERT, [(*key, n, last) for key, (n, last) in buckets.items()])

    def apply_stored(self, cursor: apsw.Cursor, first: int, last: int, folded: Mapping[str, int]) -> bool:
        """Count the stored calls in ``[first, last]`` in one statement: from their ``call_log`` rows
        when ``call_log`` is folded through ``last`` (it folds first: always so in the writer and in
        replay), which hold exactly the event's fields, else from the stored JSON."""
        if folded.get(CallLogProjection.name, 0) >= last:
            cursor.execute(_UPSERT_FROM_CALL_LOG, (first, last))
        else:
            version = ToolCallCompleted.VERSION
            cursor.execute(_UPSERT_FROM_LOG, (first, last, ToolCallCompleted.STORED_NAME, version))
        return True

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Drop the hours before ``before`` (a whole hour: those buckets lost every call)."""
        cursor.execute("DELETE FROM top_k_hourly WHERE hour < ?", (math.floor(before / HOUR),))


def newest_ts(conn: apsw.Connection) -> float | None:
    """Event time of the newest event in the log (None for an empty log)."""
    row = conn.execute("SELECT max(ts) FROM events").fetchone()
    return float(row[0]) if row and row[0] is not None else None


def top_tools(
    conn: apsw.Connection,
    harness: str,
    k: int,
    *,
    as_of: float | None = None,
    window_days: float = 30,
) -> list[tuple[str, str]]:
    """The (upstream, tool) pairs ``harness`` called most in [as_of - window, as_of] of event time.

    ``as_of`` None means the newest event's time. Ties go to the more recently called tool (higher
    position), then by upstream and tool name. See the module docstring for what counts.
    """
    return [
        (up, tool) for up, tool, _n in tool_counts(conn, harness, k, as_of=as_of, window_days=window_days)
    ]


def tool_counts(
    conn: apsw.Connection,
    harness: str,
    k: int | None = None,
    *,
    as_of: float | None = None,
    window_days: float = 30,
) -> list[tuple[str, str, int]]:
    """Like :func:`top_tools`, with each tool's call count; ``k`` None gives every tool."""
    if k is not None and k <= 0:
        return []
    hi = newest_ts(conn) if as_of is None else as_of
    if hi is None:
        return []
    lo = hi - window_days * 86400.0
    totals: dict[tuple[str, str], list[int]] = {}

    def add(rows: apsw.Cursor) -> None:
        for upstream, tool, calls, last in rows:
            entry = totals.setdefault((upstream, tool), [0, 0])
            entry[0] += int(calls)
            entry[1] = max(entry[1], int(last))

    first_full = math.ceil(lo / HOUR)  # hours wholly inside [lo, hi]
    last_full = math.floor(hi / HOUR) - 1
    if first_full <= last_full:
        add(
            conn.execute(
                "SELECT upstream, tool, sum(calls), max(last_position) FROM top_k_hourly"
                " WHERE harness = ? AND hour BETWEEN ? AND ? GROUP BY upstream, tool",
                (harness, first_full, last_full),
            )
        )
        edges = [(lo, first_full * HOUR, False), ((last_full + 1) * HOUR, hi, True)]
    else:
        edges = [(lo, hi, True)]
    for start, end, closed in edges:
        add(_exact(conn, harness, start, end, closed))
    ranked = sorted(totals.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    if k is not None:
        ranked = ranked[:k]
    return [(up, tool, n) for (up, tool), (n, _last) in ranked]


def _exact(conn: apsw.Connection, harness: str, start: float, end: float, closed: bool) -> apsw.Cursor:
    """Counted calls of ``harness`` with event time in [start, end) (or [start, end]), from call_log."""
    from harness.projections.call_log import iso_ms

    upper = "<=" if closed else "<"
    return conn.execute(
        "SELECT c.upstream, c.tool, count(*), max(c.position) FROM call_log AS c"
        " JOIN events AS e ON e.position = c.position"
        " WHERE c.harness = ? AND c.ts >= ? AND c.ts <= ?"  # the index narrows (text, 1 ms slack) ...
        f" AND e.ts >= ? AND e.ts {upper} ?"  # ... and event time decides
        f" AND {_C_RAN} AND c.upstream != 'harness'"
        " GROUP BY c.upstream, c.tool",
        (harness, iso_ms(start - 0.001), iso_ms(end + 0.001), start, end),
    )
