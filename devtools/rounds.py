"""Reporting benchmark rounds: per-path medians and same-round ratios (the figures to quote on a
noisy machine). Each round's figures per path are ``{"p50": ms, "p99": ms, "cps": calls/s}``."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence

Figures = Mapping[str, float]
KEYS = ("p50", "p99", "cps")


def round_line(index: int, rounds: int, path: str, got: Figures) -> str:
    """One round's figures for one path."""
    return f"[round {index + 1}/{rounds}] {path:<8} {json.dumps({k: round(v, 3) for k, v in got.items()})}"


def table(results: Mapping[str, Sequence[Figures]]) -> list[str]:
    """Per path, the medians over rounds of p50, p99 and calls/s."""
    lines = [f"{'path':<8} {'p50 ms':>7} {'p99 ms':>7} {'calls/s':>8}"]
    for path, rows in results.items():
        med = {k: statistics.median(row[k] for row in rows) for k in KEYS}
        lines.append(f"{path:<8} {med['p50']:>7.3f} {med['p99']:>7.3f} {med['cps']:>8.0f}")
    return lines


def ratio_line(results: Mapping[str, Sequence[Figures]], path: str, base: str) -> str:
    """``path / base``: the median of same-round ratios, and the p50 added per call."""
    pairs = list(zip(results[path], results[base], strict=True))
    ratio = {k: statistics.median(p[k] / b[k] for p, b in pairs) for k in KEYS}
    added = statistics.median(p["p50"] - b["p50"] for p, b in pairs)
    return (
        f"{path} / {base} (same-round medians): p50 x {ratio['p50']:.2f}, p99 x {ratio['p99']:.2f}, "
        f"calls/s x {ratio['cps']:.2f}; added p50 {added:.3f} ms per call"
    )
