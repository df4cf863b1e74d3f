"""The ``upstreams`` projection: the current state of each upstream, one row each.

``state`` is its supervisor's, folded from ``upstream.state_changed`` (``up``, ``restarting``,
``failed``, ``stopped``, ``starting`` after a requested restart); the process facts add only what
the supervisor does not say: a spawn (``upstream.started``) is ``starting`` with its pid, a new
daemon (``daemon.started``) runs nothing yet (``stopped``). An exit sets ``pid`` and
``last_exit_code``; ``restarts`` counts the supervisor's ``restarting`` (an exit it did not ask for).
``breaker`` follows ``circuit.opened`` / ``circuit.closed``.

To extend: add the stored name to ``handles`` and a method to ``_HANDLERS``; each handler gets one
event and issues SQL. Events are applied one at a time, in order, so a handler may read the row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apsw

from harness.events import (
    CircuitClosed,
    CircuitOpened,
    DaemonStarted,
    Envelope,
    Event,
    ToolCatalogFetched,
    UpstreamExited,
    UpstreamStarted,
    UpstreamStateChanged,
)
from harness.projections.base import Folding

_DDL = """
CREATE TABLE upstreams(
    upstream         TEXT PRIMARY KEY,
    state            TEXT    NOT NULL,  -- starting | up | restarting | failed | stopped
    pid              INTEGER,           -- the current (or last) process
    restarts         INTEGER NOT NULL,  -- exits the daemon did not ask for, each followed by a restart
    last_exit_code   INTEGER,
    tool_count       INTEGER,           -- from the latest catalogue
    protocol_version TEXT,              -- from the latest catalogue
    breaker          TEXT    NOT NULL,  -- closed | open | half_open
    updated_ts       REAL    NOT NULL   -- event time of the latest change
);
"""

_ENSURE = (
    "INSERT INTO upstreams(upstream, state, restarts, breaker, updated_ts)"
    " VALUES (?, 'stopped', 0, 'closed', ?) ON CONFLICT(upstream) DO NOTHING"
)


def _set(cursor: apsw.Cursor, upstream: str, ts: float, assignments: str, values: tuple[object, ...]) -> None:
    """Make sure the upstream has a row, then apply ``assignments`` (with ``values``) as of ``ts``."""
    cursor.execute(_ENSURE, (upstream, ts))
    cursor.execute(
        f"UPDATE upstreams SET {assignments}, updated_ts = ? WHERE upstream = ?", (*values, ts, upstream)
    )


def _started(cursor: apsw.Cursor, ev: Event) -> None:
    assert isinstance(ev, UpstreamStarted)
    _set(cursor, ev.upstream, ev.ts, "state = 'starting', pid = ?", (ev.pid,))


def _catalog(cursor: apsw.Cursor, ev: Event) -> None:
    assert isinstance(ev, ToolCatalogFetched)
    changes = "tool_count = ?, protocol_version = ?"
    _set(cursor, ev.upstream, ev.ts, changes, (ev.tool_count, ev.protocol_version))


def _exited(cursor: apsw.Cursor, ev: Event) -> None:
    assert isinstance(ev, UpstreamExited)
    _set(cursor, ev.upstream, ev.ts, "pid = ?, last_exit_code = ?", (ev.pid, ev.returncode))


def _daemon_started(cursor: apsw.Cursor, ev: Event) -> None:
    assert isinstance(ev, DaemonStarted)
    # A new daemon runs nothing yet (the previous one may have been killed without a word).
    cursor.execute("UPDATE upstreams SET state = 'stopped', updated_ts = ?", (ev.ts,))


def _state_changed(cursor: apsw.Cursor, ev: Event) -> None:
    assert isinstance(ev, UpstreamStateChanged)
    changes = "state = ?, restarts = restarts + (? = 'restarting')"
    _set(cursor, ev.upstream, ev.ts, changes, (ev.state, ev.state))


def _breaker(cursor: apsw.Cursor, ev: Event) -> None:
    assert isinstance(ev, CircuitOpened | CircuitClosed)
    _set(cursor, ev.upstream, ev.ts, "breaker = ?", ("open" if isinstance(ev, CircuitOpened) else "closed",))


_HANDLERS: dict[str, Callable[[apsw.Cursor, Event], None]] = {
    UpstreamStateChanged.STORED_NAME: _state_changed,
    CircuitOpened.STORED_NAME: _breaker,
    CircuitClosed.STORED_NAME: _breaker,
    UpstreamStarted.STORED_NAME: _started,
    ToolCatalogFetched.STORED_NAME: _catalog,
    UpstreamExited.STORED_NAME: _exited,
    DaemonStarted.STORED_NAME: _daemon_started,
}


class UpstreamsProjection(Folding, name="upstreams", version=3, handles=_HANDLERS, ddl=_DDL):
    """Folds upstream lifecycle events into one row of current state per upstream."""

    def apply(self, envelopes: Sequence[Envelope], cursor: apsw.Cursor) -> None:
        """Apply each event in order."""
        for env in envelopes:
            _HANDLERS[env.name](cursor, env.event)

    def forget(self, cursor: apsw.Cursor, before: float) -> None:
        """Refold from the events that remain (few: lifecycle events, not calls)."""
        from harness.store.log import to_envelope

        cursor.execute("DELETE FROM upstreams")
        names = sorted(self.handles)
        rows = cursor.execute(
            "SELECT position, ts, name, version, correlation, data FROM events"
            f" WHERE name IN ({', '.join('?' * len(names))}) ORDER BY position",
            names,
        ).fetchall()
        self.apply([to_envelope(r) for r in rows], cursor)
