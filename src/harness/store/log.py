"""Appending envelopes to the event log and reading them back in order."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import apsw

from harness.events import Envelope, Event, correlation_of, encode

_INSERT = "INSERT INTO events(position, ts, name, version, correlation, data) VALUES (?, ?, ?, ?, ?, ?)"

ROWS_PER_INSERT = 1_024
"""Rows one INSERT carries (6,144 parameters; its SQL, 14 KB, still fits APSW's statement cache, whose
limit is 16 KiB: preparing it costs more than running it)."""

_inserts: dict[int, str] = {}


def _insert_for(rows: int) -> str:
    sql = _inserts.get(rows)
    if sql is None:
        sql = _inserts[rows] = _INSERT + ",(?,?,?,?,?,?)" * (rows - 1)
    return sql


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
    return envelopes_at(events, first_position, range(len(events)))


def envelopes_at(events: Sequence[Event], first_position: int, indices: Sequence[int]) -> list[Envelope]:
    """Envelopes of some of ``events`` (by index), which sit at consecutive positions from
    ``first_position``."""
    return [
        Envelope(first_position + i, ev.STORED_NAME, ev.VERSION, correlation_of(ev), ev)
        for i, ev in ((i, events[i]) for i in indices)
    ]


StoredRow = tuple[int, float, str, int, str, str]
"""An ``events`` row: (position, ts, name, version, correlation, data)."""

ROW_WIDTH = 6
"""Columns of an ``events`` row, in ``StoredRow`` order."""


def event_values(events: Sequence[Event], first_position: int) -> list[Any]:
    """The ``events`` rows of events about to be appended at consecutive positions from
    ``first_position``, one after another in one flat list (``StoredRow`` order): each event
    serialized once, here (no I/O: any thread). Flat, because a tuple per row would be one more
    object per event for the garbage collector to track while the batch waits."""
    values: list[Any] = []
    add = values.extend
    for position, ev in enumerate(events, first_position):
        add((position, ev.ts, ev.STORED_NAME, ev.VERSION, correlation_of(ev), encode(ev)))
    return values


def append(cursor: apsw.Cursor, envelopes: Sequence[Envelope]) -> None:
    """Insert envelopes, each with its own position, name, version and correlation (inside the
    caller's transaction)."""
    rows = ((e.position, e.ts, e.name, e.version, e.correlation, encode(e.event)) for e in envelopes)
    append_values(cursor, list(itertools.chain.from_iterable(rows)))


def append_raw(cursor: apsw.Cursor, rows: Sequence[StoredRow]) -> None:
    """Insert stored rows as they are (replay copies events with their original positions)."""
    append_values(cursor, list(itertools.chain.from_iterable(rows)))


def append_values(cursor: apsw.Cursor, values: Sequence[Any]) -> None:
    """Insert rows given as one flat list of values (``event_values``).

    Up to ``ROWS_PER_INSERT`` rows go in one multi-row INSERT rather than one statement per row:
    SQLite releases the GIL for each statement it runs, and a thread that gives the GIL up while
    the event loop is busy waits up to the switch interval to get it back: per row, a batch would
    wait once per event while calls are being recorded; per ``ROWS_PER_INSERT`` rows, a few times
    (bench/README.md).
    """
    step = ROWS_PER_INSERT * ROW_WIDTH
    for start in range(0, len(values), step):
        chunk = values[start : start + step]
        cursor.execute(_insert_for(len(chunk) // ROW_WIDTH), chunk)


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
    conn: apsw.Connection,
    after: int = 0,
    since: float | None = None,
    until: float | None = None,
    name: str | None = None,
) -> Iterator[tuple[int, float, str, int, str, str]]:
    """Stored rows in position order, of one stored ``name`` when given: (position, ts, name,
    version, correlation, data)."""
    window, args = time_window(since, until)
    if name is not None:
        window += " AND name = ?"
        args.append(name)
    sql = f"SELECT position, ts, name, version, correlation, data FROM events WHERE position > ?{window}"
    yield from conn.execute(sql + " ORDER BY position", [after, *args])


def to_envelope(row: Sequence[Any]) -> Envelope:
    """Wrap one stored row in an envelope; its event is decoded (and upcast) when first used."""
    return Envelope.stored(*row)
