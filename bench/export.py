"""``harness export`` throughput: a store of N calls exported as Parquet and as JSON Lines.

A store of ``--calls`` call events (``harness.sample_store.SyntheticLog``: 4 harnesses, 30 days,
sessions, searches and upstream restarts around the calls, arguments stored) is written once by the
real ``LogWriterActor``. Then, per format and repeat: the export through the API
(``harness.reading.export.export`` on ``open_store``, timed in this process) into a new folder, a
second export into the same folder (nothing new: the incremental path), and once per format the
whole command (``python -m harness export``, interpreter start included). Checked: the export holds
every call once. Printed: calls/s, the folder's size on disk beside ``harness.db``'s.

Bar: >= 20,000 calls/s (wall) for each format (issue 23). Medians over ``--repeats``. The CPU time
of the export is printed beside it: on a shared, loaded machine it is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.reading import open_store
from harness.reading.export import Format, export
from harness.sample_store import SyntheticLog
from store_throughput import write

BAR = 20_000
FORMATS: tuple[Format, ...] = ("parquet", "jsonl")


def size(path: Path) -> int:
    """Bytes on disk of a file or a folder's files."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files)


def exported_calls(out: Path, fmt: Format) -> int:
    """Call rows in an export folder."""
    parts = list((out / "calls").rglob(f"*.{fmt}"))
    if fmt == "jsonl":
        return sum(sum(1 for _ in p.open()) for p in parts)
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in parts)


def timed_export(db: Path, out: Path, fmt: Format) -> tuple[float, float, int, int]:
    """Seconds (wall and this process's CPU), calls and files of one export through the API."""
    t, cpu = time.perf_counter(), time.process_time()
    with open_store(db) as view:
        result = export(view, out, fmt)
    return time.perf_counter() - t, time.process_time() - cpu, result.calls, len(result.files)


def timed_command(state: Path, out: Path, fmt: Format) -> float:
    """Seconds of ``python -m harness export`` as a whole process."""
    cmd = [sys.executable, "-m", "harness", "export", "--state-dir", str(state), "--format", fmt]
    t = time.perf_counter()
    subprocess.run([*cmd, "--out", str(out)], check=True, capture_output=True, timeout=600)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=100_000, help="call events in the store (%(default)s)")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import pyarrow as pa  # imported (with pandas, which it loads) before the timings: once per process

    pa.array([0])
    problems: list[str] = []
    report: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="hexp-") as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        db = state / "harness.db"
        t = time.perf_counter()
        events = list(SyntheticLog(calls=round(a.calls / 1.1), seed=5, days=30).events())  # +10% searches
        write(db, events)
        del events
        with open_store(db) as view:
            calls = int(view.conn.execute("SELECT count(*) FROM call_log").get)
        wal = Path(f"{db}-wal")
        mb = (size(db) + (size(wal) if wal.exists() else 0)) / 1e6
        print(f"store: {calls:,} calls, {mb:.1f} MB ({time.perf_counter() - t:.0f}s)", file=sys.stderr)
        for fmt in FORMATS:
            full, cpus, again, files, out_mb = [], [], [], 0, 0.0
            for rep in range(a.repeats):
                out = Path(tmp) / f"{fmt}-{rep}"
                seconds, cpu, n, files = timed_export(db, out, fmt)
                full.append(seconds)
                cpus.append(cpu)
                second, _, more, _ = timed_export(db, out, fmt)
                again.append(second)
                out_mb = size(out) / 1e6
                if n != calls or more or exported_calls(out, fmt) != calls:
                    problems.append(f"{fmt} #{rep + 1}: {n} calls exported, then {more}; store: {calls}")
                print(
                    f"[{rep + 1}/{a.repeats}] {fmt:7} {calls / seconds:9,.0f} calls/s  {seconds:.2f}s "
                    f"(CPU {cpu:.2f}s)  {files} files  again {second:.2f}s",
                    file=sys.stderr,
                    flush=True,
                )
                shutil.rmtree(out)
            command = timed_command(state, Path(tmp) / f"{fmt}-cmd", fmt)
            shutil.rmtree(Path(tmp) / f"{fmt}-cmd")
            report[fmt] = {
                "calls_per_s": calls / statistics.median(full),
                "seconds": statistics.median(full),
                "cpu_seconds": statistics.median(cpus),
                "again_seconds": statistics.median(again),
                "command_seconds": command,
                "files": files,
                "mb": out_mb,
            }
    print(f"# export: {calls:,} calls, harness.db {mb:.1f} MB (with its WAL), {a.repeats} repeats")
    print("format    calls/s  export    CPU   again  command  files     size  size/db")
    for fmt, r in report.items():
        print(
            f"{fmt:7} {r['calls_per_s']:9,.0f} {r['seconds']:6.2f}s {r['cpu_seconds']:5.2f}s "
            f"{r['again_seconds']:6.2f}s {r['command_seconds']:7.2f}s {r['files']:6.0f}  "
            f"{r['mb']:5.1f} MB  {r['mb'] / mb:7.2f}"
        )
    print(json.dumps({"calls": calls, "store_mb": round(mb, 1), **report}))
    for problem in problems:
        print(f"PROBLEM {problem}")
    worst = min(r["calls_per_s"] for r in report.values())
    ok = worst >= BAR and not problems
    print(f"{'PASS' if ok else 'FAIL'}: export >= {BAR:,} calls/s in both formats (slowest {worst:,.0f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
