"""Helpers for projection tests: writing logs through the real writer, snapshotting tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.events import Event

PROJECTION_TABLES = (
    "call_log",
    "top_k_hourly",
    "runs",
    "tool_index",
    "tool_terms",
    "tool_upstreams",
    "upstreams",
    "projection_checkpoints",
    "events",
)
CATALOGS = Path(__file__).parents[4] / "shared" / "data" / "tool-catalogs"
"""The team's real catalogues (shared/ lies beside the repository, in CI too)."""


def tool(name: str, description: str = "", params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": params or {}},
    }


def write_log(path: Path, events: Sequence[Event], batch: int = 50) -> None:
    """Commit ``events`` through the real writer, ``batch`` per transaction."""
    ref = LogWriterActor.start(path, EventIntake())
    try:
        proxy = ref.proxy()
        for start in range(0, len(events), batch):
            proxy.write(list(events[start : start + batch])).get(timeout=30)
    finally:
        ref.stop(timeout=30)


def snapshot(path: Path, tables: Sequence[str] = PROJECTION_TABLES) -> dict[str, list[tuple[Any, ...]]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        conn.close()


def memory_store() -> apsw.Connection:
    """An in-memory store with every projection installed (unit tests' fast path)."""
    from harness.projections import all_projections, install
    from harness.store.schema import _LOG_DDL, SCHEMA_VERSION, STORE_FORMAT

    conn = apsw.Connection(":memory:")
    conn.execute(_LOG_DDL)
    conn.execute(
        "INSERT INTO store_meta(key, value) VALUES ('format', ?), ('schema_version', ?)",
        (STORE_FORMAT, str(SCHEMA_VERSION)),
    )
    install(conn, all_projections())
    return conn


def fold_into(conn: apsw.Connection, events: Sequence[Event]) -> None:
    """Append and fold ``events`` in one transaction, as the writer does."""
    from harness.projections import all_projections, fold
    from harness.store import append, envelopes_for, last_position

    envelopes = envelopes_for(list(events), last_position(conn) + 1)
    with conn:
        cursor = conn.cursor()
        append(cursor, envelopes)
        fold(cursor, all_projections(), envelopes)
