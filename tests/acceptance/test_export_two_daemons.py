"""``harness export`` of two real daemons' stores into one folder: pyarrow, DuckDB and Hugging Face
``datasets`` read it as one dataset holding every call of both exactly once; a second export adds
nothing; trajectories hold their steps as lists, arguments as JSON text."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import datasets
import duckdb
import pyarrow.dataset as ds
import pytest

import harness
from harness.store.schema import store_id
from support import DEMO_UPSTREAM, PY, DaemonProcess, start_daemon_process, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

AGENTS = {"a": {"agent": 7}, "b": {"agent": 5, "other": 3}}
"""Per daemon: its harnesses (each the demo agent) and the calls each makes."""


def _config(agents: dict[str, int]) -> str:
    text = f'[mcp]\ndefault_policy = "p"\n\n[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n'
    text += '[mcp_policy.p]\nservers = ["demo"]\n\n'
    for name, calls in agents.items():
        argv = [PY, "-m", "harness.demo.agent", "--calls", str(calls), "--pause", "0"]
        text += f'[harness.{name}]\nargv = {toml_list(argv)}\nmcp_allow = ["read", "write"]\n\n'
    return text


def _finished(db: Path, agents: dict[str, int]) -> bool:
    """Every harness's run ended with all its calls logged."""
    if not db.exists():
        return False
    with harness.open_store(db) as store:
        runs = store.runs()
        return len(runs) == len(agents) and all(
            r.ended is not None and r.calls == agents[r.harness] for r in runs
        )


def _export(daemon: DaemonProcess, out: Path) -> str:
    cmd = [PY, "-m", "harness", "export", "--state-dir", str(daemon.state), "--format", "parquet"]
    done = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _parts(out: Path) -> set[Path]:
    return set(out.rglob("*.parquet"))


@pytest.fixture
def two_daemons(tmp_path: Path):
    daemons: list[DaemonProcess] = []
    try:
        for name, agents in AGENTS.items():
            (tmp_path / name).mkdir()
            config = tmp_path / name / "harness.toml"
            config.write_text(_config(agents))
            daemons.append(start_daemon_process(config, tmp_path / name / "state"))
        yield daemons
    finally:
        for daemon in daemons:
            if daemon.proc.poll() is None:
                daemon.proc.terminate()
                daemon.proc.wait(20)
            daemon.close_pipes()


def test_two_daemons_exports_read_back_as_one_dataset_with_every_call_once(
    two_daemons, tmp_path, monkeypatch
):
    out = tmp_path / "export"
    expected: set[tuple[str, int]] = set()
    runs: dict[str, int] = {}
    for daemon, agents in zip(two_daemons, AGENTS.values(), strict=True):
        wait_until(
            lambda d=daemon, a=agents: _finished(d.db, a), timeout=90, message="every agent's run ended"
        )
        with harness.open_store(daemon.db) as store:
            me = store_id(store.conn)
            expected |= {(me, row["position"]) for row in store.calls()}
            runs |= {r.run_id: r.calls for r in store.runs()}
        assert "calls and" in _export(daemon, out)
    assert len(expected) == sum(sum(a.values()) for a in AGENTS.values())

    table = ds.dataset(out / "calls", format="parquet", partitioning="hive").to_table()
    keys = list(zip(table["store_id"].to_pylist(), table["position"].to_pylist(), strict=True))
    assert len(keys) == len(expected) and set(keys) == expected
    assert set(table["harness"].to_pylist()) == {"agent", "other"}

    glob = f"{out}/calls/**/*.parquet"
    sql = f"SELECT store_id, position, harness FROM read_parquet('{glob}', hive_partitioning = true)"
    rows = duckdb.sql(sql).fetchall()
    assert len(rows) == len(expected) and {(s, p) for s, p, _ in rows} == expected

    files = sorted(str(p) for p in (out / "calls").rglob("*.parquet"))
    calls = datasets.Dataset.from_parquet(files, cache_dir=str(tmp_path / "hf"))
    hf_keys = list(zip(calls["store_id"], calls["position"], strict=True))
    assert len(hf_keys) == len(expected) and set(hf_keys) == expected

    trajectories = ds.dataset(out / "trajectories", format="parquet", partitioning="hive").to_table()
    by_run = {row["run_id"]: row for row in trajectories.to_pylist()}
    assert {r: len(row["steps"]) for r, row in by_run.items()} == runs
    for row in by_run.values():
        assert all(isinstance(json.loads(step["arguments"]), dict) for step in row["steps"])

    before = _parts(out)
    for daemon in two_daemons:
        assert "exported 0 calls and 0 run trajectories" in _export(daemon, out)
    assert _parts(out) == before
    assert ds.dataset(out / "calls", format="parquet", partitioning="hive").count_rows() == len(expected)
