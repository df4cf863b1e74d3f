"""Runs, trajectories and the one definition of a failed call, read through ``open_store``."""

from __future__ import annotations

import pytest
from tests_support import T0, exit_event, run_call, spawn_event

import harness
from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.projections.runs import RunsProjection
from harness.vocabulary import FAILED_OUTCOMES


@pytest.fixture
def store(tmp_path):
    outcomes = ["ok", "tool_error", "denied", "cancelled", "timeout", "ok"]
    events = [
        spawn_event("run1", T0),
        *[run_call(i, "run1", outcome, T0 + 1 + i) for i, outcome in enumerate(outcomes)],
        exit_event("run1", T0 + 10, 1),
        spawn_event("run2", T0 + 11, restarted="run1"),
        run_call(9, "run2", "ok", T0 + 13),
        run_call(8, "run2", "ok", T0 + 12),  # started earlier, logged later
        run_call(7, "lost", "denied", T0 + 14),  # a run whose spawn is not in the log
    ]
    path = tmp_path / "harness.db"
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write(events).get(timeout=30)
    ref.stop()
    with harness.open_store(path) as view:
        yield view


def test_runs_hold_each_spawn_its_exit_the_run_it_restarted_and_counted_calls(store):
    runs = {r.run_id: r for r in store.runs()}
    first, second, lost = runs["run1"], runs["run2"], runs["lost"]
    assert (first.adapter, first.model, first.exit_code, first.restarted_run_id) == ("generic", "m", 1, None)
    assert first.started == "2026-11-30T00:53:20.000Z" and first.ended == "2026-11-30T00:53:30.000Z"
    assert (first.calls, first.failures, first.denials) == (6, 3, 1)
    assert (second.restarted_run_id, second.ended, second.calls, second.failures) == ("run1", None, 2, 0)
    assert (lost.started, lost.calls, lost.denials) == (None, 1, 1)
    assert [r.run_id for r in store.runs(since="2026-11-30T00:53:25.000Z")] == ["run2"]


def test_a_trajectory_lists_a_runs_steps_by_start_time_with_how_each_was_called(store):
    steps = store.trajectory("run2").steps
    assert [s.index for s in steps] == [0, 1]
    assert [s.name for s in steps] == ["demo__tool0", "demo__tool1"]  # call 8 started first
    assert steps[0].position > steps[1].position
    assert (steps[0].request_id, steps[0].via_call_tool, steps[0].failed) == ("8", False, False)
    assert [t.run.run_id for t in store.trajectories(harness="h")] == ["lost", "run1", "run2"]
    with pytest.raises(harness.store.StoreError, match="no run 'nope'"):
        store.trajectory("nope")


def test_every_reader_counts_the_same_calls_as_failed_and_a_cancelled_call_is_not_one(store):
    assert "cancelled" not in FAILED_OUTCOMES and "tool_error" in FAILED_OUTCOMES
    run1 = store.calls(run_id="run1")
    failed = {r["position"] for r in run1 if r["outcome"] in FAILED_OUTCOMES}
    assert {r["position"] for r in store.calls(run_id="run1", failed=True)} == failed
    sessions = store.sessions()
    assert sum(s.failures for s in sessions) == len(store.calls(failed=True))
    assert sum(u.failures for u in store.tool_usage()) == len(store.calls(failed=True))
    assert [s.failed for s in store.trajectory("run1").steps] == [False, True, True, False, True, False]
    assert sum(r.failures for r in store.runs()) == len(store.calls(failed=True))


def test_runs_are_a_projection_of_their_own_version(store):
    versions = store.versions()
    assert versions.projections["runs"] == RunsProjection.version
    assert versions.stale == ()
    assert versions.schema >= 2


def test_open_store_opens_the_default_state_dirs_store_or_the_store_in_a_state_dir(tmp_path, monkeypatch):
    state = tmp_path / "xdg" / "harness"
    state.mkdir(parents=True)
    ref = LogWriterActor.start(state / "harness.db", EventIntake())
    ref.proxy().write([run_call(0, "run1", "ok", T0)]).get(timeout=30)
    ref.stop()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    with harness.open_store() as store:
        assert store.path == state / "harness.db" and len(store.calls()) == 1
    with harness.open_store(state) as store:
        assert store.path == state / "harness.db"
    with pytest.raises(harness.store.StoreError, match="no store here"):
        harness.open_store(tmp_path)
