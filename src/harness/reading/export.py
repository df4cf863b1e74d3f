"""``harness export``: calls and per-run trajectories as Hive-style partitions, incrementally.

Layout under the output folder (``FMT`` is ``parquet`` or ``jsonl``; ``ID`` the store's id)::

    calls/harness=NAME/date=YYYY-MM-DD/part-ID-FIRST-LAST.FMT         one row per call (call_log)
    trajectories/harness=NAME/date=YYYY-MM-DD/part-ID-FIRST-LAST.FMT  one row per ended run, its steps
    _harness_export.json                                              what was exported (the cursors)

``harness`` and ``date`` (of a call's start, of a run's start) are the partition keys, so they are
not repeated inside the files; an unattributed call's harness is ``__HIVE_DEFAULT_PARTITION__`` (null
to Hive readers: pyarrow, DuckDB, Spark). Every row has ``store_id``; ``ID-FIRST-LAST`` name the
store and the log positions the export covered, so neither a later export nor another daemon's
export into the same folder writes over a part. A second export of a store writes only the calls
logged since and the runs that ended since; a run still running is exported once it has ended.
The files' schema is versioned (``EXPORT_SCHEMA``, in the state file and in each Parquet file's
metadata); docs/dataset.md documents it.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from harness.projections.call_log import COLUMNS
from harness.reading import StoreView, TimeBound, iso_bound
from harness.reading.runs import Run, Step, Trajectory, query_trajectories
from harness.store.schema import store_id

Format = Literal["parquet", "jsonl"]
STATE_FILE = "_harness_export.json"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
EXPORT_SCHEMA = 1
"""The version of the exported files' schema (and of the state file): docs/dataset.md's change log."""
SCHEMA_METADATA_KEY = b"harness.export_schema"

Progress = Callable[[int, int, float], None]
"""``report(rows_written, rows_to_write, seconds)``, called after each part."""


class ExportError(Exception):
    """An export cannot run: a missing library, an output folder of another format."""


@dataclass
class StoreCursor:
    """What earlier exports of one store into a folder wrote: where the next begins."""

    calls_after: int = 0
    """Calls logged up to this position are exported."""
    runs: list[str] = field(default_factory=list)
    """Runs whose trajectory is exported."""


@dataclass
class ExportState:
    """What earlier exports to one folder wrote: a cursor per store (per daemon)."""

    format: Format
    stores: dict[str, StoreCursor] = field(default_factory=dict)
    schema: int = EXPORT_SCHEMA


@dataclass(frozen=True)
class ExportResult:
    """What one export wrote."""

    calls: int
    runs: int
    running: int
    """Selected runs not exported because they still run."""
    files: tuple[Path, ...]


def export(
    view: StoreView,
    out: Path,
    fmt: Format,
    *,
    since: TimeBound = None,
    until: TimeBound = None,
    harness: str | None = None,
    run_id: str | None = None,
    report: Progress | None = None,
) -> ExportResult:
    """Export what is new since the folder's last export of this store: calls (``since`` ≤ start <
    ``until``) and the trajectories of the runs that ended (started in that window). Use the same
    filters for one folder: what they leave out of an export is not exported later. Other stores'
    exports may share the folder."""
    if fmt == "parquet":
        _pyarrow()
    out.mkdir(parents=True, exist_ok=True)
    state = load_state(out, fmt)
    view.conn.execute("BEGIN")  # one snapshot: what is counted is what is written
    try:
        store = store_id(view.conn)
        cursor = state.stores.setdefault(store, StoreCursor())
        newest = int(view.conn.execute("SELECT coalesce(max(position), 0) FROM events").get)
        calls = view.calls(
            harness=harness, since=since, until=until, run_id=run_id, after_position=cursor.calls_after
        )
        selected = view.runs(harness=harness, since=since, run_ids=None if run_id is None else [run_id])
        hi = iso_bound(until)
        selected = [r for r in selected if hi is None or (r.started is not None and r.started < hi)]
        done = set(cursor.runs)
        ended = [r for r in selected if r.ended is not None and r.run_id not in done]
        trajectories = query_trajectories(view.conn, ended)
    finally:
        view.conn.execute("COMMIT")
    name = f"part-{store}-{cursor.calls_after + 1}-{newest}"
    writing = _Writing(fmt, name, len(calls) + len(trajectories), report)
    files = writing.parts(out / "calls", call_rows(calls, store), "calls")
    files += writing.parts(out / "trajectories", trajectory_rows(trajectories, store), "trajectories")
    cursor.calls_after = max(cursor.calls_after, newest)
    cursor.runs.extend(r.run_id for r in ended)
    save_state(out, state)
    running = sum(1 for r in selected if r.ended is None)
    return ExportResult(len(calls), len(ended), running, tuple(files))


def load_state(out: Path, fmt: Format) -> ExportState:
    """The folder's export state (a new one for a folder never exported to)."""
    path = out / STATE_FILE
    if not path.exists():
        return ExportState(fmt)
    try:
        raw = json.loads(path.read_text())
        schema = int(raw.get("schema", 0))
        if schema != EXPORT_SCHEMA:
            raise ExportError(
                f"{out} holds an export of schema version {schema}, this harness writes version "
                f"{EXPORT_SCHEMA}; export into a new folder"
            )
        stores = {
            str(k): StoreCursor(int(v["calls_after"]), [str(r) for r in v["runs"]])
            for k, v in raw["stores"].items()
        }
        state = ExportState(raw["format"], stores)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ExportError(f"{path}: not an export state ({exc!r}); export into a new folder") from None
    if state.format != fmt:
        raise ExportError(f"{out} holds a {state.format} export; export {fmt} into another folder")
    return state


