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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import orjson

from harness.naming import called_name
from harness.projections.call_log import COLUMNS
from harness.reading import StoreView
from harness.reading.filters import TimeBound, iso_bound
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
        calls = _call_rows(view, (since, until, harness, run_id), cursor.calls_after)
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
    files = writing.parts(out / "calls", call_parts(calls, store), "calls")
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


Parts = dict[str, list[dict[str, Any]]]
"""Rows by partition (``harness=NAME/date=YYYY-MM-DD``)."""


def _by_partition(keyed: Iterable[tuple[str | None, str | None, dict[str, Any]]]) -> Parts:
    groups: dict[tuple[str | None, str | None], list[dict[str, Any]]] = defaultdict(list)
    for harness, ts, row in keyed:
        groups[harness, None if ts is None else ts[:10]].append(row)
    return {partition(harness, day): rows for (harness, day), rows in groups.items()}


CALL_FIELDS = ("store_id", *(c for c in COLUMNS if c != "harness"))
"""The fields of an exported call, in order."""
_HARNESS, _TS, _UPSTREAM, _TOOL, _EXPOSED = (
    COLUMNS.index(c) for c in ("harness", "ts", "upstream", "tool", "exposed_name")
)


def _call_rows(
    view: StoreView, filters: tuple[TimeBound, TimeBound, str | None, str | None], after: int
) -> list[tuple[Any, ...]]:
    """``call_log`` rows logged after position ``after`` (``COLUMNS``' order, by start time) within
    the filters (since, until, harness, run id), as stored (flags 0/1)."""
    since, until, harness, run_id = filters
    where = ["position > ?"]
    args: list[Any] = [after]
    for condition, value in (
        ("ts >= ?", iso_bound(since)),
        ("ts < ?", iso_bound(until)),
        ("harness = ?", harness),
        ("run_id = ?", run_id),
    ):
        if value is not None:
            where.append(condition)
            args.append(value)
    sql = f"SELECT {view.call_columns()} FROM call_log WHERE {' AND '.join(where)} ORDER BY ts, position"
    rows: list[tuple[Any, ...]] = view.conn.execute(sql, args).fetchall()
    return [
        row
        if row[_EXPOSED] is not None  # a call_log older than v4 lacks it: the naming rule's name
        else (*row[:_EXPOSED], called_name(row[_UPSTREAM], row[_TOOL]), *row[_EXPOSED + 1 :])
        for row in rows
    ]


CallParts = dict[str, list[tuple[Any, ...]]]
"""Call rows (``CALL_FIELDS`` tuples) by partition."""


def call_parts(rows: Iterable[tuple[Any, ...]], store: str) -> CallParts:
    """Call rows by partition as ``CALL_FIELDS`` tuples (the partition key ``harness`` left out)."""
    groups: dict[tuple[str | None, str | None], list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        groups[row[_HARNESS], row[_TS][:10]].append((store, *row[:_HARNESS], *row[_HARNESS + 1 :]))
    return {partition(harness, day): part for (harness, day), part in groups.items()}


def trajectory_rows(trajectories: Iterable[Trajectory], store: str) -> Parts:
    """One row per run (``store_id``, its fields, ``steps`` a list of step dicts) by partition."""
    return _by_partition(
        (
            t.run.harness,
            t.run.started or (t.steps[0].ts if t.steps else None),
            {"store_id": store}
            | {k: v for k, v in vars(t.run).items() if k != "harness"}
            | {"steps": [vars(s) for s in t.steps]},
        )
        for t in trajectories
    )


@dataclass
class _Writing:
    """One export's parts being written: their name and format, and the progress reported."""

    fmt: Format
    name: str
    total: int
    report: Progress | None
    done: int = 0
    started: float = field(default_factory=time.perf_counter)

    def parts(self, root: Path, parts: Parts | CallParts, kind: str) -> list[Path]:
        """Write each partition's rows (dicts, or ``CALL_FIELDS`` tuples for calls) to
        ``root/PARTITION/NAME.FMT`` (atomically); the paths."""
        written = []
        order = sorted(parts)
        tables = _arrow_tables(parts, order, kind) if self.fmt == "parquet" and order else None
        for where in order:
            path = root / where / f"{self.name}.{self.fmt}"
            path.parent.mkdir(parents=True, exist_ok=True)
            if tables is None:
                _atomic_write(path, b"".join(orjson.dumps(_json_row(row)) + b"\n" for row in parts[where]))
            else:
                _write_parquet(path, next(tables))
            written.append(path)
            self.done += len(parts[where])
            if self.report is not None:
                self.report(self.done, self.total, time.perf_counter() - self.started)
        return written


_FLAGS = tuple(CALL_FIELDS.index(c) for c in ("via_call_tool", "args_truncated"))


def _json_row(row: dict[str, Any] | tuple[Any, ...]) -> dict[str, Any]:
    """A row as JSON Lines write it: a call's tuple as a dict, its flags as booleans."""
    if isinstance(row, dict):
        return row
    fields = dict(zip(CALL_FIELDS, row, strict=True))
    for i in _FLAGS:
        if row[i] is not None:
            fields[CALL_FIELDS[i]] = bool(row[i])
    return fields


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


def _arrow_type(pa: Any, column: str, time: Any, flags: Any = None) -> Any:
    if column in _TIME_COLUMNS:
        return time
    if column in _INT_COLUMNS:
        return pa.int64()
    if column in _BOOL_COLUMNS:
        return flags or pa.bool_()
    if column == "latency_ms":
        return pa.float64()
    if column in _STRING_COLUMNS:
        return pa.string()
    raise AssertionError(f"no Arrow type for column {column!r}")


def _schema(pa: Any, kind: str, time: Any, flags: Any = None) -> Any:
    """The Arrow schema of a part, times as ``time`` (and calls' flags as ``flags``, default bool):
    explicit, so every part has the same one (``args`` stays JSON text: each tool's differ)."""
    metadata = {SCHEMA_METADATA_KEY: str(EXPORT_SCHEMA).encode()}
    if kind == "calls":
        return pa.schema([(c, _arrow_type(pa, c, time, flags)) for c in CALL_FIELDS], metadata=metadata)
    step = pa.struct([(c, _arrow_type(pa, c, time)) for c in Step.__dataclass_fields__])
    run = [(c, _arrow_type(pa, c, time)) for c in ("store_id", *Run.__dataclass_fields__) if c != "harness"]
    return pa.schema([*run, ("steps", pa.list_(step))], metadata=metadata)


def _arrow_tables(parts: Parts | CallParts, order: list[str], kind: str) -> Iterator[Any]:
    """Each partition's rows (in ``order``) as an Arrow table: one table built from the rows as read
    (times as ISO text, flags as 0/1 in calls), cast once to the final schema (times as UTC ms),
    then sliced."""
    pa, _ = _pyarrow()
    rows: list[Any] = [row for where in order for row in parts[where]]
    if kind == "calls":  # tuples, by column: Arrow converts a column at a time
        columns = list(zip(*rows, strict=True))
        as_read = _schema(pa, kind, pa.string(), flags=pa.int64())
        table = pa.Table.from_arrays(
            [pa.array(c, f.type) for c, f in zip(columns, as_read, strict=True)], schema=as_read
        )
    else:
        table = pa.Table.from_pylist(rows, schema=_schema(pa, kind, pa.string()))
    table = table.cast(_schema(pa, kind, pa.timestamp("ms", tz="UTC")))
    offset = 0
    for where in order:
        yield table.slice(offset, len(parts[where]))
        offset += len(parts[where])


def _write_parquet(path: Path, table: Any) -> None:
    _, pq = _pyarrow()
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
