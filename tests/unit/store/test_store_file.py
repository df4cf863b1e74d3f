"""The store file: append-only log, identity checks, file mode."""

from __future__ import annotations

import stat

import apsw
import pytest

from harness.store import StoreError, open_for_writing, open_read_only
from harness.store.schema import SCHEMA_VERSION


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
    with pytest.raises(StoreError, match="not a SQLite database"):
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
