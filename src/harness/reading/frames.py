"""The reading API's pandas DataFrames (pandas must be installed: the ``analysis`` extra)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from harness.reading.runs import Step, Trajectory

EVENT_COLUMNS = ("position", "ts", "name", "version", "correlation", "data")
"""A stored event's row, as ``store.read_rows`` yields it."""


def frame(rows: Iterable[Any], columns: Iterable[str] | None = None, *, times: Iterable[str] = ()) -> Any:
    """``rows`` (dicts, or dataclasses) as a DataFrame; the ``times`` columns it has (ISO-8601
    text) parsed to UTC datetimes."""
    pd = _pandas()
    records = [row if isinstance(row, Mapping) else asdict(row) for row in rows]
    out = pd.DataFrame(records, columns=None if columns is None else list(columns))
    for column in times:
        if column in out:
            out[column] = pd.to_datetime(out[column], utc=True, format="ISO8601")
    return out


def steps_frame(trajectories: Iterable[Trajectory]) -> Any:
    """The steps of ``trajectories``, one row each, with the run's id and harness."""
    rows = [
        {"run_id": t.run.run_id, "harness": t.run.harness, **asdict(step)}
        for t in trajectories
        for step in t.steps
    ]
    return frame(rows, ["run_id", "harness", *Step.__annotations__], times=("ts",))


def events_frame(rows: Iterable[tuple[int, float, str, int, str, str]]) -> Any:
    """Stored event rows as a DataFrame, ``ts`` (epoch seconds) as UTC datetimes."""
    pd = _pandas()
    out = pd.DataFrame(list(rows), columns=list(EVENT_COLUMNS))
    out["ts"] = pd.to_datetime(out["ts"], unit="s", utc=True)
    return out


def _pandas() -> Any:
    """The pandas module, or an ImportError that says how to install it."""
    try:
        return importlib.import_module("pandas")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("DataFrames need pandas: pip install pandas") from exc
