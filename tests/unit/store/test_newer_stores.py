"""Old code reading a newer daemon's store, and readers during a projection's rebuild."""

from __future__ import annotations

import json

import pytest
from tests_support import call_event

import harness
from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.events import ToolCallCompleted
from harness.projections import CallLogProjection, all_projections, install
from harness.reading import RawEvent
from harness.replay import replay
from harness.store import StoreError, append_raw, open_for_writing


def _store_with_a_newer_event(tmp_path):
    path = tmp_path / "harness.db"
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write([call_event(i) for i in range(3)]).get(timeout=30)
    ref.stop()
    conn = open_for_writing(path)
    with conn:
        row = (
            4,
            1_796_000_009.0,
            "tool_call.completed",
            99,
            "s9",
            json.dumps({"ts": 1_796_000_009.0, "new": 1}),
        )
        append_raw(conn.cursor(), [row, (5, 1_796_000_010.0, "from.the_future", 1, "", "{}")])
    conn.close()
    return path


def test_events_newer_than_the_code_raise_a_clear_error_or_are_skipped_or_come_raw(tmp_path):
    path = _store_with_a_newer_event(tmp_path)
    with harness.open_store(path) as store:
        with pytest.raises(
            StoreError, match=r"'tool_call.completed' v99 at position 4 is newer .*unknown='skip'"
        ):
            list(store.events())
        assert [e.position for e in store.events(unknown="skip")] == [1, 2, 3]
        raw = [e for e in store.events(unknown="raw") if isinstance(e, RawEvent)]
        assert [(e.position, e.name, e.version) for e in raw] == [
            (4, "tool_call.completed", 99),
            (5, "from.the_future", 1),
        ]
        assert raw[0].data == {"ts": 1_796_000_009.0, "new": 1}
        with pytest.raises(ValueError, match="unknown="):
            list(store.events(unknown="ignore"))  # type: ignore[call-overload]


def test_a_refused_replay_leaves_no_file_behind(tmp_path):
    path = _store_with_a_newer_event(tmp_path)
    target = tmp_path / "copy.db"
    with pytest.raises(ValueError, match="newer than this code"):
        replay(path, target, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("copy")) == []


def test_a_projection_at_another_version_is_rebuilt_in_one_transaction_a_reader_never_sees_empty(tmp_path):
    path = tmp_path / "harness.db"
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write([call_event(i) for i in range(5)]).get(timeout=30)
    ref.stop()
    conn = open_for_writing(path)
    conn.execute("UPDATE projection_checkpoints SET version = 1 WHERE name = 'call_log'")
    reader = harness.open_store(path)
    commits: list[int] = []

    def counted() -> bool:
        commits.append(reader.conn.execute("SELECT count(*) FROM call_log").get)
        return False

    conn.set_commit_hook(counted)
    install(conn, [CallLogProjection()])
    conn.set_commit_hook(None)
    assert len(commits) == 1  # dropped, recreated and refolded in one commit
    assert commits == [5]  # until it, readers saw the old table whole
    assert reader.conn.execute("SELECT count(*) FROM call_log").get == 5
    assert reader.versions().projections["call_log"] == CallLogProjection.version
    reader.close()
    conn.close()


def test_a_projection_new_to_the_store_is_built_whole_in_the_transaction_that_creates_it(tmp_path):
    path = tmp_path / "harness.db"
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write([call_event(i) for i in range(4)]).get(timeout=30)
    ref.stop()
    conn = open_for_writing(path)
    with conn:
        conn.execute("DROP TABLE runs")
        conn.execute("DELETE FROM projection_checkpoints WHERE name = 'runs'")
    install(conn, all_projections())
    assert conn.execute("SELECT calls FROM runs WHERE run_id = 'run'").get == 4
    conn.close()
    with harness.open_store(path) as store:
        assert store.versions().stale == ()


def test_this_code_reads_the_calls_of_a_store_whose_call_log_is_older_than_its_own(tmp_path):
    path = tmp_path / "harness.db"
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write([call_event(i) for i in range(2)]).get(timeout=30)
    ref.stop()
    conn = open_for_writing(path)
    with conn:  # call_log as version 3 had it, until a daemon of this version rebuilds it
        for column in ("exposed_name", "via_call_tool", "request_id"):
            conn.execute(f"ALTER TABLE call_log DROP COLUMN {column}")
        conn.execute("UPDATE projection_checkpoints SET version = 3 WHERE name = 'call_log'")
    conn.close()
    with harness.open_store(path) as store:
        rows = store.calls()
        assert [(r["exposed_name"], r["via_call_tool"], r["request_id"]) for r in rows] == [
            ("demo__tool0", None, None),
            ("demo__tool1", None, None),
        ]
        assert store.versions().stale == ("call_log",)


def test_the_events_frame_holds_every_stored_event_newer_ones_included(tmp_path):
    pytest.importorskip("pandas")
    path = _store_with_a_newer_event(tmp_path)
    with harness.open_store(path) as store:
        frame = store.events_frame()
        assert list(frame.position) == [1, 2, 3, 4, 5]
        v = ToolCallCompleted.VERSION
        assert list(frame.version) == [v, v, v, 99, 1]
        assert json.loads(frame.data.iloc[3]) == {"ts": 1_796_000_009.0, "new": 1}
        assert str(frame.ts.dt.tz) == "UTC"
        assert len(store.events_frame(name="from.the_future")) == 1
