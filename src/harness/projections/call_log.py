"""The ``call_log`` projection: one row per tool call, with the ADR's fields."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import apsw

from harness.events import Envelope, ToolCallCompleted
from harness.projections.base import Folding

COLUMNS: tuple[str, ...] = (
    "position",
    "ts",
    "latency_ms",
    "harness",
    "run_id",
    "adapter",
    "model",
    "config_hash",
    "upstream",
    "tool",
    "tier",
    "args_hash",
    "args",
    "args_truncated",
    "args_bytes",
    "outcome",
    "error_reason",
    "response_bytes",
    "response_tokens_est",
    "trace_id",
    "span_id",
    "session_id",
    "exposed_name",
    "via_call_tool",
    "request_id",
)

_DDL = """
CREATE TABLE call_log(
    position            INTEGER PRIMARY KEY,  -- the event's position in the log
    ts                  TEXT    NOT NULL,     -- ISO-8601 UTC, milliseconds, Z (see TS_SQL)
    latency_ms          REAL    NOT NULL,
    harness             TEXT,                 -- the token's owner; NULL when unattributed
    run_id              TEXT,
    adapter             TEXT,
    model               TEXT,
    config_hash         TEXT,
    upstream            TEXT    NOT NULL,     -- upstream key, or 'harness' for gateway tools
    tool                TEXT    NOT NULL,     -- the tool's own name, not namespaced
    tier                TEXT    NOT NULL,
    args_hash           TEXT,
    args                TEXT,                 -- per call_log_args; NULL when not stored; always JSON
    args_truncated      INTEGER NOT NULL,     -- 1 when args was cut to fit 4 KiB
    args_bytes          INTEGER,              -- size of the arguments as sent; NULL when unknown
    outcome             TEXT    NOT NULL,
    error_reason        TEXT,
    response_bytes      INTEGER NOT NULL,
    response_tokens_est INTEGER NOT NULL,
    trace_id            TEXT    NOT NULL,
    span_id             TEXT    NOT NULL,
    session_id          TEXT    NOT NULL,
    exposed_name        TEXT    NOT NULL,     -- the name the agent called, as its session listed it
    via_call_tool       INTEGER,              -- 1: through call_tool; NULL: not recorded (v2 events)
    request_id          TEXT                  -- the JSON-RPC id as JSON text
);
CREATE INDEX call_log_ts ON call_log(ts);                        -- harness calls --since
CREATE INDEX call_log_harness_ts ON call_log(harness, ts);        -- per harness; top_k's window edges
CREATE INDEX call_log_upstream_tool ON call_log(upstream, tool);  -- tool usage
CREATE INDEX call_log_session ON call_log(session_id, position);  -- sessions, search hit rate
CREATE INDEX call_log_run ON call_log(run_id, position);          -- runs, trajectories
"""

TS_SQL = "replace(datetime({}, 'unixepoch', 'subsec'), ' ', 'T') || 'Z'"
"""How ``call_log.ts`` is made from event time, milliseconds rounded to nearest: the text of
``strftime('%Y-%m-%dT%H:%M:%fZ', ts, 'unixepoch')``, cheaper because it parses no format
(bench/README.md)."""

_FIELDS = COLUMNS[2:]  # every column after position and ts is the event field of the same name
_INSERT_FROM_LOG = (
    f"INSERT INTO call_log({', '.join(COLUMNS)}) SELECT position, {TS_SQL.format('ts')}, "
    + ", ".join(f"data ->> '{f}'" for f in _FIELDS)
    + " FROM events WHERE position BETWEEN ? AND ? AND name = ? AND version = ?"
)
"""The fold of stored rows. ``data ->> 'field'`` is ``json_extract(data, '$.field')`` (same values,
the same SQL types) without parsing a path per value: ~10% less work for the batch."""
_FIELD_VALUES = operator.itemgetter(*_FIELDS)
_INSERT = f"INSERT INTO call_log({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


_day_cache: list[tuple[int, str]] = [(-(2**62), "")]
_second_cache: list[tuple[int, str]] = [(-(2**62), "")]
"""(day, "YYYY-MM-DDT") and (second, "YYYY-MM-DDTHH:MM:SS.") pairs, each replaced whole so threads
never see half an update."""

_JD_EPOCH_MS = 210_866_760_000_000
"""The Unix epoch as a Julian day number in milliseconds, as SQLite's date functions count."""


def iso_ms(ts: float) -> str:
    """Event time as ISO-8601 UTC with milliseconds and a Z, exactly as SQLite's ``TS_SQL`` makes it.

    SQLite rounds to the nearest millisecond as ``(int64)(ts * 1000.0 + JD_EPOCH_MS + 0.5)``; the
    same double arithmetic here gives the same text, so the Python and the SQL fold paths agree.
    """
    second, millis = divmod(int(ts * 1000.0 + _JD_EPOCH_MS + 0.5) - _JD_EPOCH_MS, 1000)
    cached, prefix = _second_cache[0]
    if cached != second:
        day, in_day = divmod(second, 86400)
        cached_day, day_prefix = _day_cache[0]
        if cached_day != day:
            day_prefix = datetime.fromtimestamp(day * 86400, UTC).strftime("%Y-%m-%dT")
            _day_cache[0] = (day, day_prefix)
        hours, rest = divmod(in_day, 3600)
        prefix = f"{day_prefix}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}."
        _second_cache[0] = (second, prefix)
    return f"{prefix}{millis:03d}Z"


class CallLogProjection(
    Folding, name="call_log", version=4, handles={ToolCallCompleted.STORED_NAME}, ddl=_DDL
):
    """Folds ``tool_call.completed`` events into ``call_log``.

    Version 2 added the ``call_log_session`` index; version 3 lets ``args_hash`` be null
    (``call_log_args = "none"`` stores neither the arguments nor their hash); version 4 adds
    ``args_truncated`` and ``args_bytes``; ``exposed_name``, ``via_call_tool``, ``request_id`` and
    the ``call_log_run`` index.
    """

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Insert one row per call event.

        A batch at the current version (replay, catch-up) is folded by ``apply_stored``, as the live
        writer's batches are. Rows of an older version are decoded, upcast and bound from Python;
        ``ts`` is formatted identically by both paths (``iso_ms`` / ``TS_SQL``) and JSON numbers
        round-trip exactly, so both give the same rows.
        """
        if all(e.version == ToolCallCompleted.VERSION for e in envelopes):
            self.apply_stored(cursor, envelopes[0].position, envelopes[-1].position, {})
            return
        fields = _FIELD_VALUES  # one C call per row: the event's fields in column order
        rows = []
        for env in envelopes:
            ev = env.event
            assert isinstance(ev, ToolCallCompleted)
            rows.append((env.position, iso_ms(ev.ts), *fields(ev.__dict__)))
        cursor.executemany(_INSERT, rows)

    def apply_stored(self, cursor: apsw.Cursor, first: int, last: int, folded: Mapping[str, int]) -> bool:
        """One INSERT … SELECT of the rows straight from the stored JSON (they were appended in this
        transaction): live and replay run the same statement, no Python runs per event, and SQLite
        does the work without the GIL, so the loop thread keeps running meanwhile."""
        cursor.execute(
            _INSERT_FROM_LOG, (first, last, ToolCallCompleted.STORED_NAME, ToolCallCompleted.VERSION)
        )
        return True

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Delete the rows of the calls whose events retention removed."""
        cursor.execute("DELETE FROM call_log WHERE position IN (SELECT position FROM temp.retention_removed)")
