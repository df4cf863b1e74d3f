"""The peer driver (``<shared>/mcp_bench.py``) with each process's CPU counted exactly per phase.

    python bench/cpu_driver.py SHARED_DIR [mcp_bench.py's arguments...]

Runs ``mcp_bench.main`` unchanged except that, at the moments the driver reads its target tree's
CPU (the start and end of the sequential phase and of the concurrent one), every process of the path
is read with ``cpu_clock.process_cpu_ns`` (nanoseconds, ended threads included): the driver itself
(``client``), each process of its target tree and, when the driver runs as a harness of a Harness
daemon (the ``gateway`` path), that daemon and its upstreams. Processes are named by role:
``upstream`` (``upstream_echo.py``), ``relay`` (``raw_relay.py --parse``), ``relay-copy``
(``raw_relay.py`` copying bytes), ``daemon``, ``bridge`` (anything else in the target tree:
``harness mcp`` or the shell waiter it becomes). The driver's JSON gains ``cpu_us_per_call``:
per phase, µs of CPU per call of each role, and ``daemon_threads``: the daemon's loop (its main
thread), its busiest other thread (the writer, when calls are recorded) and the rest (other threads,
ended ones included).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_clock import process_cpu_ns, threads_cpu_ns

Snapshot = dict[str, dict[str, int]]  # {"roles": {role: ns}, "daemon_threads": {"loop" or tid: ns}}


def role_of(cmdline: list[str]) -> str:
    """A process of a measured path, named by the script it runs (the first ``.py`` argument)."""
    i = next((i for i, arg in enumerate(cmdline) if arg.endswith(".py")), len(cmdline))
    script, own = Path(cmdline[i]).name if cmdline[i:] else "", cmdline[i + 1 :]
    if script == "upstream_echo.py":
        return "upstream"
    if script == "raw_relay.py":
        return "relay" if "--parse" in (own[: own.index("--")] if "--" in own else own) else "relay-copy"
    return "bridge"


def find_daemon() -> psutil.Process | None:
    """The Harness daemon this driver runs under as a harness, if any."""
    with contextlib.suppress(psutil.Error):
        for parent in psutil.Process().parents():
            with contextlib.suppress(psutil.Error):
                cmd = parent.cmdline()
                if "daemon" in cmd and "--state-dir" in cmd:  # `harness daemon --config … --state-dir …`
                    return parent
    return None


class Roles:
    """The processes of one measured path, each with its role, read together."""

    def __init__(self, tree: list[psutil.Process]) -> None:
        self.pids: list[tuple[str, int]] = [("client", os.getpid())]
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                self.pids.append((role_of(proc.cmdline()), proc.pid))
        self.daemon = find_daemon()
        if self.daemon is not None:
            self.pids.append(("daemon", self.daemon.pid))
            with contextlib.suppress(psutil.Error):
                for child in self.daemon.children():
                    if role_of(child.cmdline()) == "upstream":
                        self.pids.append(("upstream", child.pid))

    def snapshot(self) -> Snapshot:
        roles: dict[str, int] = {}
        for role, pid in self.pids:
            ns = process_cpu_ns(pid)
            if ns is not None:
                roles[role] = roles.get(role, 0) + ns
        threads: dict[str, int] = {}
        if self.daemon is not None:  # its loop runs on the main thread
            threads = {
                "loop" if tid == self.daemon.pid else str(tid): ns
                for tid, ns in threads_cpu_ns(self.daemon.pid).items()
            }
        return {"roles": roles, "daemon_threads": threads}


def per_call(before: Snapshot, after: Snapshot, calls: int) -> dict[str, Any]:
    """µs of CPU per call of each role between two snapshots, and of the daemon's loop thread, its
    busiest other thread (the writer, when calls are recorded) and the rest (ended threads included)."""

    def diff(kind: str) -> dict[str, float]:
        a, b = before[kind], after[kind]
        return {k: (b[k] - a[k]) / calls / 1e3 for k in b if k in a}

    roles, threads = diff("roles"), diff("daemon_threads")
    split: dict[str, float] = {}
    if "daemon" in roles and "loop" in threads:
        loop = threads.pop("loop")
        busiest = max(threads.values(), default=0.0)
        split = {"loop": loop, "busiest other": busiest, "rest": roles["daemon"] - loop - busiest}
    rounded = {k: round(v, 1) for k, v in sorted(roles.items())}
    return rounded | {"daemon_threads": {k: round(v, 1) for k, v in split.items()}}


def run(shared: Path, argv: list[str]) -> int:
    sys.path.insert(0, str(shared))
    import mcp_bench

    state: dict[str, Any] = {"roles": None, "snaps": []}
    tree, tree_cpu = mcp_bench.target_tree, mcp_bench.tree_cpu

    def target_tree(*args: Any) -> list[psutil.Process]:
        procs: list[psutil.Process] = tree(*args)
        state["roles"] = Roles(procs)  # called once, after the warm-up: every process exists
        return procs

    def counted_tree_cpu(procs: list[psutil.Process]) -> float:
        if state["roles"] is not None:
            state["snaps"].append(state["roles"].snapshot())
        return float(tree_cpu(procs))

    def print_with_cpu(*args: Any, **kwargs: Any) -> None:
        if len(args) == 1 and isinstance(args[0], str) and args[0].startswith("{"):
            result = json.loads(args[0])
            snaps = state["snaps"]
            exact: dict[str, Any] = {}
            for i, phase in enumerate(("seq", "conc")):
                calls = (result.get(phase) or {}).get("calls")
                if calls and len(snaps) >= 2 * i + 2:
                    exact[phase] = per_call(snaps[2 * i], snaps[2 * i + 1], calls)
            result["cpu_us_per_call"] = exact
            args = (json.dumps(result),)
        print(*args, **kwargs)

    mcp_bench.target_tree = target_tree
    mcp_bench.tree_cpu = counted_tree_cpu
    mcp_bench.print = print_with_cpu  # type: ignore[attr-defined]
    sys.argv = ["mcp_bench.py", *argv]
    return int(mcp_bench.main())


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]), sys.argv[2:]))
