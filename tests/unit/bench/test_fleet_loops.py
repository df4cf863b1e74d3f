"""bench/fleet_loops.py: the order a paired run takes and the pairs it reports."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from fleet_loops import loop_lines, schedule
from fleet_report import Fleet


def _gateway(loop: str, per_call: float, idle: float) -> Fleet:
    return Fleet(
        way="gateway", agents=12, server_procs=8, all_procs=33, pss_mb=990.0, pss_mb_by_role={},
        rss_mb=1450.0, startup_s=7.0, idle_cpu_pct=2.0, load_cpu_pct=4.0, calls=720, errors=0,
        cpu_ms_per_call=3.3, daemon_cpu_ms_per_call=per_call, p50_ms=2.0, p99_ms=80.0, loop=loop,
        daemon_loop_ms_per_call=per_call / 2, daemon_writer_ms_per_call=per_call / 4,
        daemon_idle_ms_per_s=idle,
    )  # fmt: skip


def test_each_round_runs_every_loop_once_and_the_next_round_turns_their_order_round() -> None:
    runs = list(schedule(["gateway"], ["uvloop", "asyncio"], 3, 0))
    assert runs == [
        ("gateway", loop) for loop in ("uvloop", "asyncio", "asyncio", "uvloop", "uvloop", "asyncio")
    ]


def test_the_direct_way_runs_once_a_round_without_a_loop_and_the_ways_alternate() -> None:
    assert list(schedule(["direct", "gateway"], ["uvloop", "asyncio"], 2, 0)) == [
        ("direct", None), ("gateway", "uvloop"), ("gateway", "asyncio"),
        ("gateway", "asyncio"), ("gateway", "uvloop"), ("direct", None),
    ]  # fmt: skip


def test_the_pairs_report_each_ratio_first_loop_over_second_their_median_and_who_wins() -> None:
    fleets = [
        _gateway("uvloop", 0.6, 0.8), _gateway("asyncio", 0.5, 1.0),
        _gateway("asyncio", 0.5, 1.0), _gateway("uvloop", 0.4, 0.6),
        _gateway("uvloop", 0.55, 0.7), _gateway("asyncio", 0.5, 1.0),
    ]  # fmt: skip
    lines = loop_lines(fleets, ["uvloop", "asyncio"])
    assert lines[0] == "# 12 agents, the daemon on uvloop and asyncio, 3 pairs (uvloop/asyncio)"
    ratios = [line.split() for line in lines if line.split()[1:2] == ["ratio"]]
    assert [r[2] for r in ratios] == ["1.20", "0.80", "1.10", "1.10"]  # three pairs, then the median
    assert [r[5] for r in ratios] == ["0.80", "0.60", "0.70", "0.70"]  # idle ms a second
    assert (
        lines[-1]
        == "12 agents: daemon CPU per call uvloop/asyncio median 1.10; 1 pairs favour uvloop, 2 asyncio"
    )
