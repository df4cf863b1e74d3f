"""Replay equals live: folding a copied log gives exactly the live projection rows."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import apsw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from projection_support import PROJECTION_TABLES, snapshot, tool
from tests_support import call_event, catalog

from harness.actors.log_writer import Compact, EventIntake, LogWriterActor
from harness.events import (
    SessionClosed,
    SessionOpened,
    ToolSearchCompleted,
    UpstreamExited,
    UpstreamStarted,
)
from harness.replay import replay
from harness.search.ranking import search

OUTCOMES = ["ok", "tool_error", "upstream_error", "timeout", "denied", "circuit_open", "cancelled"]
UPSTREAMS = ["demo", "git", "web"]
KINDS = ["call", "call", "call", "opened", "closed", "catalog", "started", "exited", "search"]

event_specs = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.sampled_from(OUTCOMES),
        st.sampled_from(["alice", "bob", None]),
        st.floats(min_value=1.7e9, max_value=1.9e9, allow_nan=False),
        st.sampled_from(UPSTREAMS),
        st.integers(min_value=0, max_value=5),
    ),
    min_size=0,
    max_size=60,
)


def build(i: int, spec):
    kind, outcome, harness, ts, upstream, n = spec
    if kind == "call":
        return call_event(i, harness=harness, outcome=outcome, ts=ts).model_copy(
            update={"upstream": upstream}
        )
    if kind == "opened":
        return SessionOpened(
            ts=ts, session_id=f"s{i}", harness=harness, run_id=None, transport="t", bridge_version=1
        )
    if kind == "catalog":
        return catalog(upstream, [tool(f"t{j}", f"tool number {j} of {upstream}") for j in range(n)], ts=ts)
    if kind == "started":
        return UpstreamStarted(ts=ts, upstream=upstream, pid=i, command="c")
    if kind == "exited":
        return UpstreamExited(
            ts=ts, upstream=upstream, pid=i, returncode=n - 1, reason=("exited", "stopped")[n % 2]
        )
    if kind == "search":
        return ToolSearchCompleted(
            ts=ts,
            session_id=f"s{n}",
            harness=harness,
            run_id=None,
            query="q",
            k=n,
            results=(),
            latency_ms=0.1,
        )
    return SessionClosed(ts=ts, session_id=f"s{i}", harness=None, reason="r")


def table(path: Path, name: str) -> list[tuple]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall()
    finally:
        conn.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=event_specs,
    batch_sizes=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=5),
    compact_at=st.one_of(st.none(), st.integers(min_value=0, max_value=60)),
    cutoff=st.floats(min_value=1.7e9, max_value=1.9e9),
)
def test_replay_of_a_generated_log_equals_the_live_projections(specs, batch_sizes, compact_at, cutoff):
    with tempfile.TemporaryDirectory() as tmp:
        live, copy = Path(tmp) / "live.db", Path(tmp) / "copy.db"
        intake = EventIntake()
        ref = LogWriterActor.start(live, intake)
        try:
            events = [build(i, s) for i, s in enumerate(specs)]
            sizes = itertools.cycle(batch_sizes)
            start = 0
            while start < len(events):  # live: committed in batches of random sizes
                end = start + next(sizes)
                ref.proxy().write(events[start:end]).get(timeout=10)
                if compact_at is not None and start <= compact_at < end:
                    ref.ask(Compact(older_than=cutoff), timeout=30)  # retention part-way through
                start = end
        finally:
            ref.stop()
        result = replay(live, copy, progress=False)
        assert result.events == table(live, "events").__len__()
        assert snapshot(copy, PROJECTION_TABLES) == snapshot(live, PROJECTION_TABLES)
        for query in ("tool number", "git t1", "web"):
            assert searched(copy, query) == searched(live, query)


def searched(path: Path, query: str) -> list:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return search(conn, query, k=20)
    finally:
        conn.close()
