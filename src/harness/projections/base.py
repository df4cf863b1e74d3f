"""What a projection is, and folding a batch of envelopes into projections with checkpoints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import apsw

from harness.events import Envelope


class Projection(Protocol):
    """A fold of the event log into tables: a name, a schema version, the events it handles.

    ``apply`` receives, in position order, only the envelopes whose stored name is in ``handles``
    and only issues SQL on the cursor; it runs inside the writer's transaction.
    """

    name: str
    version: int
    handles: frozenset[str]
    ddl: str
    tables: tuple[str, ...]

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Fold these envelopes into the projection's tables."""
        ...


class ProjectionVersionError(Exception):
    """A projection in the store has another schema version than the code: rebuild it by replay."""


def install(conn: apsw.Connection, projections: Sequence[Projection]) -> int:
    """Create missing projection tables; return the lowest checkpoint (events after it need folding).

    A projection stored at another version is an error naming it: projections are never migrated,
    they are rebuilt by ``harness replay``.
    """
    lowest: int | None = None
    with conn:
        for proj in projections:
            row = conn.execute(
                "SELECT version, position FROM projection_checkpoints WHERE name = ?", (proj.name,)
            ).fetchone()
            if row is None:
                conn.execute(proj.ddl)
                conn.execute(
                    "INSERT INTO projection_checkpoints(name, version, position) VALUES (?, ?, 0)",
                    (proj.name, proj.version),
                )
                position = 0
            elif int(row[0]) != proj.version:
                raise ProjectionVersionError(
                    f"projection {proj.name!r} is at version {row[0]} in the store, the code has "
                    f"{proj.version}: rebuild with `harness replay --to NEW_FILE`"
                )
            else:
                position = int(row[1])
            lowest = position if lowest is None else min(lowest, position)
    return lowest or 0


def fold(cursor: apsw.Cursor, projections: Sequence[Projection], envelopes: Sequence[Envelope]) -> None:
    """Fold a batch into every projection and advance each checkpoint (inside the caller's txn).

    Each projection sees only envelopes past its own checkpoint, so a partly folded store catches up
    without applying anything twice.
    """
    if not envelopes:
        return
    last = envelopes[-1].position
    for proj in projections:
        done = cursor.execute(
            "SELECT position FROM projection_checkpoints WHERE name = ?", (proj.name,)
        ).fetchone()
        after = int(done[0]) if done else 0
        if after >= last:
            continue
        mine = [e for e in envelopes if e.position > after and e.name in proj.handles]
        if mine:
            proj.apply(mine, cursor)
        cursor.execute("UPDATE projection_checkpoints SET position = ? WHERE name = ?", (last, proj.name))
