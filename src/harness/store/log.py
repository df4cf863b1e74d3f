"""Appending envelopes to the event log and reading them back in order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import apsw

from harness.events import Envelope, Event, correlation_of, encode

_INSERT = "INSERT INTO events(position, ts, name, version, correlation, data) VALUES (?, ?, ?, ?, ?, ?)"


def last_position(conn: apsw.Connection) -> int:
    """The highest position ever used: the newest stored event's, or a checkpoint's if higher.

    Checkpoints count because retention may have deleted the newest events' neighbours (never the
    compaction's own event, but a crash between compaction steps could leave the log short of its
    checkpoints); a position is never reused.
    """
    row = conn.execute(
        "SELECT max(coalesce((SELECT max(position) FROM events), 0),"
        " coalesce((SELECT max(position) FROM projection_checkpoints), 0))"
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def envelopes_for(events: Sequence[Event], first_position: int) -> list[Envelope]:
    """Wrap events in envelopes at consecutive positions starting at ``first_position``."""
    return [
        Envelope(first_position + i, ev.STORED_NAME, ev.VERSION, correlation_of(ev), ev)
        for i, ev in enumerate(events)
    ]


def append(cursor: apsw.Cursor, envelopes: Sequence[Envelope]) -> None:
    """Insert envelopes (inside the caller's transaction)."""
    cursor.executemany(
        _INSERT,
        [(e.position, e.ts, e.name, e.version, e.correlation, encode(e.event)) for e in envelopes],
    )


def append_raw(cursor: apsw.Cursor, rows: Sequence[tuple[int, float, str, int, str, str]]) -> None:
    """Insert stored rows as they are (replay copies events with their original positions)."""
    cursor.executemany(_INSERT, rows)


def time_window(since: float | None, until: float | None) -> tuple[str, list[object]]:
    """SQL conditions (each starting with `` AND``) and their arguments for ``since <= ts < until``."""
    sql, args = "", list[object]()
    if since is not None:
        sql += " AND ts >= ?"
        args.append(since)
    if until is not None:
        sql += " AND ts < ?"
        args.append(until)
    return sql, args


def read_rows(
    conn: apsw.Connection, after: int = 0, since: float | None = None, until: float | None = None
) -> Iterator[tuple[int, float, str, int, str, str]]:
    """Stored rows in position order: (position, ts, name, version, correlation, data)."""
    window, args = time_window(since, until)
    sql = f"SELECT position, ts, name, version, correlation, data FROM events WHERE position > ?{window}"
    yield from conn.execute(sql + " ORDER BY position", [after, *args])


def to_envelope(row: Sequence[Any]) -> Envelope:
    """Wrap one stored row in an envelope; its event is decoded (and upcast) when first used."""
    return Envelope.stored(*row)
