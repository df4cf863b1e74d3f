"""The fleet ADR-0035 is for: N agents, each wired to the same eight real MCP servers, run two ways in
one invocation, alternating.

* ``direct``  - the world without the gateway: every agent starts its own eight servers
  (N x 8 server processes).
* ``gateway`` - one daemon runs the eight once; the N agents are its harnesses, each reaching them
  through its own ``harness mcp`` bridge.

An agent (``bench/fleet_agent.py``) is an official-SDK client that initializes, lists the tools and,
once the whole fleet is idle-measured, calls one server's tool after another at ``--rate`` calls a
second. The servers run offline here: from npm (``npm install --prefix bench/npm``) the everything,
memory, filesystem and sequential-thinking servers; from PyPI ``mcp-server-time``, ``mcp-server-git``,
``mcp-server-fetch`` (listed, never called: it would need the network); and the python-sdk
everything server (tests/fixtures/python-sdk-everything-server, on stdio).

Per fleet size and way, from the process table of the fleet's tree (the agents and all they start;
for the gateway, the daemon and all it starts): server processes and all processes; total PSS and
RSS (``/proc/PID/smaps_rollup``) once every agent has its tool lists; the time from launch until the
last agent had them; CPU (percent of one core) over an idle window and under the steady load; the
fleet's CPU per call and, for the gateway, the daemon's (its loop thread and its writer apart) and the
daemon's CPU per idle second; per-call p50/p99 under load. CPU is the scheduler's nanosecond count
(``cpu_clock.py``; a process's ended threads included). A size is left out when its direct fleet would
not fit in memory (projected from the last one measured).

Run: ``python bench/fleet.py`` (12, 24 and 48 agents; 60 s idle and 60 s load windows);
one size added to an earlier run's table and plot: ``python bench/fleet.py --agents 48 --with
earlier.json --json-out all.json --plot fleet.png``; smoke: ``python bench/fleet.py --agents 2 --idle-s
3 --load-s 3``; the daemon's loops paired, gateway only (``fleet_loops.py``): ``python bench/fleet.py
--agents 12 --idle-s 20 --ways gateway --loops uvloop,asyncio --rounds 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil

import dev_path  # noqa: F401 - puts devtools/ on sys.path
from cpu_clock import process_cpu_ns, threads_cpu_ns
from devtools.spawned import toml_list
from fleet_loops import loop_lines, schedule
from fleet_report import Fleet, plot, table_lines
from harness.gateway.event_loop import CHOICES, LOOP_ENV

ROOT = Path(__file__).resolve().parents[1]
NPM = ROOT / "bench" / "npm" / "node_modules" / "@modelcontextprotocol"
EVERYTHING_PY = ROOT / "tests" / "fixtures" / "python-sdk-everything-server"
AGENT = ROOT / "bench" / "fleet_agent.py"


def servers(run: Path, everything_py: Path) -> list[dict[str, Any]]:
    """The eight servers: name, argv, env, the cheap read call an agent makes (``None``: listed only),
    and ``marks``, the cmdline fragment that finds their processes in the process table."""
    node = shutil.which("node") or "node"
    files = run / "files"
    files.mkdir(exist_ok=True)
    (files / "note.txt").write_text("fleet\n")
    repo = run / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=f",
            "-c",
            "user.email=f@f",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "f",
        ],
        check=True,
    )
    py = sys.executable
    return [
        {"name": "everything", "argv": [node, str(NPM / "server-everything/dist/index.js"), "stdio"],
         "call": {"tool": "echo", "args": {"message": "hi"}}, "mark": "server-everything/dist"},
        {"name": "memory", "argv": [node, str(NPM / "server-memory/dist/index.js")],
         "env": {"MEMORY_FILE_PATH": str(run / "memory.jsonl")},
         "call": {"tool": "read_graph", "args": {}}, "mark": "server-memory/dist"},
        {"name": "filesystem", "argv": [node, str(NPM / "server-filesystem/dist/index.js"), str(files)],
         "call": {"tool": "list_allowed_directories", "args": {}}, "mark": "server-filesystem/dist"},
        {"name": "thinking", "argv": [node, str(NPM / "server-sequential-thinking/dist/index.js")],
         "call": None, "mark": "server-sequential-thinking/dist"},
        {"name": "time", "argv": [py, "-m", "mcp_server_time", "--local-timezone", "UTC"],
         "call": {"tool": "get_current_time", "args": {"timezone": "UTC"}}, "mark": "mcp_server_time"},
        {"name": "git", "argv": [py, "-m", "mcp_server_git", "--repository", str(repo)],
         "call": {"tool": "git_status", "args": {"repo_path": str(repo)}}, "mark": "mcp_server_git"},
        {"name": "fetch", "argv": [py, "-m", "mcp_server_fetch"], "call": None, "mark": "mcp_server_fetch"},
        {"name": "pyeverything", "argv": [py, str(everything_py / "stdio.py")],
         "env": {"PYTHONPATH": str(everything_py)},
         "call": {"tool": "test_simple_text", "args": {}}, "mark": "python-sdk-everything-server/stdio.py"},
    ]  # fmt: skip


def tree(roots: list[psutil.Process]) -> list[psutil.Process]:
    procs: list[psutil.Process] = []
    for root in roots:
        try:
            procs += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return procs


def role(cmdline: str, marks: list[str]) -> str:
    """What a process of the fleet is, by its command line."""
    if any(m in cmdline for m in marks):
        return "servers"
    if "fleet_agent.py" in cmdline:
        return "agents"
    words = cmdline.split()
    if words[-1:] == ["mcp"]:  # `harness mcp`, or the shell waiter it becomes (argv ends `harness mcp`)
        return "bridges"
    if "harness" in " ".join(words[:3]) and "daemon" in words:
        return "daemon"
    return "other"


def memory_kb(pid: int) -> tuple[int, int]:
    """PSS and RSS of one process (kB), from smaps_rollup; zeros for a process gone meanwhile."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    except OSError:
        pass
    return pss, rss


