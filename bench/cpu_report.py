"""The exact CPU figures ``cpu_driver.py`` adds to each measurement, as ``gateway_overhead.py`` prints them.

Each measurement's ``cpu_us_per_call`` holds, per phase (``seq``, ``conc``), µs of CPU per call of each
process of the path by role, counted by the scheduler over the same window (``cpu_clock.py``).
"""

from __future__ import annotations

import statistics
from typing import Any

ROLES = ("client", "bridge", "relay-copy", "relay", "daemon", "upstream")


def exact(r: dict[str, Any], phase: str, role: str) -> float | None:
    """µs of CPU per call of ``role`` in ``phase`` of one measurement, or None."""
    value = ((r.get("cpu_us_per_call") or {}).get(phase) or {}).get(role)
    return value if isinstance(value, int | float) else None


def own_cpu_ratios(gateway: list[dict[str, Any]], relay1: list[dict[str, Any]], phase: str) -> list[float]:
    """Per round: the daemon's CPU per call over the one-hop relay's own, same phase, same round."""
    out = []
    for g, r in zip(gateway, relay1, strict=False):
        daemon, relay = exact(g, phase, "daemon"), exact(r, phase, "relay")
        if daemon is not None and relay:
            out.append(daemon / relay)
    return out


def _median(xs: list[float | None]) -> str:
    vals = [x for x in xs if x is not None]
    return str(round(statistics.median(vals))) if vals else "-"  # an int: never "-0"


def print_budget(client: str, res: dict[str, list[dict[str, Any]]]) -> None:
    """Per path and phase, the median over rounds of each role's µs of CPU per call."""
    print(f"exact CPU per call, client={client} (µs, median over rounds; scheduler's ns over each phase):")
    print("  " + "path".ljust(18) + "".join(role.rjust(11) for role in [*ROLES, "total"]))
    for path, rounds in res.items():
        for phase in ("seq", "conc"):
            if not any(exact(r, phase, "client") is not None for r in rounds):
                continue
            cells = [_median([exact(r, phase, role) for r in rounds]) for role in ROLES]
            totals = [sum(exact(r, phase, role) or 0.0 for role in ROLES) for r in rounds]
            row = "".join(c.rjust(11) for c in [*cells, _median([*totals])])
            print(f"  {f'{path} {phase}':18s}{row}")
    threads: dict[str, list[float | None]] = {}
    for r in res.get("gateway", []):
        for name, us in ((r.get("cpu_us_per_call") or {}).get("seq") or {}).get("daemon_threads", {}).items():
            threads.setdefault(name, []).append(us)
    if threads:
        busy = {name: _median(v) for name, v in threads.items() if _median(v) not in ("-", "0")}
        print("  the daemon's threads, seq phase: " + ", ".join(f"{k} {v}" for k, v in sorted(busy.items())))
