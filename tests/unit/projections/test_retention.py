"""Retention: one compaction removes old events and rows, keeps each upstream's latest catalogue,
records itself, and leaves projections equal to a replay of what remains."""

from __future__ import annotations

import apsw
import pytest
from projection_support import fold_into, memory_store, snapshot, tool, write_log
from tests_support import call_event, catalog

from harness.actors.log_writer import Compact, EventIntake, LogWriterActor
from harness.events import RetentionCompacted, SessionClosed, UpstreamExited, UpstreamStarted
from harness.projections import all_projections, compact_folded
from harness.projections.top_k import tool_counts
from harness.replay import replay
from harness.search.hits import all_tools
from harness.store import last_position, to_envelope

DAY = 86400.0
T0 = 1_795_996_800.0  # a whole hour


def history():
    """40 days: catalogues of two upstreams (one replaced later), calls every 6 hours, a crash."""
    events = [
        UpstreamStarted(ts=T0, upstream="git", pid=1, command="git-mcp"),
        catalog("git", [tool("git_status"), tool("git_log")], ts=T0 + 1),
        catalog("web", [tool("fetch", "Fetch a URL")], ts=T0 + 2),
        UpstreamExited(ts=T0 + 3, upstream="git", pid=1, returncode=-9, reason="exited"),
        UpstreamStarted(ts=T0 + 4, upstream="git", pid=2, command="git-mcp"),
    ]
    for i in range(160):
        ts = T0 + 10 + i * 6 * 3600
        events.append(call_event(i, ts=ts, harness=("alice", "bob")[i % 2]))
        if i == 100:
            events.append(catalog("git", [tool("git_status"), tool("git_diff")], ts=ts + 1))
    return events


def test_compaction_removes_old_events_and_rows_and_keeps_each_latest_catalogue(tmp_path):
    path = tmp_path / "h.db"
    write_log(path, history(), batch=17)
    conn = apsw.Connection(str(path))
    cutoff = T0 + 30 * DAY + 1234  # rounded down to the hour
    result = compact_folded(
        conn, projections=all_projections(), older_than=cutoff, clock=lambda: T0 + 40 * DAY
    )
    hour = cutoff - 1234
    assert result.older_than == hour
    old = conn.execute("SELECT correlation FROM events WHERE ts < ? ORDER BY position", (hour,)).fetchall()
    assert old == [("web",), ("git",)]  # each upstream's latest catalogue, whatever its age
    kept_calls = conn.execute("SELECT count(*) FROM call_log").get
    assert result.calls_removed == 160 - kept_calls == 120
    assert result.events_removed == 4 + 120  # lifecycle events but web's catalogue, and the calls
    assert result.catalogs_kept == 2
    assert {t.name for t in all_tools(conn)} == {"git__git_status", "git__git_diff", "web__fetch"}
    (row,) = conn.execute(
        "SELECT position, ts, name, version, correlation, data FROM events WHERE name = 'retention.compacted'"
    ).fetchall()
    event = to_envelope(row).event
    assert isinstance(event, RetentionCompacted) and event.events_removed == result.events_removed
    assert row[0] == result.position == last_position(conn)
    assert all(n >= 0 for _u, _t, n in tool_counts(conn, "alice", window_days=365))
    assert conn.execute("SELECT count(*) FROM store_meta WHERE key = 'retention_cutoff'").get == 0
    conn.close()


def test_after_compaction_replay_still_equals_live(tmp_path):
    live, copy = tmp_path / "live.db", tmp_path / "copy.db"
    write_log(live, history(), batch=23)
    conn = apsw.Connection(str(live))
    compact_folded(
        conn,
        projections=all_projections(),
        older_than=T0 + 25 * DAY,
        step_events=7,
        clock=lambda: T0 + 40 * DAY,
    )
    conn.close()
    write_log(live, [call_event(1000 + i, ts=T0 + 41 * DAY + i) for i in range(5)])  # life goes on
    replay(live, copy, progress=False)
    assert snapshot(copy) == snapshot(live)


def test_compacting_in_steps_lets_the_writer_drain_between_them():
    conn = memory_store()
    fold_into(conn, [call_event(i, ts=T0 + i * 3600) for i in range(50)])
    steps = []
    result = compact_folded(
        conn,
        projections=all_projections(),
        older_than=T0 + 40 * 3600,
        step_events=5,
        between_steps=lambda: steps.append(1),
    )
    assert result.steps >= 8 and len(steps) == result.steps - 1
    assert conn.execute("SELECT count(*) FROM call_log").get == 10


def test_the_log_still_refuses_deletes_outside_a_compaction_and_recent_ones_inside():
    conn = memory_store()
    fold_into(conn, [call_event(i, ts=T0 + i) for i in range(3)])
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("DELETE FROM events WHERE position = 1")
    with conn:
        conn.execute("INSERT INTO store_meta VALUES ('retention_cutoff', ?)", (repr(T0 + 1),))
        conn.execute("DELETE FROM events WHERE position = 1")  # older than the cutoff: allowed
        with pytest.raises(apsw.ConstraintError, match="append-only"):
            conn.execute("DELETE FROM events WHERE position = 3")
        conn.execute("DELETE FROM store_meta WHERE key = 'retention_cutoff'")


def test_positions_are_never_reused_even_when_everything_was_old():
    conn = memory_store()
    fold_into(conn, [call_event(i, ts=T0 + i) for i in range(5)])
    result = compact_folded(
        conn, projections=all_projections(), older_than=T0 + DAY, clock=lambda: T0 + 2 * DAY
    )
    assert result.events_removed == 5 and result.position == 6
    fold_into(conn, [SessionClosed(ts=T0 + 3 * DAY, session_id="s", harness=None, reason="r")])
    assert [p for (p,) in conn.execute("SELECT position FROM events")] == [6, 7]


def test_the_writer_compacts_on_a_compact_message_and_keeps_counting_positions(tmp_path):
    path = tmp_path / "h.db"
    committed = []
    intake = EventIntake()
    ref = LogWriterActor.start(path, intake, on_commit=committed.append)
    intake.attach(ref)
    try:
        ref.proxy().write([call_event(i, ts=T0 + i * 3600) for i in range(48)]).get(timeout=10)
        result = ref.ask(Compact(older_than=T0 + 24 * 3600), timeout=30)
        assert result.calls_removed == 24
        intake.emit(SessionClosed(ts=T0 + 3 * DAY, session_id="s", harness=None, reason="r"))
        last = ref.proxy().wait_flushed().get(timeout=10)
        stats = ref.proxy().statistics().get(timeout=10)
    finally:
        ref.stop()
    assert last == result.position + 1 == 50
    assert stats.compactions == 1
    assert committed[-2:] == [49, 50]
