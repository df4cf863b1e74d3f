"""Reading the event log with code older than the store, and the store's versions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import apsw

from harness.events import Envelope, registered
from harness.projections import all_projections
from harness.store import StoreError, read_rows, to_envelope

Unknown = Literal["raise", "skip", "raw"]
"""What ``events()`` does with an event this code cannot decode (a newer version, or a stored name
it does not know): raise ``StoreError``, skip it, or yield it as a :class:`RawEvent`."""


@dataclass(frozen=True)
class RawEvent:
    """A stored event this code cannot decode, as it is stored."""

    position: int
    ts: float
    name: str
    version: int
    correlation: str
    data: dict[str, Any]
    """Its fields, parsed from the stored JSON."""


def decodable(name: str, version: int, known: dict[str, int]) -> bool:
    """Whether this code has the event's class at that version or a newer one."""
    current = known.get(name)
    return current is not None and version <= current


def read_events(
    conn: apsw.Connection, *, name: str | None, since: float | None, unknown: Unknown
) -> Iterator[Envelope | RawEvent]:
    """Stored events in position order; what this code cannot decode goes by ``unknown``."""
    if unknown not in ("raise", "skip", "raw"):
        raise ValueError(f"unknown= must be 'raise', 'skip' or 'raw', not {unknown!r}")
    known = {stored: cls.VERSION for stored, cls in registered().items()}
    for row in read_rows(conn, since=since, name=name):
        position, ts, stored, version, correlation, data = row
        if decodable(stored, version, known):
            yield to_envelope(row)
        elif unknown == "raw":
            yield RawEvent(position, ts, stored, version, correlation, json.loads(data))
        elif unknown == "raise":
            have = f"v{known[stored]}" if stored in known else "no such event"
            raise StoreError(
                f"event {stored!r} v{version} at position {position} is newer than this code ({have}): "
                "upgrade harness, or read with events(unknown='skip') or events(unknown='raw')"
            )


@dataclass(frozen=True)
class StoreVersions:
    """The store's schema and projection versions beside this code's."""

    schema: int
    """``store_meta.schema_version``."""
    projections: dict[str, int]
    """Projection name → its version in the store (those the store has)."""
    code_projections: dict[str, int]
    """Projection name → the version this code builds."""

    @property
    def stale(self) -> tuple[str, ...]:
        """Projections the store lacks or holds at another version than this code's: the daemon of
        this version rebuilds them at start (readers see the old tables until then)."""
        return tuple(n for n, v in self.code_projections.items() if self.projections.get(n) != v)


def store_versions(conn: apsw.Connection) -> StoreVersions:
    """Read the versions of a store."""
    schema = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    stored = {str(n): int(v) for n, v in conn.execute("SELECT name, version FROM projection_checkpoints")}
    return StoreVersions(
        schema=int(schema[0]) if schema else 0,
        projections=stored,
        code_projections={p.name: p.version for p in all_projections()},
    )
