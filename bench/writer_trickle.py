"""The writer under a trickle of calls: commits and writer CPU per call event at an ordinary rate.

``store_throughput.py`` and ``event_rate.py`` time the writer flat out, in groups of thousands. A
daemon serving agents sees a few hundred calls a second, and then the writer's cost per call is
set by how many commits it makes: a commit costs about the same CPU however few events it holds.
This script starts a real ``LogWriterActor`` on a fresh store, emits ``-n`` call events at
``--rate`` per second from the main thread (as the daemon's loop does), waits until all are
committed, and prints the commits and the writer thread's CPU (user + system, from
``/proc/self/task``) per event. With ``--before REV`` every round also runs the ``src/`` of REV
(``git archive``) in a child process, order alternating, and the ratios ours/before are printed.

    python bench/writer_trickle.py [-n 1500 --rate 300 --rounds 3 --before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from paired import checkout_src

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def thread_ticks() -> dict[str, int]:
    """CPU ticks (user + system) of each thread of this process."""
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


def measure(n: int, rate: float) -> dict[str, Any]:
    """One run of the code on ``sys.path``: commits and writer CPU for ``n`` events at ``rate``/s."""
    from harness.actors.log_writer import EventIntake, LogWriterActor
    from harness.events import ToolCallCompleted
    from harness.sample_store import SyntheticLog

    calls = [e for e in SyntheticLog(calls=2 * n, seed=1).events() if isinstance(e, ToolCallCompleted)][:n]
    with tempfile.TemporaryDirectory(prefix="htrickle-") as tmp:
        intake = EventIntake()
        ref = LogWriterActor.start(Path(tmp) / "h.db", intake)
        intake.attach(ref)
        try:
            ref.proxy().wait_flushed().get(timeout=30)
            batches0 = ref.proxy().statistics().get(timeout=30).batches
            before = thread_ticks()
            started = time.perf_counter()
            for i, event in enumerate(calls):
                intake.emit(event)
                pause = started + (i + 1) / rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
            ref.proxy().wait_flushed().get(timeout=30)
            after = thread_ticks()
            batches = ref.proxy().statistics().get(timeout=30).batches - batches0
        finally:
            ref.stop(timeout=30)
    me = str(threading.get_native_id())
    writer = max(after[t] - before.get(t, 0) for t in after if t != me)  # the busiest other thread
    return {"commits": batches, "writer_us": writer / TICKS_PER_S / n * 1e6}


def run_child(src: Path | None, n: int, rate: float) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, __file__, "--child", "-n", str(n), "--rate", str(rate)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1500, help="call events")
    ap.add_argument("--rate", type=float, default=300.0, help="events per second")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", default="", help="git revision to compare with ('' = none)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(measure(a.n, a.rate)))
        return 0
    results: dict[str, list[dict[str, Any]]] = {"ours": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="htrickle-src-") as tmp:
        before_src = checkout_src(a.before, Path(tmp)) if a.before else None
        for rnd in range(a.rounds):
            order = ["ours", "before"] if rnd % 2 == 0 else ["before", "ours"]
            for code in order:
                if code == "before" and before_src is None:
                    continue
                got = run_child(before_src if code == "before" else None, a.n, a.rate)
                results[code].append(got)
                print(f"[{rnd + 1}/{a.rounds}] {code:6} {got}", file=sys.stderr)
    print(f"# writer_trickle: {a.n:,} call events at {a.rate:g}/s, {a.rounds} round(s), medians")
    for code, runs in results.items():
        if runs:
            commits = statistics.median(r["commits"] for r in runs)
            cpu = statistics.median(r["writer_us"] for r in runs)
            print(
                f"{code:6} commits {commits:6.0f} ({commits / a.n * 1000:5.0f} per 1,000 events)  "
                f"writer CPU {cpu:6.1f} us/event"
            )
    if results["before"]:
        ratio = statistics.median(
            o["writer_us"] / b["writer_us"] for o, b in zip(results["ours"], results["before"], strict=True)
        )
        print(f"writer CPU per event ours/before: median of rounds {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
