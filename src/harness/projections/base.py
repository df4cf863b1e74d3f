"""What a projection is, and folding a batch of envelopes into projections with checkpoints."""

from __future__ import annotations

import itertools
import operator
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

import apsw

from harness.events import Envelope, Event
from harness.store import envelopes_at, to_envelope
from harness.store.retention import STEP_EVENTS, CompactionResult, compact

T = TypeVar("T")

REMOVED_TABLE = "temp.retention_removed"
"""During a compaction step: the positions of the events that step deleted (``position`` column)."""


class Projection(Protocol):
    """A fold of the event log into tables: a name, a schema version, the events it handles.

    ``apply`` receives, in position order, only the envelopes whose stored name is in ``handles``
    and only issues SQL on the cursor; it runs inside the writer's transaction. ``forget`` runs in a
    retention step's transaction after the log lost the events older than ``before`` (a whole hour
    of event time; their positions are in ``temp.retention_removed``): afterwards the tables must
    equal a fold of the events that remain. A rebuild drops every table ``ddl`` creates
    (:func:`tables_of`).
    """

    name: str
    version: int
    handles: frozenset[str]
    ddl: str

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Fold these envelopes into the projection's tables."""
        ...

    def apply_stored(self, cursor: apsw.Cursor, first: int, last: int, folded: Mapping[str, int]) -> bool:
        """Fold the rows of ``events`` with a handled name in ``[first, last]``, all at the current
        version and all of them unfolded, in SQL from the stored JSON; False if this projection
        cannot (then it gets ``apply`` with envelopes). ``folded``: how far each projection is
        folded in this transaction so far (one may build on another's rows)."""
        ...

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Drop what the events removed by retention contributed."""
        ...


_CREATE_TABLE = re.compile(r"CREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)", re.I)


def tables_of(ddl: str) -> list[str]:
    """The tables a projection's DDL creates, in order."""
    return _CREATE_TABLE.findall(ddl)


class Folding:
    """Base of the gateway's projections: what :class:`Projection` asks for, given as class keywords
    (``class TopK(Folding, name="top_k", version=1, handles=[...], ddl=DDL)``)."""

    name: str
    version: int
    handles: frozenset[str]
    ddl: str

    def __init_subclass__(cls, *, name: str, version: int, handles: Iterable[str], ddl: str) -> None:
        super().__init_subclass__()
        cls.name, cls.version, cls.handles, cls.ddl = name, version, frozenset(handles), ddl

    def apply_stored(self, cursor: apsw.Cursor, first: int, last: int, folded: Mapping[str, int]) -> bool:
        """Folding stored rows in SQL is optional: by default a projection gets envelopes."""
        return False


class ProjectionVersionError(Exception):
    """A projection in the store has another schema version than the code: rebuild it by replay."""


def install(conn: apsw.Connection, projections: Sequence[Projection], *, rebuild: bool = True) -> int:
    """Create missing projection tables; return the lowest checkpoint (events after it need folding).

    A projection stored at another version than the code's (``rebuild``, the default), or missing,
    is built from the whole log in one transaction with its old tables' removal: a reader sees the
    old tables until the new ones are whole, never an empty or missing table (projections are
    rebuilt by replay, never migrated). With ``rebuild=False`` another version is an error naming
    ``harness replay``.
    """
    lowest: int | None = None
    for proj in projections:
        with conn:
            row = conn.execute(
                "SELECT version, position FROM projection_checkpoints WHERE name = ?", (proj.name,)
            ).fetchone()
            if row is not None and int(row[0]) != proj.version:
                if not rebuild:
                    raise ProjectionVersionError(
                        f"projection {proj.name!r} is at version {row[0]} in the store, the code has "
                        f"{proj.version}: rebuild with `harness replay --to NEW_FILE`"
                    )
                for table in reversed(tables_of(proj.ddl)):
                    conn.execute(f'DROP TABLE IF EXISTS "{table}"')
                conn.execute("DELETE FROM projection_checkpoints WHERE name = ?", (proj.name,))
                row = None
            if row is None:
                conn.execute(proj.ddl)
                conn.execute(
                    "INSERT INTO projection_checkpoints(name, version, position) VALUES (?, ?, 0)",
                    (proj.name, proj.version),
                )
                position = _fold_whole_log(conn.cursor(), proj)
            else:
                position = int(row[1])
        lowest = position if lowest is None else min(lowest, position)
    return lowest or 0


REFOLD_BATCH = 4096
"""Envelopes per ``fold`` call when a projection is built from the whole log."""


