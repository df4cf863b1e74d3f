"""Event rate: how many call events per second go from the event loop into a committed ``call_log`` row.

Uses the real code path of the daemon: ``CallRecorder.record`` builds a ``ToolCallCompleted`` event
(redacted arguments, args hash, metrics) and hands it to ``EventIntake.emit``; the
``LogWriterActor`` (its own thread) appends each batch to the event log and folds it into
``call_log`` in one transaction. Each run uses a fresh store in a temp dir.

Three measurements per repeat (default 3 repeats, the modes alternating inside each repeat):

* ``loop, capacity >= N`` - the bar. A coroutine on an asyncio loop records N events (default
  200,000) in chunks of 1,000 with ``await asyncio.sleep(0)`` between chunks; then
  ``wait_flushed()`` is awaited. The intake capacity is max(N, default), i.e. large enough that
  nothing can be dropped, so every event must land: the script checks ``statistics()``
  (events_written == N, dropped == 0) and counts ``call_log`` rows on a read-only apsw connection.
  events/s = N / (first emit -> everything committed). Bar (issue 26): >= 10 x the highest calls/s
  the gateway reaches in ``gateway_overhead.py`` (``--calls-per-s``: one call is one event).
* ``loop, default capacity`` - the same with the daemon's default intake capacity
  (``DEFAULT_CAPACITY``): when the loop outruns the writer, the intake drops and counts events. The
  rate is committed events / elapsed, and the number dropped is printed (drops are by design here;
  they tell how far the burst outran the writer; each run of drops is logged as a ``log.gap`` event,
  which is written but folds into no ``call_log`` row).
* ``writer only`` - N events pre-built, all queued in the intake before the writer is attached, then
  one wake-up: the time until all are committed. The writer's own throughput, for context.

Also shown: ``emit us/ev`` = loop time spent building and emitting per event (what a call pays on the
loop), and the mean batch size the writer committed. The figure to quote is the median over repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import apsw

import dev_path  # noqa: F401 - puts devtools/ on sys.path
from devtools.sample_call import record_sample_call
from harness.actors import log_writer
from harness.actors.log_writer import DEFAULT_CAPACITY, EventIntake, LogWriterActor
from harness.gateway.evidence.recording import CallRecorder

RATE_PER_CALL_RATE = 10
"""The bar: events/s >= this x the gateway's highest calls/s."""


