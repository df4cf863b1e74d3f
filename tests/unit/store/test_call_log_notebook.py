"""docs/notebooks/call-log.ipynb executes against a generated store, and its cells' checks hold."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.testing.synthetic import SyntheticLog, load_catalogs

NOTEBOOK = Path(__file__).parents[3] / "docs" / "notebooks" / "call-log.ipynb"
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


@pytest.mark.slow  # ~5 s: a Jupyter kernel runs the whole notebook
def test_the_call_log_notebook_runs_and_its_checks_hold(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    store = generated_store(tmp_path / "harness.db")
    monkeypatch.setenv("HARNESS_STORE", str(store))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend (Agg) renders PNGs
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Jupyter's own deprecation notices are not ours
        client = nbclient.NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "calls from" in text and "hit rate" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # latency, calls over time, failures
    assert os.environ.get("HARNESS_STORE") == str(store)
