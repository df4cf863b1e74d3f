"""``harness export``: calls and ended runs' trajectories as Hive partitions, written again only
for what is new; Parquet readable by pyarrow's Hive partitioning with one schema for every part."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests_support import T0, call_event, exit_event, run_call, spawn_event

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.store import open_read_only
from harness.store.schema import store_id


def _write(path, events):
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write(list(events)).get(timeout=30)
    ref.stop()


def _export(state_dir, *args):
    cmd = [sys.executable, "-m", "harness", "export", "--state-dir", str(state_dir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _first_day(tmp_path):
    _write(
        tmp_path / "harness.db",
        [
            spawn_event("run1", T0),
            run_call(0, "run1", "ok", T0 + 1),
            run_call(1, "run1", "denied", T0 + 2),
            exit_event("run1", T0 + 3, 0),
            spawn_event("run2", T0 + 4),
            run_call(2, "run2", "ok", T0 + 5),
            call_event(3, harness=None, ts=T0 + 6),
        ],
    )


def test_a_jsonl_export_writes_hive_partitions_and_a_second_one_only_what_is_new(tmp_path):
    _first_day(tmp_path)
    out = tmp_path / "out"
    first = _export(tmp_path, "--format", "jsonl", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert (
        "exported 4 calls and 1 run trajectories" in first.stdout and "1 runs still running" in first.stdout
    )
    calls = sorted(p.relative_to(out).as_posix() for p in (out / "calls").rglob("*.jsonl"))
    store = store_id(open_read_only(tmp_path / "harness.db"))
    assert calls == [
        f"calls/harness=__HIVE_DEFAULT_PARTITION__/date=2026-11-30/part-{store}-1-7.jsonl",
        f"calls/harness=h/date=2026-11-30/part-{store}-1-7.jsonl",
    ]
    rows = [json.loads(line) for line in (out / calls[1]).read_text().splitlines()]
    assert [r["position"] for r in rows] == [2, 3, 6] and "harness" not in rows[0]
    assert {r["store_id"] for r in rows} == {store}
    [traj] = [json.loads(p.read_text()) for p in (out / "trajectories").rglob("*.jsonl")]
    assert traj["run_id"] == "run1" and [s["outcome"] for s in traj["steps"]] == ["ok", "denied"]

    _write(tmp_path / "harness.db", [run_call(4, "run2", "ok", T0 + 7), exit_event("run2", T0 + 8, 1)])
    second = _export(tmp_path, "--format", "jsonl", "--out", str(out))
    assert "exported 1 calls and 1 run trajectories" in second.stdout, second.stdout
    new = sorted(p.name for p in out.rglob(f"part-{store}-8-*.jsonl"))
    assert new == [f"part-{store}-8-9.jsonl"] * 2  # the call, run2's trajectory
    again = _export(tmp_path, "--format", "jsonl", "--out", str(out))
    assert "exported 0 calls and 0 run trajectories" in again.stdout
    refused = _export(tmp_path, "--format", "parquet", "--out", str(out))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "holds a jsonl export" in refused.stderr


def test_a_parquet_export_reads_back_as_one_hive_dataset_with_trajectories_as_lists(tmp_path):
    ds = pytest.importorskip("pyarrow.dataset")
    _first_day(tmp_path)
    out = tmp_path / "out"
    assert _export(tmp_path, "--format", "parquet", "--out", str(out), "--harness", "h").returncode == 0
    _write(tmp_path / "harness.db", [run_call(4, "run2", "ok", T0 + 7), exit_event("run2", T0 + 8, 1)])
    assert _export(tmp_path, "--format", "parquet", "--out", str(out), "--harness", "h").returncode == 0
    calls = ds.dataset(out / "calls", format="parquet", partitioning="hive").to_table().to_pylist()
    assert sorted(r["position"] for r in calls) == [2, 3, 6, 8]
    assert {r["harness"] for r in calls} == {"h"} and calls[0]["args"] is None
    runs = ds.dataset(out / "trajectories", format="parquet", partitioning="hive").to_table().to_pylist()
    by_id = {r["run_id"]: r for r in runs}
    assert [s["name"] for s in by_id["run2"]["steps"]] == ["demo__tool2", "demo__tool0"]
    assert by_id["run2"]["exit_code"] == 1 and by_id["run1"]["denials"] == 1
    assert by_id["run1"]["steps"][0]["ts"].year == 2026
