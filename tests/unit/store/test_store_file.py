"""The store file: append-only log, identity checks, file mode."""

from __future__ import annotations

import stat

import apsw
import pytest

from harness.store import StoreError, open_for_writing, open_read_only
from harness.store.schema import SCHEMA_VERSION, STORE_ID_KEY, store_id


def test_a_new_store_is_created_with_mode_0600(tmp_path):
    path = tmp_path / "harness.db"
    open_for_writing(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_event_log_refuses_update_and_delete(tmp_path):
    conn = open_for_writing(tmp_path / "harness.db")
    conn.execute("INSERT INTO events VALUES (1, 1.0, 'daemon.stopped', 1, '', '{}')")
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("UPDATE events SET data = '{}' WHERE position = 1")
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("DELETE FROM events")
    assert conn.execute("SELECT count(*) FROM events").get == 1


def test_a_sqlite_file_that_is_not_a_harness_store_is_refused(tmp_path):
    path = tmp_path / "other.db"
    apsw.Connection(str(path)).execute("CREATE TABLE t(x)")
    with pytest.raises(StoreError, match="not a Harness store"):
        open_for_writing(path)


def test_a_file_that_is_not_sqlite_is_refused(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a readable SQLite store"):
        open_for_writing(path)


def test_a_store_of_another_schema_version_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "harness.db"
    open_for_writing(path).close()
    conn = apsw.Connection(str(path))
    conn.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        open_for_writing(path)
    with pytest.raises(StoreError, match="schema version"):
        open_read_only(path)


def test_reading_a_missing_store_says_so(tmp_path):
    with pytest.raises(StoreError, match="no store here"):
        open_read_only(tmp_path / "missing.db")


def test_a_schema_1_store_is_migrated_to_let_retention_delete(tmp_path):
    path = tmp_path / "harness.db"
    conn = apsw.Connection(str(path))
    conn.execute(
        """
        CREATE TABLE store_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO store_meta VALUES ('format', 'harness-store'), ('schema_version', '1');
        CREATE TABLE events(position INTEGER PRIMARY KEY, ts REAL NOT NULL, name TEXT NOT NULL,
            version INTEGER NOT NULL, correlation TEXT NOT NULL, data TEXT NOT NULL);
        CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'the event log is append-only: DELETE refused'); END;
        CREATE TABLE projection_checkpoints(name TEXT PRIMARY KEY, version INTEGER NOT NULL,
            position INTEGER NOT NULL);
        INSERT INTO events VALUES (1, 1.0, 'daemon.stopped', 1, '', '{}');
        """
    )
    conn.close()
    open_read_only(path).close()  # readers accept the old schema as it is
    conn = open_for_writing(path)
    assert conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").get == str(
        SCHEMA_VERSION
    )
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("DELETE FROM events")
    with conn:
        conn.execute("INSERT INTO store_meta VALUES ('retention_cutoff', '2.0')")
        conn.execute("DELETE FROM events WHERE position = 1")
        conn.execute("DELETE FROM store_meta WHERE key = 'retention_cutoff'")
    assert conn.execute("SELECT count(*) FROM events").get == 0


def test_a_projection_at_another_version_is_rebuilt_from_the_log(tmp_path):
    from harness.actors.log_writer import EventIntake, LogWriterActor
    from harness.projections import CallLogProjection, ProjectionVersionError, all_projections, install
    from harness.store import append, envelopes_for

    path = tmp_path / "harness.db"
    conn = open_for_writing(path)
    install(conn, all_projections())
    with conn:
        append(conn.cursor(), envelopes_for([_call(i) for i in range(3)], 1))
    conn.execute("UPDATE projection_checkpoints SET version = 0 WHERE name = 'call_log'")
    conn.execute("DROP TABLE call_log")
    conn.execute("CREATE TABLE call_log(stale)")
    with pytest.raises(ProjectionVersionError, match="harness replay"):
        install(conn, [CallLogProjection()], rebuild=False)
    conn.close()
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().wait_flushed().get(timeout=10)
    ref.stop()
    conn = open_read_only(path)
    assert conn.execute("SELECT count(*) FROM call_log").get == 3
    version = conn.execute("SELECT version FROM projection_checkpoints WHERE name = 'call_log'").get
    assert version == CallLogProjection.version


def _call(i):
    from tests_support import call_event

    return call_event(i)


def test_every_store_has_an_id_of_its_own_that_reopening_keeps(tmp_path):
    ids = []
    for name in ("a.db", "b.db"):
        conn = open_for_writing(tmp_path / name)
        ids.append(store_id(conn))
        conn.close()
    assert ids[0] != ids[1] and all(len(i) == 16 for i in ids)
    assert store_id(open_read_only(tmp_path / "a.db")) == ids[0]
    assert store_id(open_for_writing(tmp_path / "a.db")) == ids[0]


def test_a_store_made_before_ids_gets_from_its_writer_the_id_a_reader_saw_first(tmp_path):
    path = tmp_path / "harness.db"
    conn = open_for_writing(path)
    conn.execute("INSERT INTO events VALUES (1, 1.5, 'daemon.stopped', 1, '', '{}')")
    conn.execute("DELETE FROM store_meta WHERE key = ?", (STORE_ID_KEY,))
    conn.close()
    seen = store_id(open_read_only(path))
    assert len(seen) == 16 and store_id(open_read_only(path)) == seen
    writer = open_for_writing(path)
    assert writer.execute("SELECT value FROM store_meta WHERE key = ?", (STORE_ID_KEY,)).get == seen


def test_opening_a_store_with_an_id_for_writing_writes_nothing_so_another_writers_lock_does_not_stop_it(
    tmp_path,
):
    path = tmp_path / "harness.db"
    open_for_writing(path).close()
    other = apsw.Connection(str(path))
    other.execute("BEGIN IMMEDIATE")
    try:
        open_for_writing(path).close()
    finally:
        other.execute("ROLLBACK")
