"""Read-only access to a store for the CLI, evals and notebooks: ``harness.open_store(path)``.

Every query reads projections (``call_log``, ``runs``, ``tool_index``, ``top_k_hourly``,
``upstreams``) or the event log over a read-only connection; the daemon may be running (WAL lets
readers run beside the writer). Methods ending in ``_frame`` return pandas DataFrames (pandas must
be installed: the ``analysis`` extra).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Literal, Unpack, overload

import apsw

from harness.events import Envelope, ToolSearchCompleted
from harness.naming import called_name
from harness.projections.call_log import COLUMNS
from harness.projections.top_k import tool_counts
from harness.reading import frames, summaries
from harness.reading.filters import FAILED_SQL, RunFilters, TimeBound, epoch_bound, iso_bound
from harness.reading.log import RawEvent, StoreVersions, Unknown, read_events, store_versions
from harness.reading.runs import Run, Step, Trajectory, query_runs, query_trajectories
from harness.reading.summaries import SearchHitRate, SearchOutcome, SessionSummary, ToolUsage
from harness.search.hits import ToolHit
from harness.search.ranking import search
from harness.store import StoreError, open_read_only, read_rows
from harness.store.location import STORE_FILE, default_state_dir
from harness.vocabulary import FAILED_OUTCOMES

FAILED = FAILED_OUTCOMES
"""Outcomes that count as a failure (every one but ``ok`` and ``cancelled``): one definition, in
``harness.vocabulary``, for every reader, the CLI and the ``runs`` projection."""

__all__ = [
    "FAILED",
    "RawEvent",
    "Run",
    "RunFilters",
    "SearchHitRate",
    "SearchOutcome",
    "SessionSummary",
    "Step",
    "StoreVersions",
    "StoreView",
    "TimeBound",
    "ToolUsage",
    "Trajectory",
    "open_store",
]


class StoreView:
    """A read-only view of one store file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: apsw.Connection = open_read_only(path)

    def __enter__(self) -> StoreView:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ calls

    def calls(
        self,
        *,
        harness: str | None = None,
        since: TimeBound = None,
        until: TimeBound = None,
        upstream: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        failed: bool = False,
        limit: int | None = None,
        after_position: int = 0,
    ) -> list[dict[str, Any]]:
        """Call-log rows as dicts (columns: docs/call-log.md): the ``limit`` most recently logged
        (and after ``after_position``), ordered by start time (``ts``, then position).

        ``since`` ≤ ts < ``until``; text bounds compare with ``call_log.ts`` as text. ``failed``: only
        failed calls (``FAILED``).
        """
        where = ["position > ?"]
        args: list[Any] = [after_position]
        for column, value in (
            ("harness", harness),
            ("upstream", upstream),
            ("tool", tool),
            ("outcome", outcome),
            ("session_id", session_id),
            ("run_id", run_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if failed:
            where.append(FAILED_SQL)
        if (lo := iso_bound(since)) is not None:
            where.append("ts >= ?")
            args.append(lo)
        if (hi := iso_bound(until)) is not None:
            where.append("ts < ?")
            args.append(hi)
        sql = f"SELECT {self.call_columns()} FROM call_log WHERE {' AND '.join(where)} ORDER BY position DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in self.conn.execute(sql, args)]
        for row in rows:
            for flag in ("via_call_tool", "args_truncated"):
                if (value := row[flag]) is not None:
                    row[flag] = bool(value)
            if row["exposed_name"] is None:  # a call_log older than v4: the naming rule's name
                upstream, tool = row["upstream"], row["tool"]
                row["exposed_name"] = called_name(upstream, tool)
        rows.sort(key=_start_order)  # chosen by log position (completion), shown by start time
        return rows

    def call_columns(self) -> str:
        """``COLUMNS`` as a select list; a column the store's ``call_log`` lacks (an older version,
        until the daemon of this version rebuilds it) reads as NULL."""
        present = {row[1] for row in self.conn.execute("PRAGMA table_info(call_log)")}
        return ", ".join(c if c in present else f"NULL AS {c}" for c in COLUMNS)

    def sessions(self, *, harness: str | None = None, since: TimeBound = None) -> list[SessionSummary]:
        """Sessions that made calls, by first call."""
        return summaries.session_summaries(self.conn, harness, since)

    def tool_usage(self, *, harness: str | None = None, since: TimeBound = None) -> list[ToolUsage]:
        """Per tool: calls, failures (``FAILED``), sessions, latency p50/p95; most called first."""
        return summaries.tool_usage(self.conn, harness, since)

    # ------------------------------------------------------------------ search

    def searches(self, *, harness: str | None = None, since: TimeBound = None) -> list[SearchOutcome]:
        """Every ``tool_search.completed`` with the next upstream tool its session called."""
        found = self.events(name=ToolSearchCompleted.STORED_NAME, since=since)
        return summaries.search_outcomes(self.conn, found, harness)

    def search_hit_rate(self, *, harness: str | None = None, since: TimeBound = None) -> SearchHitRate:
        """Did the tool a session called after ``search_tools`` appear in that search's results?"""
        return summaries.hit_rate(self.searches(harness=harness, since=since))

    def search_tools(
        self,
        query: str,
        *,
        k: int = 10,
        allowed: Collection[str] | None = None,
        upstreams: Collection[str] | None = None,
    ) -> list[ToolHit]:
        """The tool index's search (what ``search_tools`` and ``harness tools search`` run): only
        ``allowed`` names of the ``upstreams`` keys, when given."""
        self._require("tool_index")
        return search(self.conn, query, k=k, allowed=allowed, upstreams=upstreams)

    def _require(self, table: str) -> None:
        found = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        if found is None:
            raise StoreError(
                f"{self.path}: no {table} table yet; start the daemon once with this version "
                "(it builds missing projections) or `harness replay` into a new store"
            )

    # ------------------------------------------------------------------ other projections

    def top_tools(
        self, harness: str, k: int = 8, *, as_of: float | None = None, window_days: float = 30
    ) -> list[tuple[str, str, int]]:
        """(upstream, tool, calls) the harness called most in the window (see ``projections.top_k``)."""
        self._require("top_k_hourly")
        return tool_counts(self.conn, harness, k, as_of=as_of, window_days=window_days)

    def upstreams(self) -> list[dict[str, Any]]:
        """The ``upstreams`` projection: one dict per upstream."""
        self._require("upstreams")
        cursor = self.conn.execute("SELECT * FROM upstreams ORDER BY upstream")
        names = [d[0] for d in cursor.getdescription()]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    @overload
    def events(
        self, *, name: str | None = None, since: TimeBound = None, unknown: Literal["raise", "skip"] = "raise"
    ) -> Iterator[Envelope]: ...

    @overload
    def events(
        self, *, name: str | None = None, since: TimeBound = None, unknown: Literal["raw"]
    ) -> Iterator[Envelope | RawEvent]: ...

    def events(
        self, *, name: str | None = None, since: TimeBound = None, unknown: Unknown = "raise"
    ) -> Iterator[Envelope | RawEvent]:
        """Stored events in position order (decoded, upcast), optionally one stored name only.

        An event this code cannot decode (a newer version, a name it does not know: a store written
        by a newer daemon) raises ``StoreError`` (``unknown="raise"``), is left out (``"skip"``) or
        comes as a :class:`RawEvent` with its stored fields (``"raw"``). Only ``"raw"`` yields
        anything but envelopes.
        """
        yield from read_events(self.conn, name=name, since=epoch_bound(since), unknown=unknown)

    def versions(self) -> StoreVersions:
        """The store's schema version and projection versions, beside this code's."""
        return store_versions(self.conn)

    # ------------------------------------------------------------------ runs

    def runs(
        self,
        *,
        harness: str | None = None,
        since: TimeBound = None,
        run_ids: Collection[str] | None = None,
    ) -> list[Run]:
        """Runs (one per spawn), oldest first: metadata, start, end, exit code, the run restarted,
        calls, failures (``FAILED``) and denials. ``since`` bounds the start."""
        self._require("runs")
        return query_runs(self.conn, harness=harness, since=iso_bound(since), run_ids=run_ids)

    def trajectory(self, run_id: str) -> Trajectory:
        """One run's steps in the order the agent made them (start time, then log position)."""
        found = self.trajectories(run_ids=[run_id])
        if not found:
            raise StoreError(f"{self.path}: no run {run_id!r}")
        return found[0]

    def trajectories(self, **filters: Unpack[RunFilters]) -> list[Trajectory]:
        """``trajectory`` of every run ``runs(**filters)`` selects (``harness``, ``since``,
        ``run_ids``), in its order."""
        return query_trajectories(self.conn, self.runs(**filters))

    # ------------------------------------------------------------------ DataFrames

    def calls_frame(self, **filters: Any) -> Any:
        """``calls(**filters)`` as a pandas DataFrame, ``ts`` parsed to UTC datetimes."""
        return frames.frame(self.calls(**filters), COLUMNS, times=("ts",))

    def runs_frame(self, **filters: Unpack[RunFilters]) -> Any:
        """``runs(**filters)`` as a DataFrame, ``started`` and ``ended`` as UTC datetimes."""
        return frames.frame(self.runs(**filters), Run.__annotations__, times=("started", "ended"))

    def steps_frame(self, **filters: Unpack[RunFilters]) -> Any:
        """The steps of ``trajectories(**filters)``, one row each, with the run's id and harness."""
        return frames.steps_frame(self.trajectories(**filters))

    def sessions_frame(self, **filters: Any) -> Any:
        """``sessions(**filters)`` as a DataFrame."""
        return frames.frame(self.sessions(**filters), times=("first_ts", "last_ts"))

    def tool_usage_frame(self, **filters: Any) -> Any:
        """``tool_usage(**filters)`` as a DataFrame."""
        return frames.frame(self.tool_usage(**filters))

    def searches_frame(self, **filters: Any) -> Any:
        """``searches(**filters)`` as a DataFrame."""
        return frames.frame(self.searches(**filters))

    def events_frame(self, *, name: str | None = None, since: TimeBound = None) -> Any:
        """The event log as stored, one row per event (``position``, ``ts`` as UTC datetimes,
        ``name``, ``version``, ``correlation``, ``data`` as JSON text): nothing is decoded, so events
        of any version read alike (``pandas.json_normalize`` over ``data`` spreads the fields)."""
        return frames.events_frame(read_rows(self.conn, since=epoch_bound(since), name=name))

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def open_store(path: str | Path | None = None) -> StoreView:
    """Open a store read-only (it may be live: WAL lets readers run beside the daemon).

    ``path`` is the store file, or a state dir holding it (``harness.db``); by default the daemon's
    default state dir's (``$XDG_STATE_HOME/harness``, else ``~/.local/state/harness``).
    """
    store = default_state_dir() if path is None else Path(path).expanduser()
    if store.is_dir():
        store = store / STORE_FILE
    return StoreView(store)


def _start_order(row: dict[str, Any]) -> tuple[str, int]:
    return row["ts"], row["position"]
