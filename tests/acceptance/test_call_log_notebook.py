"""docs/notebooks/call-log.ipynb executes against a generated store, and its cells' checks hold."""

from __future__ import annotations

from pathlib import Path

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.sample_store import SyntheticLog, load_catalogs
from notebook_support import execute_notebook, images, printed

CATALOGS = Path(__file__).parents[4] / "shared" / "data" / "tool-catalogs"


def generated_store(path: Path) -> Path:
    """Three days of calls by four harnesses over real catalogues, through the real writer."""
    catalogs = load_catalogs(str(CATALOGS)) if CATALOGS.is_dir() else None
    log = SyntheticLog(calls=4000, seed=11, days=3.0, restarts=3)
    if catalogs:
        log.catalogs = {k: catalogs[k] for k in ("git", "github", "filesystem", "fetch", "time", "slack")}
    intake = EventIntake()
    ref = LogWriterActor.start(path, intake)
    intake.attach(ref)
    try:
        for event in log.events():
            intake.emit(event)
        ref.proxy().wait_flushed().get(timeout=60)
    finally:
        ref.stop()
    return path


def test_the_call_log_notebook_runs_and_its_checks_hold(tmp_path, monkeypatch):
    store = generated_store(tmp_path / "harness.db")
    outputs = execute_notebook(store, tmp_path, monkeypatch)
    text = printed(outputs)
    assert "calls from" in text and "hit rate" in text
    assert images(outputs) >= 4  # latency, calls over time, failures and outcomes, a run's timeline
