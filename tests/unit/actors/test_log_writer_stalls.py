"""A store that refuses writes (another writer's lock, a full disk) never makes the writer lose a
group: it keeps it, retries, says so, and records what the full intake dropped as a ``log.gap``."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path

import apsw
import pykka
import pytest

from harness.actors.log_stall import LogHealth
from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.events import SessionClosed
from harness.store import StoreError, schema
from support import fill, small_tmpfs, wait_until

EVENTS = 600


def closed(i: int) -> SessionClosed:
    return SessionClosed(ts=1000.0 + i, session_id=f"s{i}", harness=None, reason="test")


@pytest.fixture
def writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EventIntake, LogHealth, Path]]:
    """A writer (intake of 100 events) whose statements wait 0.1 s for another connection's lock."""
    monkeypatch.setattr(schema, "WRITER_BUSY_TIMEOUT_MS", 100)
    db = tmp_path / "store" / "h.db"
    yield from _started(db, EventIntake(capacity=100))


def _started(db: Path, intake: EventIntake) -> Iterator[tuple[EventIntake, LogHealth, Path]]:
    """A writer on ``db``; its health is read from this thread, as the daemon's ``status`` does."""
    health = LogHealth(intake.__len__, lambda: intake.dropped)
    ref = LogWriterActor.start(db, intake, health=health)
    intake.attach(ref)
    try:
        yield intake, health, db
    finally:
        ref.stop(timeout=30)


def stored(db: Path, name: str) -> list[dict]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [json.loads(d) for (d,) in conn.execute("SELECT data FROM events WHERE name = ?", (name,))]
    finally:
        conn.close()


def emit_all(intake: EventIntake, health: LogHealth) -> None:
    """Emit EVENTS events once the writer has stalled on the first few."""
    for i in range(5):
        intake.emit(closed(i))
    wait_until(lambda: health.stalled_since is not None, message="the writer stalled")
    for i in range(5, EVENTS):
        intake.emit(closed(i))


def test_while_another_connection_holds_the_write_lock_the_writer_keeps_its_group_and_writes_it_after(
    writer, caplog
):
    intake, health, db = writer
    intake.capacity = EVENTS  # room for all: nothing may be dropped
    caplog.set_level(logging.WARNING, "harness.log_writer")
    other = apsw.Connection(str(db))
    other.execute("BEGIN IMMEDIATE")
    try:
        emit_all(intake, health)
        status = health.status()
        assert status["state"] == "stalled" and status["reason"].startswith("locked by another writer")
        assert status["waiting"] == EVENTS
    finally:
        other.execute("COMMIT")
    wait_until(lambda: len(stored(db, "session.closed")) == EVENTS, timeout=30, message="every event written")
    assert health.status()["state"] == "writing" and health.status()["recovered"]
    assert stored(db, "log.gap") == [] and intake.dropped == 0
    lines = [r.getMessage() for r in caplog.records]
    assert sum("call log: not written since" in line for line in lines) == 1  # one line, not one per retry
    assert any("call log: writing again" in line for line in lines)
    assert not any(r.exc_info for r in caplog.records)


def test_events_the_full_intake_drops_during_a_stall_are_recorded_as_one_log_gap_when_writing_resumes(writer):
    intake, health, db = writer
    other = apsw.Connection(str(db))
    other.execute("BEGIN IMMEDIATE")
    try:
        emit_all(intake, health)
    finally:
        other.execute("COMMIT")
    wait_until(lambda: stored(db, "log.gap"), timeout=30, message="the gap recorded")
    rows = stored(db, "session.closed")
    (gap,) = stored(db, "log.gap")
    assert intake.dropped > 0
    assert len(rows) + gap["events"] == EVENTS and gap["events"] == intake.dropped
    assert gap["names"] == ["session.closed"] and gap["counts"] == [intake.dropped]
    assert gap["store_error"].startswith("locked by another writer")
    dropped_ts = sorted({1000.0 + i for i in range(EVENTS)} - {r["ts"] for r in rows})
    assert (gap["first_ts"], gap["last_ts"]) == (dropped_ts[0], dropped_ts[-1])


def test_a_full_disk_holds_the_group_until_space_returns(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "WRITER_BUSY_TIMEOUT_MS", 100)
    with small_tmpfs(tmp_path / "tiny", "2m") as tiny:
        started = _started(tiny / "h.db", EventIntake(capacity=EVENTS))
        intake, health, db = next(started)
        filler = fill(tiny)
        try:
            emit_all(intake, health)
            assert health.status()["reason"].startswith("disk full")
        finally:
            filler.unlink()
        wait_until(
            lambda: len(stored(db, "session.closed")) == EVENTS, timeout=30, message="every event written"
        )
        assert intake.dropped == 0 and health.status()["state"] == "writing"
        started.close()


def test_a_store_that_cannot_be_opened_for_writing_is_one_clear_error_from_start(tmp_path):
    folder = tmp_path / "h.db"
    folder.mkdir()
    with pytest.raises(StoreError, match="cannot open the store for writing"):
        LogWriterActor.start(folder, EventIntake())
    with small_tmpfs(tmp_path / "ro", "1m") as ro:
        LogWriterActor.start(ro / "h.db", EventIntake()).stop()
        assert pykka.ActorRegistry.get_by_class(LogWriterActor) == []
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        with pytest.raises(StoreError, match="cannot open the store for writing: read-only"):
            LogWriterActor.start(ro / "h.db", EventIntake())


def test_what_the_store_still_refuses_at_stop_is_counted_as_dropped_and_said_in_one_line(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(schema, "WRITER_BUSY_TIMEOUT_MS", 100)
    counted: list[int] = []
    intake = EventIntake(on_drop=lambda: counted.append(1))
    db = tmp_path / "h.db"
    ref = LogWriterActor.start(db, intake)
    intake.attach(ref)
    other = apsw.Connection(str(db))
    other.execute("BEGIN IMMEDIATE")
    try:
        for i in range(50):
            intake.emit(closed(i))
        ref.stop(timeout=30)
    finally:
        other.execute("COMMIT")
    assert intake.dropped == len(counted) == 50
    assert stored(db, "session.closed") == []
    (line,) = [r.getMessage() for r in caplog.records if "not written at stop" in r.getMessage()]
    assert line.startswith("call log: 50 events not written at stop: the store is locked by another writer")
