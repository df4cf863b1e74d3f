"""Read-only access to a store for the CLI, evals and notebooks: ``harness.open_store(path)``.

Every query reads projections (``call_log``, ``runs``, ``tool_index``, ``top_k_hourly``,
``upstreams``) or the event log over a read-only connection; the daemon may be running (WAL lets
readers run beside the writer). Methods ending in ``_frame`` return pandas DataFrames (pandas must
be installed: the ``analysis`` extra).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterator
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, overload

import apsw

from harness.events import Envelope, ToolSearchCompleted
from harness.naming import called_name, exposed_name
from harness.projections.call_log import COLUMNS, iso_ms
from harness.projections.top_k import tool_counts
from harness.reading.log import RawEvent, StoreVersions, Unknown, read_events, store_versions
from harness.reading.runs import Run, Step, Trajectory, query_runs, query_trajectories
from harness.reading.summaries import SearchHitRate, SearchOutcome, SessionSummary, ToolUsage
from harness.search.hits import ToolHit
from harness.search.ranking import search
from harness.store import StoreError, open_read_only
from harness.store.location import STORE_FILE, default_state_dir
from harness.vocabulary import FAILED_OUTCOMES, outcome_in

FAILED = FAILED_OUTCOMES
"""Outcomes that count as a failure (every one but ``ok`` and ``cancelled``): one definition, in
``harness.vocabulary``, for every reader, the CLI and the ``runs`` projection."""
_FAILED_SQL = outcome_in(FAILED_OUTCOMES)

__all__ = [
    "FAILED",
    "RawEvent",
    "Run",
    "SearchHitRate",
    "SearchOutcome",
    "SessionSummary",
    "Step",
    "StoreVersions",
    "StoreView",
    "ToolUsage",
    "Trajectory",
    "open_store",
]

TimeBound = str | float | datetime | None
"""A time filter: ISO-8601 text (as in ``call_log.ts``), epoch seconds, or a datetime."""


def iso_bound(value: TimeBound) -> str | None:
    """A time bound as the ISO text ``call_log.ts`` and ``runs.started`` compare with."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return iso_ms(value.timestamp())
    return iso_ms(float(value))


