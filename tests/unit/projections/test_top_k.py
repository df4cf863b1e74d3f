"""top_k: the tools a harness called most in a window of event time, kept as hourly counts."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from projection_support import fold_into, memory_store, write_log
from tests_support import call_event

from harness.events import SessionClosed
from harness.projections.top_k import tool_counts, top_tools
from harness.replay import replay

DAY = 86400.0
T0 = 1_796_000_000.0


def call(ts, tool, harness="alice", upstream="up", outcome="ok", i=0):
    return call_event(i, harness=harness, outcome=outcome, ts=ts).model_copy(
        update={"tool": tool, "upstream": upstream}
    )


def test_the_most_called_tools_come_first():
    conn = memory_store()
    fold_into(conn, [call(T0 + i, tool) for i, tool in enumerate(["a", "b", "b", "c", "c", "c"])])
    assert top_tools(conn, "alice", 2) == [("up", "c"), ("up", "b")]
    assert top_tools(conn, "alice", 10) == [("up", "c"), ("up", "b"), ("up", "a")]
    assert top_tools(conn, "bob", 5) == []
    assert top_tools(conn, "alice", 0) == []


def test_ties_go_to_the_most_recently_called_tool_then_by_name():
    conn = memory_store()
    fold_into(conn, [call(T0, "x"), call(T0 + 1, "y"), call(T0 + 2, "z", upstream="other")])
    assert top_tools(conn, "alice", 3) == [("other", "z"), ("up", "y"), ("up", "x")]


def test_only_calls_that_ran_a_tool_count_and_gateway_tools_do_not():
    conn = memory_store()
    events = [
        call(T0 + i, "failing", outcome=o) for i, o in enumerate(["denied", "timeout", "upstream_error"])
    ]
    events += [
        call(T0 + 10, "erroring", outcome="tool_error"),
        call(T0 + 11, "search_tools", upstream="harness"),
    ]
    events += [call(T0 + 12, "anon", harness=None)]
    fold_into(conn, events)
    assert tool_counts(conn, "alice") == [("up", "erroring", 1)]


def test_the_window_is_exact_in_event_time_at_both_edges():
    conn = memory_store()
    as_of = T0 + 40 * DAY + 1234.5
    lo = as_of - 30 * DAY
    events = [
        call(lo - 0.001, "too_old"),
        call(lo, "first_in"),
        call(lo + 1800, "first_in"),
        call(T0 + 20 * DAY, "middle"),
        call(as_of, "last_in"),
        call(as_of + 0.001, "too_new"),
    ]
    fold_into(conn, events)
    counts = {(u, t): n for u, t, n in tool_counts(conn, "alice", as_of=as_of)}
    assert counts == {("up", "first_in"): 2, ("up", "middle"): 1, ("up", "last_in"): 1}
    assert [t for _u, t, _n in tool_counts(conn, "alice", as_of=as_of, window_days=0.01)] == ["last_in"]


def test_without_as_of_the_window_ends_at_the_newest_event():
    conn = memory_store()
    fold_into(conn, [call(T0, "old"), call(T0 + 40 * DAY, "recent")])
    assert top_tools(conn, "alice", 5) == [("up", "recent")]
    fold_into(conn, [SessionClosed(ts=T0 + 80 * DAY, session_id="s", harness=None, reason="r")])
    assert top_tools(conn, "alice", 5) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=50 * DAY),
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from(["ok", "tool_error", "denied"]),
        ),
        max_size=40,
    ),
    as_of=st.floats(min_value=0, max_value=60 * DAY),
    window=st.floats(min_value=0.001, max_value=40),
)
def test_counts_equal_a_direct_count_of_the_calls_in_the_window(calls, as_of, window):
    conn = memory_store()
    fold_into(conn, [call(T0 + ts, tool, outcome=o, i=i) for i, (ts, tool, o) in enumerate(sorted(calls))])
    got = {t: n for _u, t, n in tool_counts(conn, "alice", as_of=T0 + as_of, window_days=window)}
    lo, hi = T0 + as_of - window * DAY, T0 + as_of
    want: dict[str, int] = {}
    for ts, tool, outcome in calls:
        if outcome != "denied" and lo <= T0 + ts <= hi:
            want[tool] = want.get(tool, 0) + 1
    assert got == want


def test_replay_folds_top_k_in_sql_to_the_same_rows_as_the_live_writer():
    with tempfile.TemporaryDirectory() as tmp:
        live, copy = Path(tmp) / "live.db", Path(tmp) / "copy.db"
        write_log(
            live, [call(T0 + i * 600, f"t{i % 5}", harness=("a", "b")[i % 2], i=i) for i in range(300)], 37
        )
        replay(live, copy, progress=False)
        import apsw

        rows = [
            apsw.Connection(str(p)).execute("SELECT * FROM top_k_hourly ORDER BY 1, 2, 3, 4").fetchall()
            for p in (live, copy)
        ]
        assert rows[0] == rows[1] and rows[0]
