"""Executing docs/notebooks/call-log.ipynb against a store, in a real Jupyter kernel."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = Path(__file__).parents[1] / "docs" / "notebooks" / "call-log.ipynb"


def execute_notebook(store: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Run every cell with ``HARNESS_STORE=store``; return the code cells' outputs (none may be an
    error: each analysis cell asserts what it computed)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("HARNESS_STORE", str(store))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend (Agg) renders PNGs
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Jupyter's own deprecation notices are not ours
        client = nbclient.NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
        )
        client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert os.environ.get("HARNESS_STORE") == str(store)
    return outputs


def printed(outputs: list[dict[str, Any]]) -> str:
    """What the cells printed."""
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def images(outputs: list[dict[str, Any]]) -> int:
    """How many plots the cells drew."""
    return sum(1 for o in outputs if "image/png" in o.get("data", {}))
