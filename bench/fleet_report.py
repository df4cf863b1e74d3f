"""``fleet.py``'s figures: one fleet's (``Fleet``, its JSON), the table of them and the plot."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Fleet:
    """One fleet's figures."""

    way: str
    agents: int
    server_procs: int
    all_procs: int
    pss_mb: float
    pss_mb_by_role: dict[str, float]
    """PSS of the servers, the agents, the bridges and the daemon (``role``)."""
    rss_mb: float
    startup_s: float
    idle_cpu_pct: float
    load_cpu_pct: float
    calls: int
    errors: int
    cpu_ms_per_call: float
    daemon_cpu_ms_per_call: float | None
    p50_ms: float
    p99_ms: float
    loop: str | None = None
    """The daemon's event loop (``HARNESS_EVENT_LOOP``; None: its default)."""
    daemon_loop_ms_per_call: float | None = None
    """The daemon's CPU per call on its loop thread (its main thread)."""
    daemon_writer_ms_per_call: float | None = None
    """The daemon's CPU per call on its busiest other thread under load: the log writer."""
    daemon_idle_ms_per_s: float | None = None
    """The daemon's CPU per second of the idle window: its loop's own wake-ups."""


COLUMNS = (
    ("server_procs", "servers", "{:.0f}"), ("all_procs", "procs", "{:.0f}"),
    ("pss_mb", "PSS MB", "{:.0f}"), ("rss_mb", "RSS MB", "{:.0f}"),
    ("startup_s", "start s", "{:.2f}"), ("idle_cpu_pct", "idle %cpu", "{:.1f}"),
    ("load_cpu_pct", "load %cpu", "{:.1f}"), ("cpu_ms_per_call", "cpu ms/call", "{:.2f}"),
    ("p50_ms", "p50 ms", "{:.2f}"), ("p99_ms", "p99 ms", "{:.2f}"), ("calls", "calls", "{:.0f}"),
    ("errors", "errors", "{:.0f}"),
)  # fmt: skip


def table_lines(fleets: list[Fleet]) -> list[str]:
    head = f"{'agents':>6} {'way':<8} " + " ".join(f"{label:>11}" for _, label, _ in COLUMNS)
    lines = [head]
    fleets = sorted(fleets, key=lambda f: (f.agents, f.way))
    for f in fleets:
        row = asdict(f)
        lines.append(
            f"{f.agents:>6} {f.way:<8} " + " ".join(f"{fmt.format(row[k]):>11}" for k, _, fmt in COLUMNS)
        )
    for n in sorted({f.agents for f in fleets}):
        by = {f.way: asdict(f) for f in fleets if f.agents == n}
        if {"direct", "gateway"} <= set(by):
            ratio = " ".join(
                f"{(by['gateway'][k] / by['direct'][k] if by['direct'][k] else float('nan')):>11.2f}"
                for k, _, _ in COLUMNS
            )
            lines.append(f"{n:>6} {'gw/dir':<8} {ratio}")
            rest = {w: f["pss_mb"] - f["pss_mb_by_role"].get("agents", 0.0) for w, f in by.items()}
            lines.append(
                f"{n} agents, PSS without the agents (the same both ways): direct {rest['direct']:,.0f} MB,"
                f" gateway {rest['gateway']:,.0f} MB, gateway/direct {rest['gateway'] / rest['direct']:.2f}"
            )
    for f in fleets:
        roles = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(f.pss_mb_by_role.items()))
        lines.append(f"{f.agents} agents, {f.way}: PSS MB by role: {roles}")
    lines += [
        f"{f.agents} agents{f' ({f.loop})' if f.loop else ''}: the daemon's own CPU per call"
        f" {f.daemon_cpu_ms_per_call:.3f} ms (loop thread {f.daemon_loop_ms_per_call or 0:.3f},"
        f" writer {f.daemon_writer_ms_per_call or 0:.3f}); idle {f.daemon_idle_ms_per_s or 0:.2f} ms a second"
        for f in fleets
        if f.daemon_cpu_ms_per_call is not None
    ]
    return lines


def plot(fleets: list[Fleet], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (key, label) in zip(
        axes,
        (("pss_mb", "total PSS (MB)"), ("all_procs", "processes"), ("startup_s", "start-up (s)")),
        strict=True,
    ):
        for way in ("direct", "gateway"):
            pts = sorted((f.agents, getattr(f, key)) for f in fleets if f.way == way)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=way)
        ax.set_xlabel("agents (8 servers each)")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
