"""``harness export`` into a folder shared by several stores (daemons): each keeps its own parts and
cursor; the files' schema version is in the state file and in each Parquet file; a terminal shows
progress."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest
from tests_support import T0, call_event, exit_event, run_call, spawn_event

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.reading import open_store
from harness.reading.export import EXPORT_SCHEMA, STATE_FILE, export
from harness.replay import replay
from harness.store.schema import store_id


def _write(path, events):
    ref = LogWriterActor.start(path, EventIntake())
    ref.proxy().write(list(events)).get(timeout=30)
    ref.stop()


def _export(db, out, fmt="jsonl"):
    with open_store(db) as view:
        return export(view, out, fmt)


def _rows(out):
    return [json.loads(line) for p in (out / "calls").rglob("*.jsonl") for line in p.read_text().splitlines()]


def _id(db):
    with open_store(db) as view:
        return store_id(view.conn)


def test_two_stores_exported_into_one_folder_each_keep_their_calls_and_their_own_cursor(tmp_path):
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "out"
    _write(a, [call_event(i, ts=T0 + i) for i in range(3)])
    _write(b, [call_event(i, ts=T0 + i) for i in range(2)])  # the same positions and day as a's
    assert _export(a, out).calls == 3
    assert _export(b, out).calls == 2
    keys = sorted((r["store_id"], r["position"]) for r in _rows(out))
    assert keys == sorted([(_id(a), 1), (_id(a), 2), (_id(a), 3), (_id(b), 1), (_id(b), 2)])
    _write(a, [call_event(3, ts=T0 + 3)])
    assert (_export(b, out).calls, _export(a, out).calls, _export(a, out).calls) == (0, 1, 0)
    assert len(_rows(out)) == 6


def test_a_replayed_copy_keeps_its_stores_id_so_exporting_both_writes_each_call_once(tmp_path):
    live, copy, out = tmp_path / "live.db", tmp_path / "copy.db", tmp_path / "out"
    _write(live, [call_event(i, ts=T0 + i) for i in range(3)])
    replay(live, copy, progress=False)
    assert _id(copy) == _id(live) is not None
    assert (_export(live, out).calls, _export(copy, out).calls) == (3, 0)


def test_parquet_parts_and_the_state_file_carry_the_export_schema_version(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    db, out = tmp_path / "harness.db", tmp_path / "out"
    _write(db, [spawn_event("r", T0), run_call(0, "r", "ok", T0 + 1), exit_event("r", T0 + 2, 0)])
    files = _export(db, out, "parquet").files
    assert len(files) == 2  # the call, the trajectory
    for path in files:
        assert pq.read_schema(path).metadata[b"harness.export_schema"] == str(EXPORT_SCHEMA).encode()
    assert json.loads((out / STATE_FILE).read_text())["schema"] == EXPORT_SCHEMA


def test_a_folder_written_by_another_export_schema_is_refused_in_one_line(tmp_path):
    db, out = tmp_path / "harness.db", tmp_path / "out"
    _write(db, [call_event(0)])
    out.mkdir()
    (out / STATE_FILE).write_text(json.dumps({"format": "jsonl", "calls_after": 3, "runs": []}))
    cmd = [sys.executable, "-m", "harness", "export", "--state-dir", str(tmp_path), "--format", "jsonl"]
    done = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"schema version 0, this harness writes version {EXPORT_SCHEMA}" in done.stderr


def test_an_export_on_a_terminal_shows_the_rows_written_on_stderr(tmp_path):
    _write(tmp_path / "harness.db", [call_event(i, ts=T0 + 86_400 * i) for i in range(3)])
    cmd = [sys.executable, "-m", "harness", "export", "--state-dir", str(tmp_path), "--format", "jsonl"]
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*cmd, "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=follower, timeout=60
        )
        os.close(follower)
        shown = b""
        while chunk := _read(leader):
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0 and b"exported 3 calls" in done.stdout
    assert b"3/3 rows" in shown and b"rows/s" in shown


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: the terminal's other end is closed and nothing is left
        return b""


def test_the_reading_example_in_docs_dataset_md_runs_on_a_parquet_export(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # datasets' cache (read when it is imported)
    db, out = tmp_path / "harness.db", tmp_path / "out"
    _write(db, [spawn_event("r", T0), run_call(0, "r", "ok", T0 + 1), exit_event("r", T0 + 2, 0)])
    _export(db, out, "parquet")
    text = (Path(__file__).parents[3] / "docs" / "dataset.md").read_text()
    (code,) = re.findall(r"```py\n(.*?)```", text, flags=re.S)
    namespace: dict = {}
    exec(compile(code.replace("DIR", str(out)), "docs/dataset.md", "exec"), namespace)
    assert namespace["calls"].num_rows == 1 and namespace["per_harness"] == [("h", 1)]
    assert namespace["runs"]["run_id"] == ["r"]


def test_a_parquet_export_without_pyarrow_names_the_extra_in_one_line_and_writes_nothing(tmp_path):
    _write(tmp_path / "harness.db", [call_event(0)])
    blocker = tmp_path / "blocker" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no pyarrow here')\n")
    cmd = [sys.executable, "-m", "harness", "export", "--state-dir", str(tmp_path), "--format", "parquet"]
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}
    done = subprocess.run(
        [*cmd, "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'harness-gateway[analysis]'" in done.stderr
    assert not (tmp_path / "out").exists()