def _epoch(value: TimeBound) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return float(value)


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
            where.append(_FAILED_SQL)
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
        where, args = self._filters(harness, since)
        sql = (
            "SELECT session_id, harness, run_id, min(ts), max(ts), count(*),"
            f" sum({_FAILED_SQL}), count(DISTINCT upstream || char(0) || tool) FROM call_log {where}"
            " GROUP BY session_id ORDER BY min(position)"
        )
        return [SessionSummary(*row) for row in self.conn.execute(sql, args)]

    def tool_usage(self, *, harness: str | None = None, since: TimeBound = None) -> list[ToolUsage]:
        """Per tool: calls, failures (``FAILED``), sessions, latency p50/p95; most called first."""
        where, args = self._filters(harness, since)
        sql = (
            f"SELECT upstream, tool, latency_ms, {_FAILED_SQL}, session_id, response_bytes"
            f" FROM call_log {where} ORDER BY upstream, tool"
        )
        groups: dict[tuple[str, str], list[tuple[float, int, str, int]]] = {}
        for upstream, tool, latency, failed, session, size in self.conn.execute(sql, args):
            groups.setdefault((upstream, tool), []).append((latency, failed, session, size))
        out = []
        for (upstream, tool), rows in groups.items():
            latencies = sorted(r[0] for r in rows)
            out.append(
                ToolUsage(
                    upstream=upstream,
                    tool=tool,
                    calls=len(rows),
                    failures=sum(r[1] for r in rows),
                    sessions=len({r[2] for r in rows}),
                    p50_ms=_quantile(latencies, 0.5),
                    p95_ms=_quantile(latencies, 0.95),
                    mean_response_bytes=statistics.fmean(r[3] for r in rows),
                )
            )
        out.sort(key=lambda u: (-u.calls, u.upstream, u.tool))
        return out

    def _filters(self, harness: str | None, since: TimeBound) -> tuple[str, list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if harness is not None:
            where.append("harness = ?")
            args.append(harness)
        if (lo := iso_bound(since)) is not None:
            where.append("ts >= ?")
            args.append(lo)
        return ("WHERE " + " AND ".join(where)) if where else "", args

    # ------------------------------------------------------------------ search

    def searches(self, *, harness: str | None = None, since: TimeBound = None) -> list[SearchOutcome]:
        """Every ``tool_search.completed`` with the next upstream tool its session called."""
        out: list[SearchOutcome] = []
        for env in list(self.events(name=ToolSearchCompleted.STORED_NAME, since=since)):
            ev = env.event
            assert isinstance(ev, ToolSearchCompleted)
            if harness is not None and ev.harness != harness:
                continue
            nxt = self.conn.execute(
                "SELECT upstream, tool FROM call_log WHERE session_id = ? AND position > ?"
                " AND upstream != 'harness' ORDER BY position LIMIT 1",
                (ev.session_id, env.position),
            ).fetchone()
            name = exposed_name(nxt[0], nxt[1]) if nxt else None
            out.append(
                SearchOutcome(
                    position=env.position,
                    session_id=ev.session_id,
                    harness=ev.harness,
                    query=ev.query,
                    results=ev.results,
                    next_tool=name,
                    hit=None if name is None else name in ev.results,
                )
            )
        return out

    def search_hit_rate(self, *, harness: str | None = None, since: TimeBound = None) -> SearchHitRate:
        """Did the tool a session called after ``search_tools`` appear in that search's results?"""
        found = self.searches(harness=harness, since=since)
        followed = [s for s in found if s.hit is not None]
        return SearchHitRate(
            searches=len(found), followed=len(followed), hits=sum(bool(s.hit) for s in followed)
        )

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
        yield from read_events(self.conn, name=name, since=_epoch(since), unknown=unknown)

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

    def trajectories(
        self,
        *,
        harness: str | None = None,
        since: TimeBound = None,
        run_ids: Collection[str] | None = None,
    ) -> list[Trajectory]:
        """``trajectory`` of every run ``runs(...)`` selects, in its order."""
        return query_trajectories(self.conn, self.runs(harness=harness, since=since, run_ids=run_ids))

    # ------------------------------------------------------------------ DataFrames

    def calls_frame(self, **filters: Any) -> Any:
        """``calls(**filters)`` as a pandas DataFrame, ``ts`` parsed to UTC datetimes."""
        pd = _pandas()
        frame = pd.DataFrame(self.calls(**filters), columns=list(COLUMNS))
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True, format="ISO8601")
        return frame

    def runs_frame(self, **filters: Any) -> Any:
        """``runs(**filters)`` as a DataFrame, ``started`` and ``ended`` as UTC datetimes."""
        pd = _pandas()
        frame = pd.DataFrame([asdict(r) for r in self.runs(**filters)], columns=list(Run.__annotations__))
        for column in ("started", "ended"):
            frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
        return frame

    def steps_frame(self, **filters: Any) -> Any:
        """The steps of ``trajectories(**filters)``, one row each, with the run's id and harness."""
        rows = [
            {"run_id": t.run.run_id, "harness": t.run.harness, **asdict(step)}
            for t in self.trajectories(**filters)
            for step in t.steps
        ]
        pd = _pandas()
        columns = ["run_id", "harness", *Step.__annotations__]
        frame = pd.DataFrame(rows, columns=columns)
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True, format="ISO8601")
        return frame

    def sessions_frame(self, **filters: Any) -> Any:
        """``sessions(**filters)`` as a DataFrame."""
        pd = _pandas()
        frame = pd.DataFrame([asdict(s) for s in self.sessions(**filters)])
        for column in ("first_ts", "last_ts"):
            if column in frame:
                frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
        return frame

    def tool_usage_frame(self, **filters: Any) -> Any:
        """``tool_usage(**filters)`` as a DataFrame."""
        return _pandas().DataFrame([asdict(u) for u in self.tool_usage(**filters)])

    def searches_frame(self, **filters: Any) -> Any:
        """``searches(**filters)`` as a DataFrame."""
        return _pandas().DataFrame([asdict(s) for s in self.searches(**filters)])

    def events_frame(self, *, name: str | None = None, since: TimeBound = None) -> Any:
        """The event log as stored, one row per event (``position``, ``ts`` as UTC datetimes,
        ``name``, ``version``, ``correlation``, ``data`` as JSON text): nothing is decoded, so events
        of any version read alike (``pandas.json_normalize`` over ``data`` spreads the fields)."""
        sql = "SELECT position, ts, name, version, correlation, data FROM events WHERE 1"
        args: list[Any] = []
        if name is not None:
            sql += " AND name = ?"
            args.append(name)
        if (lo := _epoch(since)) is not None:
            sql += " AND ts >= ?"
            args.append(lo)
        pd = _pandas()
        columns = ["position", "ts", "name", "version", "correlation", "data"]
        frame = pd.DataFrame(self.conn.execute(sql + " ORDER BY position", args).fetchall(), columns=columns)
        frame["ts"] = pd.to_datetime(frame["ts"], unit="s", utc=True)
        return frame

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _quantile(ordered: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default method)."""
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _pandas() -> Any:
    import importlib

    try:
        return importlib.import_module("pandas")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("DataFrames need pandas: pip install pandas") from exc


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
