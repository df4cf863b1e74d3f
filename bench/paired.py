"""Paired runs of a rate benchmark: this checkout against an earlier commit, alternating, same machine.

On a small, noisy machine an absolute events/s figure moves by half between runs; the ratio of two
codes measured back to back moves much less. This script runs a benchmark script (``event_rate.py``,
``store_throughput.py``: anything that prints ``[<what> ]events/s median N``) ``--rounds`` times under
each code, order alternating round by round: ``ours`` is this checkout's ``src/``, ``before`` the
``src/`` of ``--before REV`` (``git archive``) put first on ``PYTHONPATH``. The benchmark script
itself is always this checkout's. Per figure it prints each round's pair, the medians and the median
of the rounds' ratios ours/before.

Example: ``python bench/paired.py --before a0fe145 --rounds 3 -- bench/store_throughput.py -n 100000
--replay-calls 0 --repeats 1``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURE = re.compile(r"^(?P<what>[\w-]+ )?events/s median (?P<rate>[\d,]+)", re.MULTILINE)


def checkout_src(rev: str, into: Path) -> Path:
    """``src/`` of ``rev``, unpacked under ``into``."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_once(script: list[str], src: Path) -> dict[str, float]:
    """One run of the benchmark with ``src`` first on the path: its figures by name."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, *script], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    figures = {
        (m["what"] or "").strip() or "events": float(m["rate"].replace(",", ""))
        for m in FIGURE.finditer(done.stdout)
    }
    if not figures:
        raise SystemExit(f"no 'events/s median' line from {script}:\n{done.stdout}\n{done.stderr[-2000:]}")
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS...")
    a = ap.parse_args()
    script = a.script[1:] if a.script[:1] == ["--"] else a.script
    if not script:
        ap.error("give the benchmark after --")
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="paired-") as tmp:
        sources = {"ours": ROOT / "src", "before": checkout_src(a.before, Path(tmp))}
        for round_no in range(a.rounds):
            order = ("ours", "before") if round_no % 2 == 0 else ("before", "ours")
            for code in order:
                figures = run_once(script, sources[code])
                runs[code].append(figures)
                shown = ", ".join(f"{k} {v:,.0f}" for k, v in figures.items())
                print(f"[{round_no + 1}/{a.rounds}] {code:<6} {shown}", file=sys.stderr, flush=True)
    print(f"# paired: {' '.join(script)}; ours = this checkout, before = {a.before}; {a.rounds} rounds")
    for name in runs["ours"][0]:
        ours = [r[name] for r in runs["ours"]]
        before = [r[name] for r in runs["before"]]
        ratios = [o / b for o, b in zip(ours, before, strict=True)]
        each = ", ".join(f"{x:.2f}" for x in ratios)
        ours_m, before_m = statistics.median(ours), statistics.median(before)
        print(
            f"{name}: ours median {ours_m:,.0f} ev/s, before {before_m:,.0f};"
            f" ours/before per round {each}; median {statistics.median(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
