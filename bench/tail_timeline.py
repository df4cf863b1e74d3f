"""Tail timeline: every sequential call's latency placed against what the daemon did at that moment.

Runs ``gateway_overhead.py``'s paths once per round (``direct``, ``relay1``, ``gateway``), with two
wrappers, both in this file:

* ``--driver``: the peer driver (``<shared>/mcp_bench.py``) with each call's start (``CLOCK_MONOTONIC``,
  the same clock in every process) and latency kept and written to a file before its JSON, with the
  phase it belongs to (``warmup``, ``seq``, ``conc``).
* ``--daemon``: ``harness daemon`` with its writer's groups (``LogWriterActor.write``, ``compact``),
  the tool-search warm-up, the collector's passes (``gc.callbacks``) and ``ready`` timed into
  ``$TAIL_TRACE`` at exit.

Then it lists, per path, the slow sequential calls (over p50 + ``--slow-ms``) by position and, for the
gateway, what overlapped each one (or ended within 1 ms before it started). Diagnosis only: the
wrappers patch the code they time, and nothing else.

    python bench/tail_timeline.py [--rounds 2 -n 1000 --clients sdk,raw --slow-ms 1.0]
"""

from __future__ import annotations

import argparse
import atexit
import functools
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gateway_overhead as overhead

Span = tuple[float, float, str]


# --------------------------------------------------------------------------- the driver wrapper


