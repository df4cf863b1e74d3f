"""Store throughput: the log writer with every projection folded in, and replay into a new store.

* ``writer``: N events pre-built by ``harness.sample_store.SyntheticLog`` (a realistic mix: ~85%
  ``tool_call.completed``, the rest sessions, searches, catalogues, upstream lifecycle) are queued in
  an ``EventIntake`` before the ``LogWriterActor`` is attached, then one wake-up: the time until
  ``wait_flushed()`` returns, i.e. everything appended and folded into call_log, top_k,
  tool_index and upstreams, group-committed (``MAX_BATCH`` events per transaction), WAL,
  synchronous=NORMAL. Checked: ``statistics()`` and ``count(*)`` of events and call_log.
* ``replay``: a store holding ``--replay-calls`` call events (default 1,000,000; plus the lifecycle
  events around them) is written once, then ``harness.replay.replay`` copies it into a new file and
  folds every projection there. Checked: the new store's projection tables equal the source's.

Bars: writer >= 100,000 events/s (issue 12); replay >= 50,000 events/s. Medians over ``--repeats``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import apsw

from harness.actors.log_writer import EventIntake, LogWriterActor
from harness.replay import replay
from harness.sample_store import SyntheticLog

BAR = 100_000
REPLAY_BAR = 50_000
TABLES = ("events", "call_log", "top_k_hourly", "tool_index", "upstreams", "projection_checkpoints")


def count(db: Path, table: str) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").get)
    finally:
        conn.close()


def digest(db: Path) -> dict[str, int]:
    """A cheap fingerprint of every projection table (row count and a hash over all rows)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = {}
        for t in TABLES:
            h = 0
            for row in conn.execute(f"SELECT * FROM {t}"):
                h ^= hash(row)
            out[t] = h
        return out
    finally:
        conn.close()


def write(db: Path, events: list, timeout: float = 600) -> tuple[float, int]:
    intake = EventIntake(capacity=len(events) + 1)
    for ev in events:  # not attached yet: nothing wakes the writer
        intake.emit(ev)
    ref = LogWriterActor.start(db, intake)
    try:
        ref.proxy().statistics().get(timeout=timeout)  # on_start done (store opened, projections installed)
        intake.attach(ref)
        t0 = time.perf_counter()
        last = ref.proxy().wait_flushed().get(timeout=timeout)
        elapsed = time.perf_counter() - t0
        stats = ref.proxy().statistics().get(timeout=timeout)
    finally:
        ref.stop(timeout=timeout)
    assert stats.events_written == len(events) == last, (stats, len(events))
    return elapsed, stats.batches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--events", type=int, default=200_000, help="writer: events per run (%(default)s)")
    ap.add_argument("--replay-calls", type=int, default=1_000_000, help="replay: call events (%(default)s)")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    t = time.perf_counter()
    calls = int(a.events / 1.2)
    events = list(SyntheticLog(calls=calls, seed=1).events())[: a.events]
    mix = sum(1 for e in events if e.STORED_NAME == "tool_call.completed") / len(events)
    print(
        f"built {len(events):,} events ({mix:.0%} calls) in {time.perf_counter() - t:.1f}s", file=sys.stderr
    )
    writer_rates = []
    replay_rates = []
    problems = []
    with tempfile.TemporaryDirectory(prefix="hst-") as tmp:
        for rep in range(a.repeats):
            db = Path(tmp) / f"w{rep}.db"
            elapsed, batches = write(db, events)
            rows = count(db, "call_log")
            want = sum(1 for e in events if e.STORED_NAME == "tool_call.completed")
            if rows != want or count(db, "events") != len(events):
                problems.append(f"writer #{rep + 1}: call_log {rows} != {want}")
            writer_rates.append(len(events) / elapsed)
            print(
                f"[{rep + 1}/{a.repeats}] writer {writer_rates[-1]:9,.0f} ev/s  {len(events):,} events"
                f"  {batches} batches  {elapsed:.2f}s",
                file=sys.stderr,
                flush=True,
            )
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
        src = Path(tmp) / "src.db"
        t = time.perf_counter()
        big = list(SyntheticLog(calls=a.replay_calls, seed=2, days=60, search_share=0.0).events())
        write(src, big)
        n_calls = count(src, "call_log")
        print(
            f"source store: {len(big):,} events, {n_calls:,} calls ({time.perf_counter() - t:.0f}s)",
            file=sys.stderr,
        )
        del big
        want = digest(src)
        for rep in range(a.repeats):
            dst = Path(tmp) / f"r{rep}.db"
            result = replay(src, dst, progress=sys.stderr.isatty())
            replay_rates.append(result.events_per_s)
            if digest(dst) != want:
                problems.append(f"replay #{rep + 1}: tables differ from the source")
            print(
                f"[{rep + 1}/{a.repeats}] replay {result.events_per_s:9,.0f} ev/s  {result.events:,} events"
                f"  {result.seconds:.2f}s",
                file=sys.stderr,
                flush=True,
            )
            for suffix in ("", "-wal", "-shm"):
                Path(f"{dst}{suffix}").unlink(missing_ok=True)
    w = statistics.median(writer_rates)
    r = statistics.median(replay_rates)
    print(
        f"# store_throughput: writer {len(events):,} events/run ({mix:.0%} calls), replay {n_calls:,} calls"
    )
    runs = [round(x) for x in writer_rates]
    print(f"writer, all projections, pre-built, group commit: median {w:,.0f} ev/s  runs {runs}")
    print(f"replay into all projections: median {r:,.0f} ev/s  runs {[round(x) for x in replay_rates]}")
    print(f"checks (row counts; replayed tables equal the source's): {'OK' if not problems else 'FAILED'}")
    for p in problems:
        print(f"  !! {p}")
    print(f"writer events/s median {w:,.0f} (bar >= {BAR:,}: {'PASS' if w >= BAR else 'FAIL'})")
    replay_held = r >= REPLAY_BAR
    print(f"replay events/s median {r:,.0f} (bar >= {REPLAY_BAR:,}: {'PASS' if replay_held else 'FAIL'})")
    return 0 if w >= BAR and replay_held and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