def cpu_ms(procs: list[psutil.Process]) -> float:
    """Milliseconds on a CPU of ``procs`` (each process's ended threads included; ended processes not)."""
    return sum(process_cpu_ns(p.pid) or 0 for p in procs) / 1e6


def wait_files(folder: Path, count: int, timeout: float, alive: psutil.Process | None = None) -> None:
    deadline = time.monotonic() + timeout
    while len(list(folder.iterdir())) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{folder}: {len(list(folder.iterdir()))} of {count} after {timeout:.0f} s")
        if alive is not None and not alive.is_running():
            raise RuntimeError(f"the daemon exited while waiting for {folder}")
        time.sleep(0.05)


ALLOW = 'mcp_allow = ["read", "write"]'


def gateway_config(table: list[dict[str, Any]], agents: list[list[str]]) -> str:
    upstreams = "".join(
        f"[mcp.{s['name']}]\nargv = {toml_list(s['argv'])}\n"
        + (
            f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in s['env'].items())} }}\n"
            if s.get("env")
            else ""
        )
        + "\n"
        for s in table
    )
    policy = f"[mcp_policy.fleet]\nservers = {toml_list(s['name'] for s in table)}\n\n"
    harnesses = "".join(
        f'[harness.agent{i}]\nargv = {toml_list(argv)}\nmcp_policy = "fleet"\n{ALLOW}\n\n'
        for i, argv in enumerate(agents)
    )
    return upstreams + policy + harnesses


def daemon_split(pid: int, before: dict[int, int], after: dict[int, int], calls: int) -> dict[str, float]:
    """The daemon's CPU per call (ms) between two ``threads_cpu_ns`` reads: its loop thread (the main
    thread) and its busiest other thread (the log writer, which records every call)."""
    delta = {tid: (ns - before.get(tid, 0)) / 1e6 / max(calls, 1) for tid, ns in after.items()}
    loop = delta.pop(pid, 0.0)
    return {"daemon_loop_ms_per_call": loop, "daemon_writer_ms_per_call": max(delta.values(), default=0.0)}