def run_driver(argv: list[str], shared: Path, out: Path) -> int:
    """``mcp_bench.py`` with each call's start and latency kept, written to ``out`` before its JSON."""
    sys.path.insert(0, str(shared))
    import mcp_bench

    calls: list[tuple[float, float, str]] = []
    phase = {"now": "warmup"}

    def timed(call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        async def wrapper(self: Any, tool: str, args: dict[str, Any]) -> str:
            started = time.monotonic()
            text: str = await call(self, tool, args)
            calls.append((started, time.monotonic() - started, phase["now"]))
            return text

        return wrapper

    for target in (mcp_bench.SdkTarget, mcp_bench.RawStdioTarget):
        target.call = timed(target.call)  # type: ignore[method-assign]
    summarize = mcp_bench.summarize

    def summarize_phase(*args: Any) -> dict[str, Any]:
        phase["now"] = "conc" if phase["now"] == "seq" else "done"
        return summarize(*args)

    mcp_bench.summarize = summarize_phase
    tree = mcp_bench.target_tree

    def tree_after_warmup(*args: Any) -> Any:
        phase["now"] = "seq"
        return tree(*args)

    mcp_bench.target_tree = tree_after_warmup

    def print_after_series(*args: Any, **kwargs: Any) -> None:
        out.write_text(json.dumps(calls))
        print(*args, **kwargs)

    mcp_bench.print = print_after_series  # type: ignore[attr-defined]
    sys.argv = ["mcp_bench.py", *argv]
    return int(mcp_bench.main())


# --------------------------------------------------------------------------- the daemon wrapper


def run_daemon(argv: list[str]) -> int:
    """``harness daemon`` with its writer's groups, the search warm-up and GC passes timed."""
    from harness.actors import log_writer
    from harness.gateway import daemon
    from harness.main import main
    from harness.search import bm25

    spans: list[Span] = []
    clock = time.monotonic

    def timed(owner: Any, name: str, label: Callable[..., str]) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return original(*args, **kwargs)
            finally:
                spans.append((started, clock(), label(*args, **kwargs)))

        setattr(owner, name, wrapper)

    if every := os.environ.get("TAIL_GIVE_WAY_OPS"):  # A/B of the writer's yields (0: none)
        from harness.store import giving_way

        giving_way.giving_way.__wrapped__.__defaults__ = (int(every) or 2**31 - 1,)  # type: ignore[attr-defined]
    timed(log_writer.LogWriterActor, "write", lambda _self, events: f"commit {len(events)} events")
    timed(log_writer.LogWriterActor, "compact", lambda *_: "compaction")
    timed(bm25, "warm", lambda *_: "search warm-up")
    timed(daemon, "settle_heap", lambda *_: "ready")
    collecting: dict[int, float] = {}

    def on_gc(step: str, info: dict[str, Any]) -> None:
        if step == "start":
            collecting[threading.get_ident()] = clock()
        elif (started := collecting.pop(threading.get_ident(), None)) is not None:
            where = "loop" if threading.current_thread() is threading.main_thread() else "thread"
            spans.append((started, clock(), f"gc gen{info['generation']} ({where})"))

    gc.callbacks.append(on_gc)
    out = os.environ["TAIL_TRACE"]
    atexit.register(lambda: Path(out).write_text(json.dumps(spans)))
    return main(argv)


# --------------------------------------------------------------------------- placing the slow calls


def slow_calls(series: list[list[Any]], slow_ms: float) -> tuple[float, list[tuple[int, float, float]]]:
    """The sequential phase's p50 (ms) and its calls slower than p50 + ``slow_ms``:
    (position, start, latency ms)."""
    seq = [(start, dt * 1000) for start, dt, phase in series if phase == "seq"]
    p50 = statistics.median(ms for _, ms in seq)
    return p50, [(i, start, ms) for i, (start, ms) in enumerate(seq) if ms > p50 + slow_ms]


def overlapping(spans: list[Span], start: float, end: float) -> list[str]:
    """The spans that overlap [start, end] or ended within 1 ms before ``start``."""
    return [
        f"{label} ({(b - a) * 1000:.1f} ms, {(a - start) * 1000:+.1f})"
        for a, b, label in spans
        if a <= end and b >= start - 0.001 and label != "ready"
    ]


def report(path: str, series: list[list[Any]], spans: list[Span] | None, slow_ms: float) -> dict[str, Any]:
    p50, slow = slow_calls(series, slow_ms)
    seq = sorted(dt * 1000 for _, dt, phase in series if phase == "seq")
    p99 = seq[min(len(seq) - 1, int(0.99 * len(seq)))]
    placed = 0
    lines = []
    first_seq = next(start for start, _, phase in series if phase == "seq")
    for i, start, ms in slow:
        what = overlapping(spans, start, start + ms / 1000) if spans is not None else []
        placed += bool(what)
        lines.append(f"    #{i:5d} {ms:6.2f} ms  {'; '.join(what) or '-'}")
    ready = next((b for _, b, label in spans or [] if label == "ready"), None)
    since = f", first measured call {first_seq - ready:.2f} s after ready" if ready is not None else ""
    print(f"  {path}: p50 {p50:.3f} ms, p99 {p99:.3f} ms, {len(slow)} slow calls{since}")
    if spans is not None:
        commits = [(a, b) for a, b, label in spans if label.startswith("commit") and a >= first_seq]
        gcs = [(a, b) for a, b, label in spans if label.startswith("gc") and a >= first_seq]
        print(
            f"    during the run: {len(commits)} commits (median {_median_ms(commits)} ms), "
            f"{len(gcs)} GC passes (median {_median_ms(gcs)} ms); slow calls next to one of them: {placed}"
        )
    print("\n".join(lines[:40]))
    return {"p50": p50, "p99": p99, "slow": [s[0] for s in slow], "placed": placed}


def _median_ms(spans: list[tuple[float, float]]) -> str:
    return f"{statistics.median(b - a for a, b in spans) * 1000:.2f}" if spans else "-"


# --------------------------------------------------------------------------- main


def wrapper_bin(tmp: Path, real: str) -> str:
    """A ``harness`` for ``gateway_overhead.run_gateway``: ``harness mcp`` is the real bridge, ``harness
    daemon`` runs under ``--daemon``."""
    script = tmp / "harness"
    me = Path(__file__).resolve()
    script.write_text(
        f'#!/bin/sh\nif [ "$1" = mcp ]; then exec {real} "$@"; fi\nexec {sys.executable} {me} --daemon "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--daemon":
        return run_daemon(sys.argv[2:])
    if len(sys.argv) > 2 and sys.argv[1] == "--driver":
        return run_driver(sys.argv[4:], Path(sys.argv[2]), Path(sys.argv[3]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--clients", default="sdk,raw")
    ap.add_argument("--slow-ms", type=float, default=1.0, help="slow = over p50 + this (%(default)s)")
    ap.add_argument("--shared", type=Path, default=overhead.DEFAULT_SHARED)
    ap.add_argument("--harness-bin", default=str(Path(sys.executable).parent / "harness"))
    ap.add_argument("--json-out", type=Path, help="write every series and trace here")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=VAR=VALUE",
        help="also run the gateway with VAR=VALUE in the daemon's environment (A/B of a diagnostic switch)",
    )
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="htl-"))
    o = argparse.Namespace(
        shared=a.shared.resolve(), py=sys.executable, harness_bin=wrapper_bin(tmp, a.harness_bin), n=a.n,
        c=8, m=0, warmup=200, deadline=180.0, ready_timeout=30.0, stop_timeout=15.0, tmp="/tmp", keep=False,
    )  # fmt: skip
    series_file, trace_file = tmp / "series.json", tmp / "trace.json"
    o.driver = [str(Path(__file__).resolve()), "--driver", str(o.shared), str(series_file)]
    os.environ["TAIL_TRACE"] = str(trace_file)
    everything: list[dict[str, Any]] = []
    for rnd in range(a.rounds):
        for client in a.clients.split(","):
            print(f"# round {rnd + 1}, client {client}")
            paths = ["direct", "relay1", "gateway", *(f"gateway-{v.split('=', 1)[0]}" for v in a.variant)]
            for path in paths[rnd % len(paths) :] + paths[: rnd % len(paths)]:
                for f in (series_file, trace_file):
                    f.unlink(missing_ok=True)
                log = tmp / "targets.log"
                for v in a.variant:
                    _, var, value = v.split("=", 2)
                    if path.startswith("gateway-") and path.endswith(v.split("=", 1)[0]):
                        os.environ[var] = value
                    else:
                        os.environ.pop(var, None)
                result = (
                    overhead.run_gateway(o, client, log)
                    if path.startswith("gateway")
                    else overhead.run_plain(o, client, path, log)
                )
                if "fatal" in result or not series_file.exists():
                    print(f"  {path}: {result.get('fatal', 'no series')}")
                    continue
                series = json.loads(series_file.read_text())
                spans = json.loads(trace_file.read_text()) if trace_file.exists() else None
                summary = report(path, series, spans, a.slow_ms)
                everything.append({"round": rnd + 1, "client": client, "path": path, "series": series,
                                   "spans": spans, **summary})  # fmt: skip
    if a.json_out:
        a.json_out.write_text(json.dumps(everything))
    print("# medians over rounds of same-round ratios to relay1 (p50, p99); slow calls next to a writer span")
    for client in a.clients.split(","):
        rows = [r for r in everything if r["client"] == client]
        relay = {r["round"]: r for r in rows if r["path"] == "relay1"}
        for path in sorted({r["path"] for r in rows if r["path"].startswith("gateway")}):
            mine = [r for r in rows if r["path"] == path and r["round"] in relay]
            p50 = statistics.median(r["p50"] / relay[r["round"]]["p50"] for r in mine)
            p99 = [r["p99"] / relay[r["round"]]["p99"] for r in mine]
            held = sum(x <= 1.25 for x in p99)
            print(
                f"{client} {path}: p50 x {p50:.2f}, p99 x {statistics.median(p99):.2f} ({held} of {len(p99)} "
                f"<= 1.25), slow calls {statistics.median(len(r['slow']) for r in mine)}, "
                f"placed {statistics.median(r['placed'] for r in mine)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
