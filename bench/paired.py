"""Paired runs of a benchmark: this checkout against an earlier commit, alternating, same machine.

On a small, noisy machine an absolute figure moves by half between runs; the ratio of two codes
measured back to back moves much less. This script runs a benchmark script ``--rounds`` times under
each code, order alternating round by round: ``ours`` is this checkout's ``src/``, ``before`` the
``src/`` of ``--before REV`` (``git archive``) put first on ``PYTHONPATH`` (the daemon and bridge a
benchmark starts inherit it). The benchmark script itself is always this checkout's. Per figure it
prints the medians of each code and the median of the rounds' ratios ours/before, with every round's.

Figures come from what the script prints (``[<what> ]events/s median N``: ``event_rate.py``,
``store_throughput.py``) or, for the scripts in ``JSON_FIGURES`` (``gateway_overhead.py``,
``http_endpoint.py``), from the file it writes with ``--json-out``, which this script adds.

``--env NAME=OURS,BEFORE`` pairs two settings of one environment variable instead of two codes:
both runs use this checkout's ``src/``, ``ours`` with ``NAME=OURS``, ``before`` with ``NAME=BEFORE``
(the daemon a benchmark starts inherits it): ``--env HARNESS_EVENT_LOOP=uvloop,asyncio``.

Examples: ``python bench/paired.py --before a0fe145 --rounds 3 -- bench/store_throughput.py -n 100000
--replay-calls 0 --repeats 1``; ``python bench/paired.py --before d2a6b1c --rounds 6 --
bench/gateway_overhead.py --rounds 1 -n 1000 -c 8 -m 125 --clients sdk,raw``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_report import exact, own_cpu_ratios

ROOT = Path(__file__).resolve().parents[1]
FIGURE = re.compile(r"^(?P<what>[\w-]+ )?events/s median (?P<rate>[\d,]+)", re.MULTILINE)


def checkout_src(rev: str, into: Path) -> Path:
    """``src/`` of ``rev``, unpacked under ``into``."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def overhead_figures(out: dict[str, Any]) -> dict[str, float]:
    """``gateway_overhead.py``: per client, the gateway against direct and the one-hop relay."""
    figures: dict[str, float] = {}
    for client, paths in out["results"].items():
        gw, direct, relay = paths["gateway"][0], paths["direct"][0], paths["relay1"][0]
        figures |= {
            f"{client} p50 gateway/direct": gw["seq"]["p50_ms"] / direct["seq"]["p50_ms"],
            f"{client} p50 gateway/relay1": gw["seq"]["p50_ms"] / relay["seq"]["p50_ms"],
            f"{client} p99 gateway/relay1": gw["seq"]["p99_ms"] / relay["seq"]["p99_ms"],
            f"{client} seq calls/s gateway/direct": gw["seq"]["calls_per_s"] / direct["seq"]["calls_per_s"],
            f"{client} conc calls/s gateway/direct": gw["conc"]["calls_per_s"]
            / direct["conc"]["calls_per_s"],
            f"{client} daemon CPU us/call (seq, exact)": exact(gw, "seq", "daemon") or math.nan,
            f"{client} daemon CPU us/call (conc, exact)": exact(gw, "conc", "daemon") or math.nan,
            f"{client} daemon CPU/relay1's own (seq)": next(
                iter(own_cpu_ratios([gw], [relay], "seq")), math.nan
            ),
            f"{client} conc calls/s relay1/direct": relay["conc"]["calls_per_s"]
            / direct["conc"]["calls_per_s"],
        }
    return figures


def endpoint_figures(out: dict[str, Any]) -> dict[str, float]:
    """``http_endpoint.py``: the endpoint and the bridge against direct, medians over its rounds."""
    rounds = out["results"]
    figures: dict[str, float] = {}
    for path in ("gateway", "bridge"):
        for key in ("p50", "p99", "cps"):
            ratios = [p[key] / d[key] for p, d in zip(rounds[path], rounds["direct"], strict=True)]
            figures[f"{path}/direct {key}"] = statistics.median(ratios)
        figures[f"{path} daemon CPU us/call"] = statistics.median(out["daemon_cpu_us_per_call"][path])
    return figures