def run_fleet(way: str, n: int, a: argparse.Namespace, loop: str | None = None) -> Fleet:
    """One fleet, ``way``, of ``n`` agents; ``loop``: the daemon's ``HARNESS_EVENT_LOOP`` (None: unset)."""
    with tempfile.TemporaryDirectory(prefix=f"fleet-{way}-") as tmp:
        run = Path(tmp)
        for sub in ("ready", "results"):
            (run / sub).mkdir()
        table = servers(run, a.everything_py)
        servers_file = run / "servers.json"
        servers_file.write_text(json.dumps(table))
        argv = [
            sys.executable,
            str(AGENT),
            "--run",
            str(run),
            "--servers-file",
            str(servers_file),
            "--rate",
            str(a.rate),
        ]
        agents = [
            [*argv, "--name", f"agent{i}", *(["--gateway"] if way == "gateway" else [])] for i in range(n)
        ]
        t0 = time.time()
        daemon: psutil.Process | None = None
        launched: list[subprocess.Popen[bytes]] = []
        log = open(run / "fleet.log", "wb")  # noqa: SIM115 - closed below, after every process is gone
        try:
            if way == "gateway":
                (run / "harness.toml").write_text(gateway_config(table, agents))
                cmd = [sys.executable, "-m", "harness", "daemon", "--config", str(run / "harness.toml"),
                       "--state-dir", str(run / "state")]  # fmt: skip
                env = os.environ | ({LOOP_ENV: loop} if loop else {})
                launched.append(subprocess.Popen(cmd, stderr=log, start_new_session=True, env=env))
                daemon = psutil.Process(launched[0].pid)
            else:
                launched += [subprocess.Popen(argv, stderr=log, start_new_session=True) for argv in agents]
            roots = [psutil.Process(p.pid) for p in launched]
            wait_files(run / "ready", n, a.start_timeout, daemon)
            startup = max(json.loads(f.read_text())["t"] for f in (run / "ready").iterdir()) - t0
            time.sleep(a.settle_s)
            procs = tree(roots)
            marks = [s["mark"] for s in table]
            cmdlines = []
            for p in procs:
                try:
                    cmdlines.append(" ".join(p.cmdline()))
                except psutil.NoSuchProcess:
                    cmdlines.append("")
            server_procs = sum(any(m in c for m in marks) for c in cmdlines)
            mem = [memory_kb(p.pid) for p in procs]
            by_role: dict[str, float] = {}
            for cmdline, (pss, _rss) in zip(cmdlines, mem, strict=True):
                kind = role(cmdline, marks)
                by_role[kind] = by_role.get(kind, 0.0) + pss / 1024
            ds = [daemon] if daemon else []
            c0, d0 = cpu_ms(procs), cpu_ms(ds)
            time.sleep(a.idle_s)
            c1, d1 = cpu_ms(procs), cpu_ms(ds)
            idle, daemon_idle = (c1 - c0) / a.idle_s / 10, (d1 - d0) / a.idle_s
            t0s = threads_cpu_ns(daemon.pid) if daemon else {}
            c0, d0 = cpu_ms(procs), cpu_ms(ds)
            (run / "load").touch()
            time.sleep(a.load_s)
            c1, d1 = cpu_ms(procs), cpu_ms(ds)
            t1s = threads_cpu_ns(daemon.pid) if daemon else {}
            (run / "stop").touch()
            wait_files(run / "results", n, 60)
            results = [json.loads(f.read_text()) for f in (run / "results").iterdir()]
            fatal = [r["fatal"] for r in results if "fatal" in r]
            if fatal:
                raise RuntimeError(f"{len(fatal)} agents failed, e.g. {fatal[0]}")
            lat = sorted(x for r in results for x in r["latencies_ms"])
            calls = len(lat)
            return Fleet(
                way=way, agents=n, server_procs=server_procs, all_procs=len(procs),
                pss_mb=sum(m[0] for m in mem) / 1024, pss_mb_by_role=by_role,
                rss_mb=sum(m[1] for m in mem) / 1024,
                startup_s=startup, idle_cpu_pct=idle, load_cpu_pct=(c1 - c0) / a.load_s / 10,
                calls=calls, errors=sum(len(r["errors"]) for r in results),
                cpu_ms_per_call=(c1 - c0) / max(calls, 1),
                daemon_cpu_ms_per_call=(d1 - d0) / max(calls, 1) if daemon else None,
                p50_ms=statistics.median(lat) if lat else float("nan"),
                p99_ms=lat[min(calls - 1, int(calls * 0.99))] if lat else float("nan"),
                loop=loop, **(daemon_split(daemon.pid, t0s, t1s, calls) if daemon else {}),
                daemon_idle_ms_per_s=daemon_idle if daemon else None,
            )  # fmt: skip
        finally:
            stop(launched)
            log.close()


