"""Read-only access to a store for the CLI, evals and notebooks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from harness.projections.call_log import COLUMNS
from harness.store import open_read_only


class StoreView:
    """A read-only view of one store file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: apsw.Connection = open_read_only(path)

    def calls(
        self,
        *,
        harness: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        after_position: int = 0,
    ) -> list[dict[str, Any]]:
        """Call-log rows, oldest first: the ``limit`` most recent matching ones (all if None).

        ``since`` is an ISO-8601 UTC time (``call_log.ts`` compares as text).
        """
        where = ["position > ?"]
        args: list[Any] = [after_position]
        if harness is not None:
            where.append("harness = ?")
            args.append(harness)
        if since is not None:
            where.append("ts >= ?")
            args.append(since)
        sql = f"SELECT {', '.join(COLUMNS)} FROM call_log WHERE {' AND '.join(where)} ORDER BY position DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in self.conn.execute(sql, args)]
        rows.reverse()
        return rows

    def iter_events(self) -> Iterator[tuple[int, float, str, int, str, str]]:
        """Every stored event row in position order."""
        yield from self.conn.execute(
            "SELECT position, ts, name, version, correlation, data FROM events ORDER BY position"
        )

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def open_store(path: str | Path) -> StoreView:
    """Open a store read-only (it may be live: WAL lets readers run beside the daemon)."""
    return StoreView(Path(path).expanduser())
