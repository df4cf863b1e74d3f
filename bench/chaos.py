"""Chaos: agents calling upstreams through the gateway while the upstreams are SIGKILLed at random.

The bar (issue): 8 concurrent agents calling 3 upstreams for 60 s while upstreams are killed at random
30 times: every call ends within its timeout + 100 ms with a defined outcome, zero hang, zero answers
delivered to the wrong caller, call-log rows + dropped = calls made, daemon RSS and open file
descriptors back to baseline.

What it does (everything on unix sockets and 127.0.0.1; every wait bounded; it kills what it started):

1. Writes a temp config: 3 upstreams ``alpha``, ``beta``, ``gamma`` running
   ``tests/fixtures/faulty_upstream.py --record <tmp>/rec/<name>.jsonl`` (the record path is the marker
   that tells the upstreams apart in the process table) with ``timeout`` (2s), ``restart_delay = "50ms"``
   and ``breaker_cooldown`` (1s); one policy exposing the three; ``--agents`` harnesses running
   ``bench/chaos_agent.py`` (2-4 SDK callers each, see its docstring); ``[mcp] metrics_listen`` on a
   free loopback port.
2. Starts ``harness daemon`` (fresh state dir, environment without ``HARNESS_*``), waits for ``ready``
   and for every agent's session, lets them warm up (``--warmup``), then samples the daemon's baseline
   RSS and open fds (median of 5 samples).
3. Kills: ``--kills`` SIGKILLs spread uniformly over the agents' calling window, one per slot at a
   random point of the slot (jitter), each to a random upstream that is ``up`` (status via the control
   socket, pid cross-checked against the daemon's children carrying the marker); if none is up it
   waits up to 2 s, else the kill is skipped (and counted). Ten kills per upstream per minute cannot
   stay under the supervisor's flapping limit (more than 5 restarts in 60 s -> ``failed``), so an
   upstream seen ``failed`` is restarted with ``harness restart NAME`` (the CLI), counted and printed
   (``--no-restart-failed`` leaves it failed: its calls then get ``upstream_unavailable``).
4. When every agent has written its ``.done`` file: waits until all upstreams are up, lets the log
   settle (2 s), samples RSS/fds again with every agent still connected and idle (same topology as the
   baseline), reads the store read-only (``call_log`` count and outcomes, ``upstream.started`` events)
   and the dropped counter from ``/metrics``; then releases the agents, samples once more after they
   have exited, SIGTERMs the daemon, checks exit 0 and that no process it started is left.
5. Prints figures and ``CHAOS: PASS`` or ``CHAOS: FAIL (<reasons>)`` (exit 0 / 1).

Checks: undefined outcomes = 0 (defined: ok, tool_error, upstream_error, upstream_unavailable, timeout,
circuit_open); client-side guard fired (hang) = 0; calls the gateway answered that took longer than
timeout + 100 ms (agent clock: monotonic start to end, SDK and bridge included) = 0; ``ok`` answers
not equal to what the call asked for (misrouted) = 0; call_log rows + dropped = calls made; RSS after
<= baseline + ``--rss-tolerance-mb``; fds after <= baseline + ``--fd-tolerance``; all kills done; the
daemon exits 0 leaving nothing behind. Echo calls are also joined one by one with their call_log row
(the stored args hold the unique payload) to compare outcomes call by call.

Smoke run: ``python bench/chaos.py --duration 10 --kills 5`` (about 25 s). Defaults: about 80 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import apsw
import psutil

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "tests" / "fixtures" / "faulty_upstream.py"
AGENT = Path(__file__).resolve().parent / "chaos_agent.py"
UPSTREAMS = ("alpha", "beta", "gamma")
DEFINED = ("ok", "tool_error", "upstream_error", "upstream_unavailable", "timeout", "circuit_open")
# agent outcome class -> (call_log outcome, call_log error_reason)
EXPECTED_ROW = {
    "ok": ("ok", None),
    "tool_error": ("tool_error", None),
    "upstream_error": ("upstream_error", "upstream_error"),
    "upstream_unavailable": ("upstream_error", "upstream_unavailable"),
    "timeout": ("timeout", "timeout"),
    "circuit_open": ("circuit_open", "circuit_open"),
    "hang": ("cancelled", "cancelled"),
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def toml_str(s: str) -> str:
    return json.dumps(s)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ms(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


class Run:
    """One chaos run: the temp dir, the daemon, the schedule and what was seen."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.rng = random.Random(a.seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="harness-chaos-"))
        self.state = self.tmp / "state"
        self.cfg = self.tmp / "harness.toml"
        self.outs = [self.tmp / "agents" / f"agent-{i}.jsonl" for i in range(a.agents)]
        self.release = self.tmp / "agents" / "release"
        self.recs = {u: self.tmp / "rec" / f"{u}.jsonl" for u in UPSTREAMS}
        self.stderr_path = self.tmp / "daemon.stderr"
        self.harness_bin = str(Path(sys.executable).parent / "harness")
        self.port = free_port()
        self.daemon: subprocess.Popen[bytes] | None = None
        self.dproc: psutil.Process | None = None
        self.known: dict[int, psutil.Process] = {}
        self.kills: list[dict[str, Any]] = []
        self.skipped_kills = 0
        self.cli_restarts: list[tuple[float, str, str]] = []
        self.states: dict[str, str] = {}
        self.transitions: list[tuple[float, str, str, str]] = []
        self.samples: list[tuple[float, int, int]] = []
        self.t_ready = 0.0

    # ------------------------------------------------------------------ setup

    def write_config(self) -> None:
        (self.tmp / "agents").mkdir()
        (self.tmp / "rec").mkdir()
        a = self.a
        lines = ["[mcp]", f'metrics_listen = "127.0.0.1:{self.port}"', ""]
        for u in UPSTREAMS:
            argv = [sys.executable, str(FAULTY), "--record", str(self.recs[u])]
            lines += [
                f"[mcp.{u}]",
                f"argv = [{', '.join(map(toml_str, argv))}]",
                f'timeout = "{ms(a.timeout)}"',
                f'restart_delay = "{ms(a.restart_delay)}"',
                f"breaker_failures = {a.breaker_failures}",
                f'breaker_cooldown = "{ms(a.breaker_cooldown)}"',
                "",
            ]
        lines += ["[mcp_policy.chaos]", f"servers = [{', '.join(map(toml_str, UPSTREAMS))}]", ""]
        for i, out in enumerate(self.outs):
            argv = [
                sys.executable,
                str(AGENT),
                "--out",
                str(out),
                "--duration",
                str(a.duration),
                "--seed",
                str(a.seed * 1000 + i),
                "--upstreams",
                ",".join(UPSTREAMS),
                "--timeout",
                str(a.timeout),
                "--guard",
                str(a.guard),
                "--hang-fraction",
                str(a.hang_fraction),
                "--sleep-fraction",
                str(a.sleep_fraction),
                "--release",
                str(self.release),
                "--hold-max",
                str(a.duration + 180),
            ]
            lines += [
                f"[harness.agent-{i}]",
                f"argv = [{', '.join(map(toml_str, argv))}]",
                'mcp_policy = "chaos"',
                "",
            ]
        self.cfg.write_text("\n".join(lines))

    def start_daemon(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        env["PATH"] = os.pathsep.join([str(Path(self.harness_bin).parent), env.get("PATH", "")])
        with open(self.stderr_path, "wb") as err:
            self.daemon = subprocess.Popen(
                [self.harness_bin, "daemon", "--config", str(self.cfg), "--state-dir", str(self.state)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
                start_new_session=True,
            )
        self.dproc = psutil.Process(self.daemon.pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                raise RuntimeError(f"daemon exited rc={self.daemon.returncode}: {self.stderr_tail()}")
            if any(line.strip() == "ready" for line in self.stderr_lines()):
                self.t_ready = time.monotonic()
                return
            time.sleep(0.05)
        raise RuntimeError("daemon did not print ready within 60 s")

    def stderr_lines(self) -> list[str]:
        try:
            return self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            return []

    def stderr_tail(self, n: int = 10) -> str:
        return " | ".join(self.stderr_lines()[-n:])

    # ------------------------------------------------------------------ daemon access

    def control(self, command: str, args: dict[str, Any] | None = None, timeout: float = 5.0) -> Any:
        from harness.cli.common import control_request
        from harness.gateway.state_dir import StatePaths

        return control_request(StatePaths(self.state), command, args, timeout=timeout)

    def children(self) -> list[psutil.Process]:
        assert self.dproc is not None
        try:
            kids = self.dproc.children(recursive=True)
        except psutil.Error:
            return []
        for p in kids:
            self.known.setdefault(p.pid, p)
        return kids

    def upstream_pids(self) -> dict[str, set[int]]:
        found: dict[str, set[int]] = defaultdict(set)
        for p in self.children():
            with contextlib.suppress(psutil.Error):
                cmd = " ".join(p.cmdline())
                for u, rec in self.recs.items():
                    if str(rec) in cmd and p.status() != psutil.STATUS_ZOMBIE:
                        found[u].add(p.pid)
        return found

    def sample(self) -> tuple[int, int]:
        assert self.dproc is not None
        rss, fds = self.dproc.memory_info().rss, self.dproc.num_fds()
        self.samples.append((time.monotonic(), rss, fds))
        return rss, fds

    def sample_median(self, n: int = 5, gap: float = 0.2) -> tuple[float, float, list[int]]:
        got = []
        for i in range(n):
            got.append(self.sample())
            if i < n - 1:
                time.sleep(gap)
        rss = statistics.median(r for r, _ in got) / 2**20
        fds = [f for _, f in got]
        return rss, statistics.median(fds), fds

    def poll_status(self) -> dict[str, Any]:
        status = self.control("status")
        now = time.monotonic() - self.t_ready
        for u, info in status["upstreams"].items():
            st = info["state"]
            if self.states.get(u) != st:
                self.transitions.append((now, u, self.states.get(u, "-"), st))
                self.states[u] = st
        return status

    def restart_failed(self, status: dict[str, Any]) -> None:
        if not self.a.restart_failed:
            return
        for u, info in status["upstreams"].items():
            if info["state"] == "failed":
                t = time.monotonic() - self.t_ready
                proc = subprocess.run(
                    [
                        self.harness_bin,
                        "restart",
                        u,
                        "--state-dir",
                        str(self.state),
                        "--config",
                        str(self.cfg),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                )
                self.cli_restarts.append((t, u, (proc.stdout + proc.stderr).strip()))
                log(f"t={t:6.2f}s {u} was failed: `harness restart {u}` -> {proc.stdout.strip()}")

    # ------------------------------------------------------------------ the chaos

    def wait_sessions(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rows = self.control("list")
            if sum(r["sessions"] for r in rows) >= self.a.agents:
                return
            if any(r["state"] == "exited" for r in rows):
                raise RuntimeError(f"an agent exited before every agent connected: {rows}")
            time.sleep(0.1)
        raise RuntimeError(f"not every agent connected within 60 s: {self.control('list')}")

    def calling_ends(self) -> list[float]:
        """Each agent's monotonic end of calling (from ``<out>.start``), once every agent has started."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            starts = [Path(str(o) + ".start") for o in self.outs]
            if all(p.exists() for p in starts):
                with contextlib.suppress(ValueError):
                    return [json.loads(p.read_text())["t_end_monotonic"] for p in starts]
            time.sleep(0.05)
        raise RuntimeError("not every agent started calling within 60 s")

    def agents_done(self) -> bool:
        return all(Path(str(o) + ".done").exists() for o in self.outs)

    def kill_one(self, status: dict[str, Any]) -> bool:
        pids = self.upstream_pids()
        up = [
            u
            for u, info in status["upstreams"].items()
            if info["state"] == "up" and info["pid"] in pids.get(u, set())
        ]
        if not up:
            return False
        u = self.rng.choice(up)
        pid = status["upstreams"][u]["pid"]
        t = time.monotonic() - self.t_ready
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.kills.append({"t": round(t, 3), "upstream": u, "pid": pid, "wall": time.time()})
        log(f"t={t:6.2f}s kill #{len(self.kills)} {u} pid {pid}")
        return True

    def chaos(self, t_start: float, t_stop: float) -> None:
        """Kills on schedule, status every 0.25 s, resources every 1 s, until the agents are done."""
        a = self.a
        slot = (t_stop - t_start) / max(1, a.kills)
        schedule = [t_start + (i + self.rng.uniform(0.1, 0.9)) * slot for i in range(a.kills)]
        hard_deadline = self.t_ready + a.duration + a.timeout + a.guard + 90
        next_status = next_sample = 0.0
        status: dict[str, Any] = {"upstreams": {}}
        pending_kill: float | None = None
        while time.monotonic() < hard_deadline:
            now = time.monotonic()
            if now >= next_status:
                status = self.poll_status()
                self.restart_failed(status)
                next_status = now + 0.25
            if now >= next_sample:
                self.sample()
                self.children()
                next_sample = now + 1.0
            if schedule and now >= schedule[0]:
                if pending_kill is None:
                    pending_kill = now
                if self.kill_one(self.poll_status()):
                    schedule.pop(0)
                    pending_kill = None
                elif now - pending_kill > 2.0:
                    log(f"t={now - self.t_ready:6.2f}s no upstream up for 2 s: kill skipped")
                    self.skipped_kills += 1
                    schedule.pop(0)
                    pending_kill = None
            if not schedule and self.agents_done():
                return
            if self.daemon is not None and self.daemon.poll() is not None:
                raise RuntimeError(f"daemon died rc={self.daemon.returncode}: {self.stderr_tail()}")
            time.sleep(0.02)
        raise RuntimeError("agents did not finish in time")

    def wait_all_up(self, limit: float = 15.0) -> bool:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            status = self.poll_status()
            self.restart_failed(status)
            if all(i["state"] == "up" for i in status["upstreams"].values()):
                return True
            time.sleep(0.1)
        return False

    # ------------------------------------------------------------------ teardown

    def stop(self) -> dict[str, Any]:
        info: dict[str, Any] = {}
        d = self.daemon
        if d is None:
            return info
        self.children()
        t0 = time.monotonic()
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
        try:
            info["rc"] = d.wait(timeout=30)
            info["stop_s"] = round(time.monotonic() - t0, 3)
        except subprocess.TimeoutExpired:
            info["rc"] = None
            info["problem"] = "still running 30 s after SIGTERM: SIGKILLed"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(d.pid, signal.SIGKILL)
            d.wait(timeout=10)
        time.sleep(0.3)
        left = []
        for pid, p in self.known.items():
            with contextlib.suppress(psutil.Error):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{pid}:{' '.join(p.cmdline())[:120]}")
                    p.kill()
        info["leftover"] = left
        return info


# ---------------------------------------------------------------------- reading


def read_store(db: Path) -> dict[str, Any]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        q = con.execute
        out: dict[str, Any] = {"rows": q("SELECT count(*) FROM call_log").fetchall()[0][0]}
        out["by_outcome"] = {
            f"{o}/{r}": n
            for o, r, n in q(
                "SELECT outcome, error_reason, count(*) FROM call_log GROUP BY 1, 2 ORDER BY 3 DESC"
            )
        }
        out["by_harness"] = dict(q("SELECT harness, count(*) FROM call_log GROUP BY 1").fetchall())
        out["latency_max_ms"] = q(
            "SELECT max(latency_ms) FROM call_log WHERE outcome != 'cancelled'"
        ).fetchall()[0][0]
        out["latency_by_outcome"] = {
            o: (n, mx) for o, n, mx in q("SELECT outcome, count(*), max(latency_ms) FROM call_log GROUP BY 1")
        }
        out["started"] = dict(
            q(
                "SELECT json_extract(data, '$.upstream'), count(*) FROM events"
                " WHERE name = 'upstream.started' GROUP BY 1"
            ).fetchall()
        )
        out["exited"] = dict(
            q(
                "SELECT json_extract(data, '$.upstream') || ' ' || json_extract(data, '$.reason'), count(*)"
                " FROM events WHERE name = 'upstream.exited' GROUP BY 1"
            ).fetchall()
        )
        out["events"] = dict(q("SELECT name, count(*) FROM events GROUP BY 1").fetchall())
        out["echo_rows"] = [
            (args, outcome, reason, latency)
            for args, outcome, reason, latency in q(
                "SELECT args, outcome, error_reason, latency_ms FROM call_log WHERE tool = 'echo'"
            )
        ]
        return out
    finally:
        con.close()


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        with contextlib.suppress(ValueError):
            values[name] = float(value)
    return values


def read_agents(outs: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    records, summaries = [], []
    for out in outs:
        if not out.exists():
            summaries.append({"agent": out.stem, "fatal": "no output file"})
            continue
        for line in out.read_text(errors="replace").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            (summaries if rec.get("done") else records).append(rec)
    return records, summaries


# ---------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60.0, help="agents' calling time (s)")
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=2.0, help="upstream timeout (s)")
    ap.add_argument("--guard", type=float, default=1.0, help="agent guard = timeout + guard (s)")
    ap.add_argument("--restart-delay", type=float, default=0.05)
    ap.add_argument("--breaker-failures", type=int, default=5)
    ap.add_argument("--breaker-cooldown", type=float, default=1.0)
    ap.add_argument("--hang-fraction", type=float, default=0.01)
    ap.add_argument("--sleep-fraction", type=float, default=0.2)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--no-restart-failed", dest="restart_failed", action="store_false")
    ap.add_argument("--rss-tolerance-mb", type=float, default=10.0)
    ap.add_argument("--fd-tolerance", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (always kept on FAIL)")
    a = ap.parse_args()

    run = Run(a)
    log(f"temp dir {run.tmp}")
    run.write_config()
    fig: dict[str, Any] = {}
    fatal = ""
    stop: dict[str, Any] = {}
    store: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        run.start_daemon()
        fig["ready_s"] = round(run.t_ready - t0, 2)
        run.poll_status()
        run.wait_sessions()
        ends = run.calling_ends()
        fig["connected_s"] = round(time.monotonic() - run.t_ready, 2)
        time.sleep(a.warmup)
        pids0 = run.upstream_pids()
        fig["base_rss"], fig["base_fds"], fig["base_fd_samples"] = run.sample_median()
        t_base = time.monotonic()
        log(f"baseline RSS {fig['base_rss']:.1f} MB, fds {fig['base_fds']}; upstream pids {dict(pids0)}")
        # Kills from the baseline until 1 s before the first agent stops calling.
        t_stop = max(t_base + 1.0, min(ends) - 1.0)
        fig["kill_window"] = (round(t_base - run.t_ready, 2), round(t_stop - run.t_ready, 2))
        run.chaos(t_base, t_stop)
        fig["agents_done_s"] = round(time.monotonic() - run.t_ready, 2)
        fig["all_up"] = run.wait_all_up()
        time.sleep(2.0)  # the log settles (group commit) and transient buffers drain
        fig["after_rss"], fig["after_fds"], fig["after_fd_samples"] = run.sample_median()
        store = read_store(run.state / "harness.db")
        metrics = scrape(run.port)
        run.release.write_text("go\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(r["state"] != "running" for r in run.control("list")):
                break
            time.sleep(0.1)
        time.sleep(1.0)
        fig["exited_rss"], fig["exited_fds"], _ = run.sample_median(3, 0.2)
        fig["peak_rss"] = max(r for _, r, _ in run.samples) / 2**20
        fig["peak_fds"] = max(f for _, _, f in run.samples)
    except Exception as exc:
        fatal = f"{type(exc).__name__}: {exc}"
        log(f"FATAL {fatal}")
    finally:
        with contextlib.suppress(OSError):
            run.release.write_text("go\n")
        stop = run.stop()
    final_rows = None
    with contextlib.suppress(Exception):
        final_rows = read_store(run.state / "harness.db")["rows"]

    records, summaries = read_agents(run.outs)
    return report(run, a, fig, fatal, stop, store, metrics, records, summaries, final_rows)


def report(
    run: Run,
    a: argparse.Namespace,
    fig: dict[str, Any],
    fatal: str,
    stop: dict[str, Any],
    store: dict[str, Any],
    metrics: dict[str, float],
    records: list[dict[str, Any]],
    summaries: list[dict[str, Any]],
    final_rows: int | None,
) -> int:
    fails: list[str] = []
    if fatal:
        fails.append(fatal)
    limit = a.timeout + 0.1
    calls = len(records)
    outcomes = Counter(r["outcome"] for r in records)
    undefined = {o: n for o, n in outcomes.items() if o not in DEFINED and o != "hang"}
    hangs = outcomes.get("hang", 0)
    answered = [r for r in records if r["outcome"] != "hang"]
    over = [r for r in answered if r["dur"] > limit]
    misrouted = [r for r in records if r["outcome"] == "ok" and not r.get("match", True)]
    by_tool_outcome = Counter((r["tool"], r["outcome"]) for r in records)
    dur_by_outcome: dict[str, list[float]] = defaultdict(list)
    for r in records:
        dur_by_outcome[r["outcome"]].append(r["dur"])
    fatal_agents = [s for s in summaries if s.get("fatal")]

    print(f"# chaos: {a.agents} agents x {a.duration:g} s, 3 upstreams, {a.kills} SIGKILLs, seed {a.seed}")
    print(
        f"config: timeout {a.timeout:g}s, restart_delay {ms(a.restart_delay)}, breaker {a.breaker_failures}"
        f" failures / {a.breaker_cooldown:g}s cooldown, client guard timeout+{a.guard:g}s,"
        f" calls: {a.hang_fraction:.0%} hang, {a.sleep_fraction:.0%} sleep 10-500 ms, rest echo"
    )
    print(f"temp dir: {run.tmp}")
    if fig.get("ready_s") is not None:
        print(
            f"daemon: ready after {fig['ready_s']} s; all agents calling {fig.get('connected_s')} s later;"
            f" kills between t = {fig.get('kill_window')} s after ready"
        )
    callers = sum(s.get("callers", 0) for s in summaries)
    print(f"agents: {len(summaries)} summaries, {callers} callers, fatal: {len(fatal_agents)}")
    for s in fatal_agents:
        print(f"  agent {s.get('agent')}: {s.get('fatal')}")
    print()
    print(f"calls made (agent records): {calls}  ({calls / max(a.duration, 1e-9):.0f}/s)")
    print("calls per outcome (agent view):  outcome  count  max s  p99 s")
    for o, n in outcomes.most_common():
        d = sorted(dur_by_outcome[o])
        p99 = d[min(len(d) - 1, int(0.99 * len(d)))]
        print(f"  {o:22s} {n:6d}  {max(d):6.3f}  {p99:6.3f}")
    print("  per tool: " + ", ".join(f"{t}/{o} {n}" for (t, o), n in sorted(by_tool_outcome.items())))
    if answered:
        worst = max(answered, key=lambda r: r["dur"])
        print(
            f"max end-start over gateway-answered calls: {worst['dur']:.3f} s ({worst['tool']} on"
            f" {worst['up']}, {worst['outcome']}); limit timeout+0.1 = {limit:.3f} s; over the limit:"
            f" {len(over)}"
        )
    for r in over[:10]:
        keys = ("a", "c", "s", "up", "tool", "outcome", "dur", "t0", "detail")
        print(f"  over: {json.dumps({k: r.get(k) for k in keys})}")
    print(f"hangs (client guard {a.timeout + a.guard:g} s fired): {hangs}")
    print(f"misrouted answers (ok with another call's answer): {len(misrouted)}")
    for r in misrouted[:10]:
        print(f"  misrouted: {r.get('a')}/{r.get('c')}/{r.get('s')} {r['tool']} got {r.get('got')!r}")
    if undefined:
        print(f"undefined outcomes: {undefined}")
        for r in [r for r in records if r["outcome"] in undefined][:10]:
            print(f"  {r['outcome']}: {r.get('detail')}")

    dropped = metrics.get("harness_mcp_call_log_dropped_total")
    rows = store.get("rows")
    print()
    if store:
        print(
            f"call_log rows {rows} (after SIGTERM: {final_rows}) + dropped {dropped} ="
            f" {None if rows is None or dropped is None else rows + dropped:g}; calls made {calls}"
        )
        print("call_log outcomes: " + ", ".join(f"{k} {v}" for k, v in store["by_outcome"].items()))
        expected = Counter(EXPECTED_ROW.get(r["outcome"], ("?", r["outcome"])) for r in records)
        stored = Counter()
        for key, n in store["by_outcome"].items():
            o, _, reason = key.partition("/")
            stored[(o, None if reason == "None" else reason)] = n
        diff = {f"{o}/{r}": stored[(o, r)] - expected[(o, r)] for o, r in set(stored) | set(expected)}
        diff = {k: v for k, v in diff.items() if v}
        print(f"call_log minus agent view, per outcome: {diff or 'none (identical)'}")
        lat = store["latency_by_outcome"]
        print(
            "call_log latency_ms max per outcome: "
            + ", ".join(f"{o} {mx:.1f} (n={n})" for o, (n, mx) in sorted(lat.items()))
        )
        per_harness = Counter(r["a"] for r in records)
        bad_h = {
            h: (n, store["by_harness"].get(h))
            for h, n in per_harness.items()
            if store["by_harness"].get(h) != n
        }
        print(f"per-agent rows vs calls: {bad_h or 'all equal'}")
        joined = join_echo(records, store["echo_rows"])
        print(
            f"echo calls joined to their row by payload: {joined['joined']} of {joined['echo_calls']};"
            f" outcome mismatches {len(joined['mismatch'])}, calls without a row {len(joined['missing'])},"
            f" payloads with >1 row {joined['dupes']}"
        )
        for m in joined["mismatch"][:10]:
            print(f"  mismatch: {m}")
        for m in joined["missing"][:10]:
            print(f"  no row: {m}")
        print(
            "upstream.started events: "
            + ", ".join(f"{u} {n}" for u, n in sorted(store["started"].items()))
            + f" (= 1 + restarts); exits: {dict(sorted(store['exited'].items()))}"
        )
        ev = store["events"]
        print(f"circuit.opened/closed events: {ev.get('circuit.opened', 0)}/{ev.get('circuit.closed', 0)}")
        restarts_metric = {
            k.split('"')[1]: v
            for k, v in metrics.items()
            if k.startswith("harness_mcp_upstream_restarts_total{")
        }
        print(f"harness_mcp_upstream_restarts_total: {restarts_metric}")
    per_up = Counter(k["upstream"] for k in run.kills)
    times = ", ".join(f"{k['t']:.1f}" for k in run.kills)
    print(
        f"kills done: {len(run.kills)} of {a.kills} (skipped {run.skipped_kills});"
        f" per upstream {dict(per_up)};"
        f" at t = {times} s"
    )
    print(
        f"`harness restart` after `failed` (flapping): {len(run.cli_restarts)}"
        + (" at " + ", ".join(f"{t:.1f}s {u}" for t, u, _ in run.cli_restarts) if run.cli_restarts else "")
    )
    print(f"upstream state transitions seen (0.25 s polling): {len(run.transitions)}")
    if "base_rss" in fig:
        print()
        print(
            f"daemon RSS: baseline {fig['base_rss']:.1f} MB, after (agents connected, idle)"
            f" {fig.get('after_rss', float('nan')):.1f} MB, after agents exited"
            f" {fig.get('exited_rss', float('nan')):.1f} MB, peak {fig.get('peak_rss', float('nan')):.1f} MB"
        )
        print(
            f"daemon fds: baseline {fig['base_fds']:g} {fig['base_fd_samples']}, after (agents connected)"
            f" {fig.get('after_fds', float('nan')):g} {fig.get('after_fd_samples')}, after agents exited"
            f" {fig.get('exited_fds', float('nan')):g}, peak {fig.get('peak_fds')}"
        )
    print(
        f"daemon stop: rc {stop.get('rc')} in {stop.get('stop_s')} s; leftover processes:"
        f" {stop.get('leftover') or 'none'}" + (f"; {stop['problem']}" if stop.get("problem") else "")
    )

    if undefined:
        fails.append(f"{sum(undefined.values())} undefined outcomes")
    if hangs:
        fails.append(f"{hangs} hangs")
    if over:
        fails.append(f"{len(over)} calls over timeout+100ms")
    if misrouted:
        fails.append(f"{len(misrouted)} misrouted")
    if fatal_agents:
        fails.append(f"{len(fatal_agents)} agents failed")
    if rows is None or dropped is None or rows + dropped != calls:
        fails.append(f"rows {rows} + dropped {dropped} != calls {calls}")
    if final_rows is not None and rows is not None and final_rows != rows:
        fails.append(f"rows changed after SIGTERM: {rows} -> {final_rows}")
    if "after_rss" in fig and fig["after_rss"] > fig["base_rss"] + a.rss_tolerance_mb:
        fails.append(f"RSS {fig['base_rss']:.1f} -> {fig['after_rss']:.1f} MB")
    if "after_fds" in fig and fig["after_fds"] > fig["base_fds"] + a.fd_tolerance:
        fails.append(f"fds {fig['base_fds']:g} -> {fig['after_fds']:g}")
    if len(run.kills) < a.kills:
        fails.append(f"only {len(run.kills)} of {a.kills} kills")
    if stop.get("rc") != 0:
        fails.append(f"daemon rc {stop.get('rc')}")
    if stop.get("leftover"):
        fails.append(f"{len(stop['leftover'])} processes left")
    print()
    if fails:
        print(f"CHAOS: FAIL ({'; '.join(fails)})")
        print(f"(kept {run.tmp}: daemon.stderr, state/upstreams/*.log, agents/*.jsonl, rec/*.jsonl)")
        return 1
    print("CHAOS: PASS")
    if not a.keep:
        import shutil

        shutil.rmtree(run.tmp, ignore_errors=True)
    return 0


def join_echo(records: list[dict[str, Any]], rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Match each echo call to its call_log row through the unique payload in the stored args."""
    by_text: dict[str, list[tuple[str, str | None, float]]] = defaultdict(list)
    for args, outcome, reason, latency in rows:
        with contextlib.suppress(ValueError, TypeError):
            by_text[json.loads(args).get("text")].append((outcome, reason, latency))
    out: dict[str, Any] = {"echo_calls": 0, "joined": 0, "mismatch": [], "missing": [], "dupes": 0}
    for r in records:
        if r["tool"] != "echo":
            continue
        out["echo_calls"] += 1
        found = by_text.get(r["text"])
        if not found:
            out["missing"].append((r["text"], r["outcome"], r["dur"]))
            continue
        if len(found) > 1:
            out["dupes"] += 1
        out["joined"] += 1
        want = EXPECTED_ROW.get(r["outcome"], ("?", r["outcome"]))
        if (found[0][0], found[0][1]) != want:
            out["mismatch"].append((r["text"], r["outcome"], r["dur"], found[0]))
    return out


if __name__ == "__main__":
    sys.exit(main())
