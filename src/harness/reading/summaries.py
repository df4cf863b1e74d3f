"""The reading API's summaries of the call log: sessions, tool usage, and searches with the tool
their session called next."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import apsw

from harness.events import Envelope, ToolSearchCompleted
from harness.naming import exposed_name
from harness.reading.filters import FAILED_SQL, TimeBound, iso_bound


@dataclass(frozen=True)
class SessionSummary:
    """One downstream session as its calls show it."""

    session_id: str
    harness: str | None
    run_id: str | None
    first_ts: str
    last_ts: str
    calls: int
    failures: int
    tools: int
    """Distinct (upstream, tool) pairs called."""


@dataclass(frozen=True)
class ToolUsage:
    """Calls of one tool: counts, outcomes and latency quantiles."""

    upstream: str
    tool: str
    calls: int
    failures: int
    sessions: int
    p50_ms: float
    p95_ms: float
    mean_response_bytes: float


@dataclass(frozen=True)
class SearchOutcome:
    """One ``search_tools`` call and the first upstream tool its session called afterwards."""

    position: int
    session_id: str
    harness: str | None
    query: str | None
    results: tuple[str, ...]
    next_tool: str | None
    """Exposed name of the next upstream tool call in the session (None: no call followed)."""
    hit: bool | None
    """Whether ``next_tool`` was among ``results`` (None when no call followed)."""


@dataclass(frozen=True)
class SearchHitRate:
    """How often the tool a session called after ``search_tools`` was among that search's results."""

    searches: int
    followed: int
    """Searches after which the session called an upstream tool."""
    hits: int

    @property
    def rate(self) -> float | None:
        """hits / followed (None when no search was followed by a call)."""
        return self.hits / self.followed if self.followed else None


def session_summaries(conn: apsw.Connection, harness: str | None, since: TimeBound) -> list[SessionSummary]:
    """Sessions that made calls, by first call."""
    where, args = _where(harness, since)
    sql = (
        "SELECT session_id, harness, run_id, min(ts), max(ts), count(*),"
        f" sum({FAILED_SQL}), count(DISTINCT upstream || char(0) || tool) FROM call_log {where}"
        " GROUP BY session_id ORDER BY min(position)"
    )
    return [SessionSummary(*row) for row in conn.execute(sql, args)]


def tool_usage(conn: apsw.Connection, harness: str | None, since: TimeBound) -> list[ToolUsage]:
    """Per tool: calls, failures, sessions, latency p50/p95; most called first."""
    where, args = _where(harness, since)
    sql = (
        f"SELECT upstream, tool, latency_ms, {FAILED_SQL}, session_id, response_bytes"
        f" FROM call_log {where} ORDER BY upstream, tool"
    )
    groups: dict[tuple[str, str], list[tuple[float, int, str, int]]] = {}
    for upstream, tool, latency, failed, session, size in conn.execute(sql, args):
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


def search_outcomes(
    conn: apsw.Connection, searches: Iterable[Envelope], harness: str | None
) -> list[SearchOutcome]:
    """Each ``tool_search.completed`` of ``searches`` (of ``harness`` when given) with the next
    upstream tool its session called."""
    out: list[SearchOutcome] = []
    for env in list(searches):
        ev = env.event
        assert isinstance(ev, ToolSearchCompleted)
        if harness is not None and ev.harness != harness:
            continue
        nxt = conn.execute(
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


def hit_rate(searches: list[SearchOutcome]) -> SearchHitRate:
    """How many of ``searches`` a call followed, and how many of those it hit."""
    followed = [s for s in searches if s.hit is not None]
    return SearchHitRate(
        searches=len(searches), followed=len(followed), hits=sum(bool(s.hit) for s in followed)
    )


def _where(harness: str | None, since: TimeBound) -> tuple[str, list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if harness is not None:
        where.append("harness = ?")
        args.append(harness)
    if (lo := iso_bound(since)) is not None:
        where.append("ts >= ?")
        args.append(lo)
    return ("WHERE " + " AND ".join(where)) if where else "", args


def _quantile(ordered: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default method)."""
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
