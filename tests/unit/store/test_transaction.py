"""The writer's transaction helper never leaves a transaction open, so a held group can be retried."""

from __future__ import annotations

import apsw
import pytest

from harness.store import transaction


def test_a_commit_that_fails_rolls_the_transaction_back_so_the_next_one_can_begin():
    conn = apsw.Connection(":memory:")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("CREATE TABLE parent(id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE child(ref INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
    with pytest.raises(apsw.ConstraintError), transaction(conn) as cursor:
        cursor.execute("INSERT INTO child VALUES (1)")  # fails at COMMIT, which leaves the transaction open
    assert conn.get_autocommit()
    with transaction(conn) as cursor:
        cursor.execute("INSERT INTO parent VALUES (1)")
    assert conn.execute("SELECT count(*) FROM child").get == 0