def _fold_whole_log(cursor: apsw.Cursor, proj: Projection) -> int:
    """Fold every stored event ``proj`` handles into it (inside the caller's transaction); its
    checkpoint ends at the newest position. Returns that position."""
    names = sorted(proj.handles)
    marks = ",".join("?" * len(names))
    rows = cursor.connection.execute(
        f"SELECT position, ts, name, version, correlation, data FROM events WHERE name IN ({marks})"
        " ORDER BY position",
        names,
    )
    batch: list[Envelope] = []
    for row in rows:
        batch.append(to_envelope(row))
        if len(batch) >= REFOLD_BATCH:
            fold(cursor, [proj], batch)
            batch = []
    fold(cursor, [proj], batch)
    last = int(cursor.execute("SELECT coalesce(max(position), 0) FROM events").get)
    cursor.execute(_ADVANCE, (last, proj.name))
    return last


def _grouped(names: Iterable[str], items: Iterable[T]) -> dict[str, list[T]]:
    """``items`` grouped by the name beside each, in their order."""
    groups: dict[str, list[T]] = {}
    for name, item in zip(names, items, strict=True):
        group = groups.get(name)
        if group is None:
            groups[name] = [item]
        else:
            group.append(item)
    return groups


def fold(cursor: apsw.Cursor, projections: Sequence[Projection], envelopes: Sequence[Envelope]) -> None:
    """Fold a batch into every projection and advance each checkpoint (inside the caller's txn).

    Each projection sees only envelopes past its own checkpoint, so a partly folded store catches up
    without applying anything twice. The batch is split by stored name once, so a projection's share
    costs what it handles, not the batch's length.
    """
    if not envelopes:
        return
    last = envelopes[-1].position
    first = envelopes[0].position
    by_name = _grouped((env.name for env in envelopes), envelopes)
    checkpoints = {str(name): int(position) for name, position in cursor.execute(_CHECKPOINTS)}
    for proj in projections:
        after = checkpoints.get(proj.name, 0)
        if after >= last:
            continue
        shares = [by_name[name] for name in proj.handles if name in by_name]
        if len(shares) == 1:
            mine = shares[0]
        else:  # several kinds of event: back in position order
            mine = sorted(itertools.chain.from_iterable(shares), key=_POSITION)
        if after >= first:
            mine = [e for e in mine if e.position > after]
        if mine:
            proj.apply(mine, cursor)
        cursor.execute(_ADVANCE, (last, proj.name))


def fold_appended(
    cursor: apsw.Cursor, projections: Sequence[Projection], events: Sequence[Event], first_position: int
) -> None:
    """:func:`fold` for ``events`` the caller has just appended (same transaction) at consecutive
    positions from ``first_position``: the live writer's batch.

    The same checkpoints and the same result as ``fold`` over their envelopes, without an envelope
    per event: a projection that folds stored rows in SQL (``apply_stored``: ``call_log``,
    ``top_k``) gets the range of its events, and only the others get envelopes, for their events
    alone (catalogues, lifecycle: few), so a batch being drained is not a batch of envelopes for the
    garbage collector to track and scan (bench/README.md).
    """
    if not events:
        return
    last = first_position + len(events) - 1
    by_name = _grouped((event.STORED_NAME for event in events), range(len(events)))
    checkpoints = {str(name): int(position) for name, position in cursor.execute(_CHECKPOINTS)}
    advanced: list[str] = []
    for proj in projections:
        after = checkpoints.get(proj.name, 0)
        if after >= last:
            continue
        shares = [by_name[name] for name in proj.handles if name in by_name]
        mine = shares[0] if len(shares) == 1 else sorted(itertools.chain.from_iterable(shares))
        if after >= first_position:
            mine = [i for i in mine if first_position + i > after]
        if mine and not proj.apply_stored(
            cursor, first_position + mine[0], first_position + mine[-1], checkpoints
        ):
            proj.apply(envelopes_at(events, first_position, mine), cursor)
        checkpoints[proj.name] = last
        advanced.append(proj.name)
    if advanced:  # one statement for all: each SQLite statement is a GIL hand-off for the writer
        marks = ",".join("?" * len(advanced))
        cursor.execute(
            f"UPDATE projection_checkpoints SET position = ? WHERE name IN ({marks})", (last, *advanced)
        )


_CHECKPOINTS = "SELECT name, position FROM projection_checkpoints"
_ADVANCE = "UPDATE projection_checkpoints SET position = ? WHERE name = ?"
_POSITION = operator.attrgetter("position")


def compact_folded(
    conn: apsw.Connection,
    *,
    older_than: float,
    projections: Sequence[Projection],
    between_steps: Callable[[], object] | None = None,
    step_events: int = STEP_EVENTS,
    clock: Callable[[], float] = time.time,
) -> CompactionResult:
    """Retention (``harness.store.retention.compact``) on a store whose ``projections`` are folded in
    it: each step makes them forget the removed events, and the ``retention.compacted`` event is
    folded in the last step's transaction."""

    def forget(cursor: apsw.Cursor, before: float) -> None:
        for projection in projections:
            projection.forget(cursor, before)

    return compact(
        conn,
        older_than=older_than,
        forget=forget,
        fold=lambda cursor, envelopes: fold(cursor, projections, envelopes),
        between_steps=between_steps,
        step_events=step_events,
        clock=clock,
    )