JSON_FIGURES: dict[str, Callable[[dict[str, Any]], dict[str, float]]] = {
    "gateway_overhead.py": overhead_figures,
    "http_endpoint.py": endpoint_figures,
}
"""Benchmarks whose figures are read from their ``--json-out`` file."""


@contextlib.contextmanager
def held(lock: Path | None) -> Iterator[None]:
    """``lock`` held (``flock``, as ``flock(1)`` takes it) for the block; nothing when None."""
    if lock is None:
        yield
        return
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run_once(script: list[str], src: Path, scratch: Path, extra: dict[str, str]) -> dict[str, float]:
    """One run of the benchmark with ``src`` first on the path and ``extra`` in its environment: its
    figures by name."""
    env = {**os.environ, "PYTHONPATH": str(src), **extra}
    from_json = JSON_FIGURES.get(Path(script[0]).name)
    out = scratch / "figures.json"
    argv = [*script, "--json-out", str(out)] if from_json else script
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if from_json:
        if done.returncode not in (0, 1) or not out.exists():  # 1: a bar missed, the figures are there
            raise SystemExit(
                f"{script} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        return from_json(json.loads(out.read_text()))
    figures = {
        (m["what"] or "").strip() or "events": float(m["rate"].replace(",", ""))
        for m in FIGURE.finditer(done.stdout)
    }
    if not figures:
        raise SystemExit(f"no 'events/s median' line from {script}:\n{done.stdout}\n{done.stderr[-2000:]}")
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="the earlier commit (any git revision)")
    ap.add_argument("--env", help="NAME=OURS,BEFORE: pair two values of a variable on this checkout")
    ap.add_argument("--lock", type=Path, help="hold this flock(1) file during each round (both codes)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS...")
    a = ap.parse_args()
    script = a.script[1:] if a.script[:1] == ["--"] else a.script
    if not script:
        ap.error("give the benchmark after --")
    if (a.before is None) == (a.env is None):
        ap.error("give --before REV or --env NAME=OURS,BEFORE")
    envs: dict[str, dict[str, str]] = {"ours": {}, "before": {}}
    if a.env is not None:
        name, _, values = a.env.partition("=")
        ours_value, _, before_value = values.partition(",")
        envs = {"ours": {name: ours_value}, "before": {name: before_value}}
    against = a.before or f"this checkout with {a.env} (ours,before)"
    runs: dict[str, list[dict[str, float]]] = {"ours": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="paired-") as tmp:
        before_src = ROOT / "src" if a.before is None else checkout_src(a.before, Path(tmp))
        sources = {"ours": ROOT / "src", "before": before_src}
        for round_no in range(a.rounds):
            order = ("ours", "before") if round_no % 2 == 0 else ("before", "ours")
            with held(a.lock):
                for code in order:
                    figures = run_once(script, sources[code], Path(tmp), envs[code])
                    runs[code].append(figures)
                    shown = ", ".join(f"{k} {v:,.3g}" for k, v in figures.items())
                    print(f"[{round_no + 1}/{a.rounds}] {code:<6} {shown}", file=sys.stderr, flush=True)
    print(f"# paired: {' '.join(script)}; ours = this checkout, before = {against}; {a.rounds} rounds")
    for name in runs["ours"][0]:
        pairs = [(o[name], b[name]) for o, b in zip(runs["ours"], runs["before"], strict=True)]
        pairs = [(o, b) for o, b in pairs if not (math.isnan(o) or math.isnan(b))]
        if not pairs:
            print(f"{name}: no round measured it on both codes")
            continue
        ours, before = zip(*pairs, strict=True)
        ratios = [o / b for o, b in zip(ours, before, strict=True)]
        each = ", ".join(f"{x:.2f}" for x in ratios)
        ours_m, before_m = statistics.median(ours), statistics.median(before)
        print(
            f"{name}: ours median {ours_m:,.3g}, before {before_m:,.3g};"
            f" ours/before per round {each}; median {statistics.median(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
