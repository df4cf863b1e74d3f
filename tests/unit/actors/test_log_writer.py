"""The single writer: group commit, bounded intake, flush on stop, catching projections up."""

from __future__ import annotations

import time
from collections.abc import Iterator

import apsw
import pykka
import pytest
from tests_support import call_event

from harness.actors import log_writer
from harness.actors.intake import FLUSH
from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.events import DaemonStopped, SessionClosed
from harness.projections import all_projections
from harness.store import append, envelopes_for, open_for_writing
from support import wait_until


def closed(i: int) -> SessionClosed:
    return SessionClosed(ts=1000.0 + i, session_id=f"s{i}", harness=None, reason="test")


def test_a_full_intake_drops_and_counts_instead_of_blocking():
    counted: list[int] = []
    intake = EventIntake(capacity=10, on_drop=lambda: counted.append(1))
    for i in range(15):
        intake.emit(closed(i))
    assert len(intake) == 10
    assert intake.dropped == 5
    assert len(counted) == 5


def test_emitted_events_are_committed_in_order_and_counted(tmp_path):
    intake = EventIntake()
    ref = LogWriterActor.start(tmp_path / "h.db", intake)
    intake.attach(ref)
    try:
        for i in range(1000):
            intake.emit(closed(i))
        assert ref.proxy().wait_flushed().get(timeout=10) == 1000
        stats = ref.proxy().statistics().get(timeout=10)
        assert stats.events_written == 1000 and stats.dropped == 0 and stats.pending == 0
        assert stats.batches < 1000  # group commit: fewer transactions than events
    finally:
        ref.stop()
    conn = apsw.Connection(str(tmp_path / "h.db"))
    positions = [p for (p,) in conn.execute("SELECT position FROM events ORDER BY position")]
    assert positions == list(range(1, 1001))


def test_stopping_the_writer_commits_what_is_still_queued(tmp_path):
    intake = EventIntake()
    ref = LogWriterActor.start(tmp_path / "h.db", intake)
    for i in range(50):  # not attached: nothing wakes the writer until it stops
        intake.emit(closed(i))
    ref.stop(timeout=10)
    count = apsw.Connection(str(tmp_path / "h.db")).execute("SELECT count(*) FROM events").get
    assert count == 50


def test_a_writer_started_on_an_existing_log_continues_its_positions(tmp_path):
    path = tmp_path / "h.db"
    for _round in range(2):
        intake = EventIntake()
        ref = LogWriterActor.start(path, intake)
        intake.attach(ref)
        intake.emit(DaemonStopped(ts=time.time(), reason="test"))
        ref.proxy().wait_flushed().get(timeout=10)
        ref.stop()
    conn = apsw.Connection(str(path))
    assert [p for (p,) in conn.execute("SELECT position FROM events")] == [1, 2]


def test_a_projection_behind_the_log_is_caught_up_when_the_writer_starts(tmp_path):
    path = tmp_path / "h.db"
    conn = open_for_writing(path)
    with conn:
        append(conn.cursor(), envelopes_for([call_event(i) for i in range(5)], 1))
    conn.close()
    intake = EventIntake()
    ref = LogWriterActor.start(path, intake, all_projections())
    ref.proxy().wait_flushed().get(timeout=10)
    ref.stop()
    rows = apsw.Connection(str(path)).execute("SELECT count(*) FROM call_log").get
    assert rows == 5


def test_the_writer_reports_each_committed_position_to_on_commit(tmp_path):
    committed: list[int] = []
    intake = EventIntake()
    ref = LogWriterActor.start(tmp_path / "h.db", intake, on_commit=committed.append)
    intake.attach(ref)
    try:
        for i in range(300):
            intake.emit(closed(i))
        ref.proxy().wait_flushed().get(timeout=10)
    finally:
        ref.stop()
    assert committed == sorted(committed) and committed[-1] == 300