def save_state(out: Path, state: ExportState) -> None:
    """Write the state atomically (after the parts it describes)."""
    _atomic_write(out / STATE_FILE, json.dumps(asdict(state), indent=1).encode())


def partition(harness: str | None, ts: str | None) -> str:
    """``harness=NAME/date=YYYY-MM-DD`` for a row (names URI-escaped, as Hive readers expect)."""
    who = NULL_PARTITION if harness is None else quote(harness, safe="")
    day = NULL_PARTITION if ts is None else ts[:10]
    return f"harness={who}/date={day}"


def call_rows(rows: Iterable[dict[str, Any]], store: str) -> dict[str, list[dict[str, Any]]]:
    """Call-log rows (``store_id`` first) grouped by partition, without the partition key ``harness``."""
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        fields = {"store_id": store} | {k: v for k, v in row.items() if k != "harness"}
        parts[partition(row["harness"], row["ts"])].append(fields)
    return parts


def trajectory_rows(trajectories: Iterable[Trajectory], store: str) -> dict[str, list[dict[str, Any]]]:
    """One row per run (``store_id``, its fields, ``steps`` a list of step dicts) grouped by partition."""
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in trajectories:
        run = {"store_id": store} | {k: v for k, v in asdict(t.run).items() if k != "harness"}
        first = t.run.started or (t.steps[0].ts if t.steps else None)
        parts[partition(t.run.harness, first)].append({**run, "steps": [asdict(s) for s in t.steps]})
    return parts


@dataclass
class _Writing:
    """One export's parts being written: their name and format, and the progress reported."""

    fmt: Format
    name: str
    total: int
    report: Progress | None
    done: int = 0
    started: float = field(default_factory=time.perf_counter)

    def parts(self, root: Path, parts: dict[str, list[dict[str, Any]]], kind: str) -> list[Path]:
        """Write each partition's rows to ``root/PARTITION/NAME.FMT`` (atomically); the paths."""
        written = []
        for where, rows in sorted(parts.items()):
            path = root / where / f"{self.name}.{self.fmt}"
            path.parent.mkdir(parents=True, exist_ok=True)
            if self.fmt == "jsonl":
                text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
                _atomic_write(path, text.encode())
            else:
                _write_parquet(path, rows, kind)
            written.append(path)
            self.done += len(rows)
            if self.report is not None:
                self.report(self.done, self.total, time.perf_counter() - self.started)
        return written


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# ---------------------------------------------------------------- parquet


def _pyarrow() -> Any:
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise ExportError("--format parquet needs pyarrow: pip install 'harness-gateway[analysis]'") from None


_STRING_COLUMNS = frozenset(
    {"store_id", "adapter", "model", "config_hash", "upstream", "tool", "tier", "args_hash", "args"}
    | {"outcome"}
    | {"error_reason", "trace_id", "span_id", "session_id", "exposed_name", "request_id", "run_id"}
    | {"name", "arguments", "harness", "restarted_run_id"}
)
_INT_COLUMNS = frozenset({"position", "response_bytes", "response_tokens_est", "index", "exit_code"})
_INT_COLUMNS |= {"calls", "failures", "denials", "args_bytes"}
_BOOL_COLUMNS = frozenset({"via_call_tool", "failed", "args_truncated", "arguments_truncated"})
_TIME_COLUMNS = frozenset({"ts", "started", "ended"})


def _arrow_type(pa: Any, column: str, time: Any) -> Any:
    if column in _TIME_COLUMNS:
        return time
    if column in _INT_COLUMNS:
        return pa.int64()
    if column in _BOOL_COLUMNS:
        return pa.bool_()
    if column == "latency_ms":
        return pa.float64()
    if column in _STRING_COLUMNS:
        return pa.string()
    raise AssertionError(f"no Arrow type for column {column!r}")


def _schema(pa: Any, kind: str, time: Any) -> Any:
    """The Arrow schema of a part, times as ``time``: explicit, so every part has the same one
    (``args`` stays JSON text: each tool's arguments differ)."""
    metadata = {SCHEMA_METADATA_KEY: str(EXPORT_SCHEMA).encode()}
    if kind == "calls":
        calls = [c for c in ("store_id", *COLUMNS) if c != "harness"]
        return pa.schema([(c, _arrow_type(pa, c, time)) for c in calls], metadata=metadata)
    step = pa.struct([(c, _arrow_type(pa, c, time)) for c in Step.__dataclass_fields__])
    run = [(c, _arrow_type(pa, c, time)) for c in ("store_id", *Run.__dataclass_fields__) if c != "harness"]
    return pa.schema([*run, ("steps", pa.list_(step))], metadata=metadata)


def _write_parquet(path: Path, rows: list[dict[str, Any]], kind: str) -> None:
    """Rows as read (times as ISO text), cast by Arrow to the final schema (times as UTC ms)."""
    pa, pq = _pyarrow()
    table = pa.Table.from_pylist(rows, schema=_schema(pa, kind, pa.string()))
    table = table.cast(_schema(pa, kind, pa.timestamp("ms", tz="UTC")))
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
