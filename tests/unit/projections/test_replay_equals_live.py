"""Replay equals live: folding a copied log gives exactly the live projection rows."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import apsw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests_support import call_event

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.events import SessionClosed, SessionOpened
from harness.replay import replay

OUTCOMES = ["ok", "tool_error", "upstream_error", "timeout", "denied", "circuit_open", "cancelled"]

event_specs = st.lists(
    st.tuples(
        st.sampled_from(["call", "opened", "closed"]),
        st.sampled_from(OUTCOMES),
        st.sampled_from(["alice", "bob", None]),
        st.floats(min_value=1.7e9, max_value=1.9e9, allow_nan=False),
    ),
    min_size=0,
    max_size=60,
)


def build(i: int, spec: tuple[str, str, str | None, float]):
    kind, outcome, harness, ts = spec
    if kind == "call":
        return call_event(i, harness=harness, outcome=outcome, ts=ts)
    if kind == "opened":
        return SessionOpened(
            ts=ts, session_id=f"s{i}", harness=harness, run_id=None, transport="t", bridge_version=1
        )
    return SessionClosed(ts=ts, session_id=f"s{i}", reason="r")


def table(path: Path, name: str) -> list[tuple]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall()
    finally:
        conn.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=event_specs, batch_sizes=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=5)
)
def test_replay_of_a_generated_log_equals_the_live_projections(specs, batch_sizes):
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
                start = end
        finally:
            ref.stop()
        result = replay(live, copy, progress=False)
        assert result.events == len(events)
        assert table(copy, "call_log") == table(live, "call_log")
        assert table(copy, "events") == table(live, "events")
        assert table(copy, "projection_checkpoints") == table(live, "projection_checkpoints")
