"""The writer beside live calls: one commit per window for a trickle, and the CPU given back while a
small group's SQL runs (bench/README.md, "Issue 26 item 3")."""

from __future__ import annotations

import os
import threading

import apsw
import pytest
from tests_support import call_event

from harness.actors import log_writer
from harness.actors.log_writer import EventIntake, LogWriterActor
from support import wait_until


def test_events_that_come_during_a_commit_wait_for_their_window_not_a_commit_of_their_own(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(log_writer, "GROUP_WINDOW_S", 0.5)
    intake = EventIntake()
    came_during_a_commit = threading.Event()

    def committed(_position: int) -> None:  # in the writer's thread, right after its commit
        if not came_during_a_commit.is_set():
            intake.emit(call_event(10_000))  # a call answered while the writer committed
            came_during_a_commit.set()

    ref = LogWriterActor.start(tmp_path / "h.db", intake, on_commit=committed)
    intake.attach(ref)
    try:
        intake.emit(call_event(0))  # a trickle: committed after its window
        assert came_during_a_commit.wait(10)
        wait_until(ref.actor_inbox.empty)  # the writer has taken the late event's wake-up
        reader = apsw.Connection(str(tmp_path / "h.db"), flags=apsw.SQLITE_OPEN_READONLY)
        assert reader.execute("SELECT count(*) FROM events").get == 1  # the late one waits its window
        wait_until(lambda: reader.execute("SELECT count(*) FROM events").get == 2, timeout=10)
        assert ref.proxy().statistics().get(timeout=10).batches == 2
    finally:
        ref.stop(timeout=10)


@pytest.mark.parametrize(("events", "gives_way"), [(60, True), (2 * log_writer.GROUP_EVENTS, False)])
def test_a_small_group_gives_the_cpu_back_while_its_sql_runs_and_a_backlog_does_not(
    tmp_path, monkeypatch, events, gives_way
):
    yields: list[int] = []
    sched_yield = os.sched_yield
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1) or sched_yield())
    writer = LogWriterActor(tmp_path / "h.db", EventIntake())
    writer.write([call_event(i) for i in range(events)])
    assert bool(yields) is gives_way
    yields.clear()
    conn = writer._conn
    assert conn is not None
    assert conn.execute("SELECT count(*) FROM events a, events b").get  # thousands of steps, outside a write
    assert not yields
    writer.on_stop()
