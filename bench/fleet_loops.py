"""``fleet.py --loops uvloop,asyncio --rounds N``: the daemon's event loops alternated in one run.

Each round runs the gateway fleet once per loop (``HARNESS_EVENT_LOOP``), the order of the loops (and
of the ways, when ``--ways`` names both) turned round from one round to the next; a round's runs are a
pair. Per pair: the daemon's CPU per call (its loop thread and its writer apart) and per idle second
(the loop's own wake-ups), each loop's, with the ratio first/second; then the medians over pairs and
how many pairs favour each loop. CPU is the scheduler's nanosecond count (``cpu_clock.py``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from typing import Any

from fleet_report import Fleet


def schedule(
    ways: Sequence[str], loops: Sequence[str | None], rounds: int, size_index: int
) -> Iterator[tuple[str, str | None]]:
    """The runs of one fleet size, in order: ``(way, loop)``; the direct way has no daemon, no loop."""
    for r in range(rounds):
        turn = (size_index + r) % 2
        for way in list(ways)[::-1] if turn else ways:
            if way != "gateway":
                yield way, None
                continue
            yield from ((way, loop) for loop in (list(loops)[::-1] if r % 2 else loops))


FIGURES = (
    ("daemon_cpu_ms_per_call", "daemon ms/call", "{:.3f}"),
    ("daemon_loop_ms_per_call", "loop thread", "{:.3f}"),
    ("daemon_writer_ms_per_call", "writer", "{:.3f}"),
    ("daemon_idle_ms_per_s", "idle ms/s", "{:.2f}"),
)


def loop_lines(fleets: Sequence[Fleet], loops: Sequence[str]) -> list[str]:
    """Per fleet size, the pairs of gateway runs on ``loops`` (two), their ratios and the medians."""
    first, second = loops
    lines: list[str] = []
    for n in sorted({f.agents for f in fleets}):
        runs = {
            loop: [f for f in fleets if f.way == "gateway" and f.agents == n and f.loop == loop]
            for loop in loops
        }
        pairs = list(zip(runs[first], runs[second], strict=False))
        if not pairs:
            continue
        lines.append(
            f"# {n} agents, the daemon on {first} and {second}, {len(pairs)} pairs ({first}/{second})"
        )
        head = " ".join(f"{label:>14}" for _, label, _ in FIGURES)
        lines.append(f"{'pair':>4} {'':<8} {head}")
        ratios: dict[str, list[float]] = {k: [] for k, _, _ in FIGURES}
        for i, (a, b) in enumerate(pairs, 1):
            for loop, f in ((first, a), (second, b)):
                row = " ".join(f"{fmt.format(_get(f, k)):>14}" for k, _, fmt in FIGURES)
                lines.append(f"{i:>4} {loop:<8} {row}")
            for k, _, _ in FIGURES:
                ratios[k].append(_get(a, k) / _get(b, k) if _get(b, k) else float("nan"))
            lines.append(f"{i:>4} {'ratio':<8} " + " ".join(f"{ratios[k][-1]:>14.2f}" for k, _, _ in FIGURES))
        lines.append(
            f"{'med':>4} {'ratio':<8} " + " ".join(f"{_median(ratios[k]):>14.2f}" for k, _, _ in FIGURES)
        )
        per_call = ratios["daemon_cpu_ms_per_call"]
        lines.append(
            f"{n} agents: daemon CPU per call {first}/{second} median {_median(per_call):.2f};"
            f" {sum(r < 1 for r in per_call)} pairs favour {first}, {sum(r > 1 for r in per_call)} {second}"
        )
    return lines


def _get(f: Fleet, key: str) -> float:
    value: Any = getattr(f, key)
    return float("nan") if value is None else float(value)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