def stop(launched: list[subprocess.Popen[bytes]]) -> None:
    """Ends each launched process's session (the daemon stops its children itself on SIGTERM)."""
    for p in launched:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 20
    for p in launched:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


HEADROOM = 1.25
"""The direct fleet's PSS (the memory it really takes: shared pages counted once) times this must be
available before a larger fleet starts: a quarter more for what grows under load and the page cache."""


def available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("inf")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default="12,24,48", help="fleet sizes (%(default)s; '': only --with's)")
    ap.add_argument(
        "--rate", type=float, default=1.0, help="calls a second per agent under load (%(default)s)"
    )
    ap.add_argument("--idle-s", type=float, default=60.0)
    ap.add_argument("--load-s", type=float, default=60.0)
    ap.add_argument("--settle-s", type=float, default=2.0, help="after the last tool list, before measuring")
    ap.add_argument("--start-timeout", type=float, default=300.0)
    ap.add_argument(
        "--everything-py", type=Path, default=EVERYTHING_PY, help="the python-sdk fixture (%(default)s)"
    )
    ap.add_argument("--ways", default="direct,gateway", help="the ways run (%(default)s)")
    ap.add_argument("--loops", default="", help="daemon loops alternated per round, e.g. uvloop,asyncio")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each way (and loop) per size")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument(
        "--with", dest="earlier", type=Path, help="a --json-out of an earlier run, shown beside this one's"
    )
    ap.add_argument("--plot", type=Path, help="a PNG of PSS, processes and start-up against fleet size")
    a = ap.parse_args()
    missing = [p for p in (NPM / "server-filesystem", a.everything_py / "stdio.py") if not p.exists()]
    if missing:
        ap.error(
            f"missing {missing}: npm install --prefix bench/npm; the python-sdk fixture in tests/fixtures"
        )
    ways = a.ways.split(",")
    loops: list[str | None] = [x for x in a.loops.split(",") if x] or [None]
    if not set(loops) <= {None, *CHOICES} or not set(ways) <= {"direct", "gateway"}:
        ap.error(f"--ways: direct, gateway; --loops: {', '.join(CHOICES)}")
    fleets = [Fleet(**f) for f in json.loads(a.earlier.read_text())] if a.earlier else []
    pss_per_direct_agent = max((f.pss_mb / f.agents for f in fleets if f.way == "direct"), default=0.0)
    for i, n in enumerate(int(x) for x in a.agents.split(",") if x):
        need = pss_per_direct_agent * n * HEADROOM
        if need > available_mb():
            print(
                f"# {n} agents left out: the direct fleet would need ~{need:,.0f} MB,"
                f" {available_mb():,.0f} available"
            )
            continue
        for way, loop in schedule(ways, loops, a.rounds, i):
            fleet = run_fleet(way, n, a, loop)
            fleets.append(fleet)
            print(f"[{n} agents, {way}, {loop}] {json.dumps(asdict(fleet))}", file=sys.stderr, flush=True)
            if way == "direct":
                pss_per_direct_agent = fleet.pss_mb / n
    print(
        f"# fleet: agents x 8 servers, {a.rate:g} call/s per agent under load,"
        f" idle {a.idle_s:g} s, load {a.load_s:g} s"
    )
    print("\n".join(table_lines(fleets)))
    if len(loops) == 2:
        print("\n".join(loop_lines(fleets, [str(x) for x in loops])))
    if a.json_out:
        a.json_out.write_text(json.dumps([asdict(f) for f in fleets], indent=1))
    if a.plot:
        plot(fleets, a.plot)
        print(f"plot: {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
