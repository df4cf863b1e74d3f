"""The ``call_log`` projection: one row per tool call, with the ADR's fields."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

import apsw

from harness.events import Envelope, ToolCallCompleted

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
    "outcome",
    "error_reason",
    "response_bytes",
    "response_tokens_est",
    "trace_id",
    "span_id",
    "session_id",
)

_DDL = """
CREATE TABLE call_log(
    position            INTEGER PRIMARY KEY,  -- the event's position in the log
    ts                  TEXT    NOT NULL,     -- ISO-8601 UTC, milliseconds, Z
    latency_ms          REAL    NOT NULL,
    harness             TEXT,                 -- the token's owner; NULL when unattributed
    run_id              TEXT,
    adapter             TEXT,
    model               TEXT,
    config_hash         TEXT,
    upstream            TEXT    NOT NULL,     -- upstream key, or 'harness' for gateway tools
    tool                TEXT    NOT NULL,     -- the tool's own name, not namespaced
    tier                TEXT    NOT NULL,
    args_hash           TEXT    NOT NULL,
    args                TEXT,                 -- per call_log_args; NULL when not stored
    outcome             TEXT    NOT NULL,
    error_reason        TEXT,
    response_bytes      INTEGER NOT NULL,
    response_tokens_est INTEGER NOT NULL,
    trace_id            TEXT    NOT NULL,
    span_id             TEXT    NOT NULL,
    session_id          TEXT    NOT NULL
);
CREATE INDEX call_log_ts ON call_log(ts);                        -- harness calls --since
CREATE INDEX call_log_harness_ts ON call_log(harness, ts);        -- per harness; top_k's window edges
CREATE INDEX call_log_upstream_tool ON call_log(upstream, tool);  -- tool usage
CREATE INDEX call_log_session ON call_log(session_id, position);  -- sessions, search hit rate
"""

_INSERT = f"INSERT INTO call_log({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


_last_second: list[tuple[int, str]] = [(-(2**62), "")]
"""One (second, prefix) pair, replaced whole so threads never see half an update."""


def iso_ms(ts: float) -> str:
    """Event time as ISO-8601 UTC with milliseconds and a Z (the second's prefix is cached)."""
    frac, whole = math.modf(ts)
    micros = round(frac * 1e6)  # as datetime.fromtimestamp rounds
    second = int(whole)
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    elif micros < 0:
        second, micros = second - 1, micros + 1_000_000
    millis = micros // 1000
    cached_second, prefix = _last_second[0]
    if cached_second != second:
        prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        _last_second[0] = (second, prefix)
    return f"{prefix}{millis:03d}Z"


class CallLogProjection:
    """Folds ``tool_call.completed`` events into ``call_log``.

    Version 2 added the ``call_log_session`` index.
    """

    name: str = "call_log"
    version: int = 2
    handles: frozenset[str] = frozenset({ToolCallCompleted.STORED_NAME})
    ddl: str = _DDL
    tables: tuple[str, ...] = ("call_log",)

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Insert one row per call event."""
        rows = []
        for env in envelopes:
            ev = env.event
            assert isinstance(ev, ToolCallCompleted)
            rows.append(
                (
                    env.position,
                    iso_ms(ev.ts),
                    ev.latency_ms,
                    ev.harness,
                    ev.run_id,
                    ev.adapter,
                    ev.model,
                    ev.config_hash,
                    ev.upstream,
                    ev.tool,
                    ev.tier,
                    ev.args_hash,
                    ev.args,
                    ev.outcome,
                    ev.error_reason,
                    ev.response_bytes,
                    ev.response_tokens_est,
                    ev.trace_id,
                    ev.span_id,
                    ev.session_id,
                )
            )
        cursor.executemany(_INSERT, rows)

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Delete the rows of the calls whose events retention removed."""
        cursor.execute("DELETE FROM call_log WHERE position IN (SELECT position FROM temp.retention_removed)")
