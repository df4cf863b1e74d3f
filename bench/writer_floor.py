"""Writer floor: what the log writer's SQL alone costs per event, so what no Python change can beat.

``store_throughput.py`` times the real ``LogWriterActor``. This script times the same store (same
schema, every projection installed, WAL, ``synchronous=NORMAL``, the writer's page cache, on the
same disk) fed the same events in groups of ``MAX_BATCH``, with every Python value made before the
clock starts: what is timed is SQLite running the writer's statements, one thread, nothing else.
Modes, alternating inside each round, a fresh store each:

* ``writer``: the real ``LogWriterActor`` (as ``store_throughput.py``), for reference;
* ``statements``: per group ``BEGIN``, the multi-row ``INSERT`` of the group's ``events`` rows
  (pre-encoded), ``call_log``'s ``INSERT … SELECT`` from the stored JSON, ``top_k``'s upsert from
  those rows, the checkpoints' ``UPDATE``, ``COMMIT`` — the live writer's statements for this mix
  (its catalogue and lifecycle events, ~0.1 %, are left out);
* ``events only``: ``BEGIN``, the ``events`` insert, ``COMMIT``;
* ``no call_log indexes``: ``statements`` with ``call_log``'s four secondary indexes dropped.

Each statement's time is summed, so the split of ``statements`` is printed too. WAL checkpoints are
off in the timed modes but ``writer`` (which runs them in a thread of its own); a checkpoint copies
the pages once more.

    python bench/writer_floor.py [-n 100000 --rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from harness.actors.log_writer import MAX_BATCH
from harness.events import ToolCallCompleted
from harness.projections import all_projections, install
from harness.projections.call_log import _INSERT_FROM_LOG
from harness.projections.top_k import _UPSERT_FROM_CALL_LOG
from harness.sample_store import SyntheticLog
from harness.store import append_values, event_values, open_for_writing, tune_for_writer
from store_throughput import write

CALL = (ToolCallCompleted.STORED_NAME, ToolCallCompleted.VERSION)
ADVANCE = "UPDATE projection_checkpoints SET position = ?"
CALL_LOG_INDEXES = ("call_log_ts", "call_log_harness_ts", "call_log_upstream_tool", "call_log_session")


def statements(db: Path, groups: list[tuple[int, int, list[object]]], mode: str) -> dict[str, float]:
    """Run one mode's statements over every group; seconds per statement kind."""
    conn = open_for_writing(db)
    tune_for_writer(conn)
    install(conn, all_projections())
    conn.wal_autocheckpoint(0)
    if mode == "no call_log indexes":
        for index in CALL_LOG_INDEXES:
            conn.execute(f"DROP INDEX {index}")
    spent: dict[str, float] = defaultdict(float)
    clock = time.perf_counter
    cursor = conn.cursor()
    for first, last, values in groups:
        t0 = clock()
        cursor.execute("BEGIN")
        append_values(cursor, values)
        t1 = clock()
        spent["events"] += t1 - t0
        if mode != "events only":
            cursor.execute(_INSERT_FROM_LOG, (first, last, *CALL))
            t2 = clock()
            cursor.execute(_UPSERT_FROM_CALL_LOG, (first, last))
            t3 = clock()
            cursor.execute(ADVANCE, (last,))
            spent["call_log"] += t2 - t1
            spent["top_k"] += t3 - t2
            spent["checkpoints"] += clock() - t3
        t4 = clock()
        cursor.execute("COMMIT")
        spent["commit"] += clock() - t4
    conn.close()
    return spent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--events", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    events = list(SyntheticLog(calls=int(a.events / 1.2), seed=1).events())[: a.events]
    calls = sum(1 for e in events if isinstance(e, ToolCallCompleted))
    groups = []
    for start in range(0, len(events), MAX_BATCH):
        batch = events[start : start + MAX_BATCH]
        groups.append((start + 1, start + len(batch), event_values(batch, start + 1)))
    modes = ("writer", "statements", "events only", "no call_log indexes")
    per_event: dict[str, list[float]] = defaultdict(list)
    split: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="hfloor-") as tmp:
        for rnd in range(a.rounds):
            order = modes[rnd % len(modes) :] + modes[: rnd % len(modes)]
            for mode in order:
                db = Path(tmp) / f"{rnd}-{modes.index(mode)}.db"
                if mode == "writer":
                    seconds, _batches = write(db, events)
                else:
                    spent = statements(db, groups, mode)
                    seconds = sum(spent.values())
                    if mode == "statements":
                        for kind, s in spent.items():
                            split[kind].append(s / len(events) * 1e6)
                per_event[mode].append(seconds / len(events) * 1e6)
                us = per_event[mode][-1]
                print(f"[{rnd + 1}/{a.rounds}] {mode:20} {us:6.2f} us/event", file=sys.stderr)
    print(f"# writer_floor: {len(events):,} events ({calls / len(events):.0%} calls), groups of {MAX_BATCH}")
    print(f"{'mode':22} {'us/event':>9} {'events/s':>10}   (median of {a.rounds} rounds)")
    for mode in modes:
        us = statistics.median(per_event[mode])
        print(f"{mode:22} {us:9.2f} {1e6 / us:10,.0f}")
    parts = ", ".join(f"{kind} {statistics.median(v):.2f}" for kind, v in split.items())
    print(f"statements, us/event: {parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