def count_rows(db: Path) -> tuple[int, int]:
    """``call_log`` rows, and ``log.gap`` events (which a run of drops writes)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = int(conn.execute("SELECT count(*) FROM call_log").fetchone()[0])
        gaps = int(conn.execute("SELECT count(*) FROM events WHERE name = 'log.gap'").fetchone()[0])
        return rows, gaps
    finally:
        conn.close()


def start_writer(db: Path, intake: EventIntake, attach: bool = True) -> Any:
    ref = LogWriterActor.start(db, intake)
    ref.proxy().statistics().get(timeout=60)  # on_start (open, install projections) is done
    if attach:
        intake.attach(ref)
    return ref


def loop_run(db: Path, n: int, capacity: int, chunk: int, timeout: float) -> dict[str, Any]:
    intake = EventIntake(capacity=capacity)
    ref = start_writer(db, intake)
    recorder = CallRecorder(intake.emit, "redacted")
    backlog: list[int] = []
    try:

        async def produce() -> tuple[float, float, float, float]:
            t0 = time.perf_counter()
            emit_s = 0.0
            done = 0
            while done < n:
                k = min(chunk, n - done)
                t = time.perf_counter()
                for _ in range(k):
                    record_sample_call(recorder)
                emit_s += time.perf_counter() - t
                done += k
                await asyncio.sleep(0)
            t_emitted = time.perf_counter()
            backlog.append(len(intake))  # still queued when the loop finished emitting
            await asyncio.to_thread(lambda: ref.proxy().wait_flushed().get(timeout=timeout))
            return t0, t_emitted, time.perf_counter(), emit_s

        t0, t_emitted, t_end, emit_s = asyncio.run(produce())
        elapsed = t_end - t0
        stats = ref.proxy().statistics().get(timeout=timeout)
    finally:
        ref.stop(timeout=timeout)
    rows, gaps = count_rows(db)
    return {
        "n": n,
        "capacity": capacity,
        "gaps": gaps,
        "elapsed_s": elapsed,
        "emit_phase_s": t_emitted - t0,
        "emit_us_per_event": emit_s / n * 1e6,
        "taken_during_emit": n - stats.dropped - backlog[0],
        "written": stats.events_written,
        "dropped": stats.dropped,
        "batches": stats.batches,
        "rows": rows,
        "events_per_s": stats.events_written / elapsed,
    }


def writer_only_run(db: Path, n: int, timeout: float) -> dict[str, Any]:
    intake = EventIntake(capacity=max(n, DEFAULT_CAPACITY))
    recorder = CallRecorder(intake.emit, "redacted")
    for _ in range(n):  # not attached yet: emit only queues, nothing wakes the writer
        record_sample_call(recorder)
    ref = start_writer(db, intake, attach=False)
    try:
        intake.attach(ref)
        t0 = time.perf_counter()
        ref.proxy().wait_flushed().get(timeout=timeout)
        elapsed = time.perf_counter() - t0
        stats = ref.proxy().statistics().get(timeout=timeout)
    finally:
        ref.stop(timeout=timeout)
    rows, _ = count_rows(db)
    return {
        "n": n,
        "elapsed_s": elapsed,
        "written": stats.events_written,
        "dropped": stats.dropped,
        "batches": stats.batches,
        "rows": rows,
        "events_per_s": stats.events_written / elapsed,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--events", type=int, default=200_000, help="events per run (%(default)s)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=1000, help="events emitted between loop yields")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for any one wait")
    ap.add_argument(
        "--switch-interval",
        type=float,
        help="sys.setswitchinterval() in seconds (diagnosis only; default: leave Python's 0.005)",
    )
    ap.add_argument("--max-batch", type=int, help="the writer's MAX_BATCH (diagnosis only)")
    ap.add_argument(
        "--calls-per-s",
        type=float,
        help="the highest calls/s gateway_overhead.py printed for the gateway: the bar is 10x it",
    )
    a = ap.parse_args()
    if a.switch_interval:
        sys.setswitchinterval(a.switch_interval)
    if a.max_batch:
        log_writer.MAX_BATCH = a.max_batch
    n = a.events
    big = max(n, DEFAULT_CAPACITY)
    modes = ("loop-big", "loop-default", "writer-only")
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hev-") as tmp:
        for rep in range(a.repeats):
            for mode in modes:
                db = Path(tmp) / f"{mode}-{rep}.db"
                if mode == "loop-big":
                    r = loop_run(db, n, big, a.chunk, a.timeout)
                    if r["written"] != n or r["dropped"] or r["rows"] != n:
                        problems.append(f"{mode} #{rep + 1}: {r}")
                elif mode == "loop-default":
                    r = loop_run(db, n, DEFAULT_CAPACITY, a.chunk, a.timeout)
                    calls = r["written"] - r["gaps"]
                    if (
                        calls + r["dropped"] != n
                        or r["rows"] != calls
                        or bool(r["gaps"]) != bool(r["dropped"])
                    ):
                        problems.append(f"{mode} #{rep + 1}: {r}")
                else:
                    r = writer_only_run(db, n, a.timeout)
                    if r["written"] != n or r["rows"] != n:
                        problems.append(f"{mode} #{rep + 1}: {r}")
                runs[mode].append(r)
                during = (
                    f"  emit phase {r['emit_phase_s']:.2f}s, writer took {r['taken_during_emit']:,} meanwhile"
                    if "emit_phase_s" in r
                    else ""
                )
                print(
                    f"[{rep + 1}/{a.repeats}] {mode:12s} {r['events_per_s']:9,.0f} ev/s  "
                    f"written {r['written']:,}  dropped {r['dropped']:,}  rows {r['rows']:,}  "
                    f"batches {r['batches']:,}  {r['elapsed_s']:.2f}s{during}",
                    file=sys.stderr,
                    flush=True,
                )
                db.unlink(missing_ok=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[mode])

    print(f"# event_rate: {n:,} events per run, {a.repeats} repeats, chunks of {a.chunk} on the loop")
    print(
        f"{'mode':34s} {'median ev/s':>11s}  {'per repeat':30s} {'emit us/ev':>10s} "
        f"{'ev/batch':>8s} {'dropped':>16s}"
    )
    labels = {
        "loop-big": f"loop, capacity {big:,} (no drops)",
        "loop-default": f"loop, default capacity {DEFAULT_CAPACITY:,}",
        "writer-only": "writer only (pre-built, 1 wake)",
    }
    for mode in modes:
        rs = runs[mode]
        per = ", ".join(f"{r['events_per_s']:,.0f}" for r in rs)
        emit = f"{med(mode, 'emit_us_per_event'):.1f}" if "emit_us_per_event" in rs[0] else "-"
        ev_batch = statistics.median(r["written"] / max(1, r["batches"]) for r in rs)
        dropped = ", ".join(f"{r['dropped']:,}" for r in rs)
        print(
            f"{labels[mode]:34s} {med(mode, 'events_per_s'):11,.0f}  {per:30s} {emit:>10s} "
            f"{ev_batch:8,.0f} {dropped:>16s}"
        )
    print(
        "checks (loop, capacity >= N): statistics events_written == emitted and dropped == 0, "
        f"call_log count(*) == emitted: {'OK' if not problems else 'FAILED'}"
    )
    for p in problems:
        print(f"  !! {p}")
    rate = med("loop-big", "events_per_s")
    held = True
    if a.calls_per_s:
        bar = RATE_PER_CALL_RATE * a.calls_per_s
        held = rate >= bar
        rule = f"{RATE_PER_CALL_RATE} x {a.calls_per_s:,.0f} calls/s = {bar:,.0f}"
        verdict = f"bar >= {rule}: {'PASS' if held else 'FAIL'}"
    else:
        verdict = f"bar: >= {RATE_PER_CALL_RATE} x the gateway's highest calls/s, given with --calls-per-s"
    print(f"events/s median {rate:,.0f} ({verdict})")
    print(f"writer-only events/s median {med('writer-only', 'events_per_s'):,.0f} (context, no bar)")
    return 0 if held and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