def test_a_failing_compaction_told_to_the_writer_does_not_stop_it(tmp_path, caplog):
    from harness.actors.log_writer import Compact

    intake = EventIntake()
    ref = LogWriterActor.start(tmp_path / "h.db", intake)
    intake.attach(ref)
    try:
        ref.tell(Compact(older_than=float("nan")))
        intake.emit(closed(1))
        assert ref.proxy().wait_flushed().get(timeout=10) == 1
    finally:
        ref.stop()
    assert "retention compaction failed" in caplog.text


def test_under_a_load_that_overflows_the_intake_rows_plus_dropped_equal_the_calls(tmp_path):
    """Issue 10: each recorded call is one row or one counted drop, never both, never neither."""
    from devtools.sample_call import record_sample_call
    from harness.gateway.evidence.recording import CallRecorder

    dropped_metric: list[int] = []
    intake = EventIntake(capacity=100, on_drop=lambda: dropped_metric.append(1))
    ref = LogWriterActor.start(tmp_path / "h.db", intake)
    intake.attach(ref)
    recorder = CallRecorder(intake.emit, "redacted")
    calls = 20_000
    try:
        for _ in range(calls):  # a tight loop: the writer thread cannot keep up
            record_sample_call(recorder)
        ref.proxy().wait_flushed().get(timeout=60)
        stats = ref.proxy().statistics().get(timeout=10)
    finally:
        ref.stop()
    conn = apsw.Connection(str(tmp_path / "h.db"))
    ((rows,),) = conn.execute("SELECT count(*) FROM call_log").fetchall()
    ((gaps, gap_sum),) = conn.execute(
        "SELECT count(*), sum(data ->> 'events') FROM events WHERE name = 'log.gap'"
    )
    assert intake.dropped > 0, "the load did not overflow the intake"
    assert rows + intake.dropped == calls
    assert gap_sum == intake.dropped, "every drop is recorded in a log.gap"
    assert stats.events_written == rows + gaps and stats.dropped == intake.dropped == len(dropped_metric)


@pytest.fixture
def patient_writer(tmp_path, monkeypatch) -> Iterator[tuple[EventIntake, pykka.ActorRef[LogWriterActor]]]:
    """A writer whose wait for a group would last a minute: anything faster was ended by a message."""
    monkeypatch.setattr(log_writer, "GROUP_WINDOW_S", 60.0)
    intake = EventIntake()
    ref = LogWriterActor.start(tmp_path / "h.db", intake)
    intake.attach(ref)
    yield intake, ref
    if ref.is_alive():
        ref.stop()


def test_the_writers_wait_for_a_group_ends_at_an_ask_or_a_full_group_not_at_the_window(
    tmp_path, patient_writer
):
    intake, ref = patient_writer
    intake.emit(closed(0))  # wakes the writer, which waits for a group
    assert ref.proxy().wait_flushed().get(timeout=10) == 1  # the ask ends the wait
    reader = apsw.Connection(str(tmp_path / "h.db"), flags=apsw.SQLITE_OPEN_READONLY)
    intake.emit(closed(1))  # the writer waits again; a full group ends that wait without an ask
    wait_until(ref.actor_inbox.empty)  # it has taken the wake-up
    for i in range(2, 1 + log_writer.GROUP_EVENTS):
        intake.emit(closed(i))
    wait_until(lambda: reader.execute("SELECT count(*) FROM events").get >= log_writer.GROUP_EVENTS)
    intake.emit(closed(999))  # and waits once more: a stop ends that wait too
    wait_until(ref.actor_inbox.empty)
    ref.stop(timeout=10)  # (behind the window, this would time out)


def test_a_wake_up_whose_events_a_drain_already_took_costs_no_commit(patient_writer):
    intake, ref = patient_writer
    before = ref.proxy().wait_flushed().get(timeout=10)
    batches = ref.proxy().statistics().get(timeout=10).batches
    ref.tell(FLUSH)  # stale: as when an event was told while a drain took it
    wait_until(ref.actor_inbox.empty)
    for i in range(5):  # a trickle: the first wakes the writer, which then waits for a group
        intake.emit(closed(i))
        wait_until(ref.actor_inbox.empty)
    assert ref.proxy().wait_flushed().get(timeout=10) == before + 5
    assert ref.proxy().statistics().get(timeout=10).batches == batches + 1  # one commit, not five
