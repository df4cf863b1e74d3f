"""The loopback HTTP endpoint under a bounded local attack (second trial N3, N4): half-open
connections and fuzzed requests with no token, while a harness's client keeps calling with its own.

A daemon serves ``[mcp] listen`` with the demo upstream and one harness, ``probe``, whose process
(``python -m devtools.http_fuzz probe``) initializes a session and calls ``demo__echo`` on
fresh connections every 0.2 s and times each try. Then, at once:

* ``--holders`` processes open ``--half-open`` connections between them, each sending a request
  head's start and a byte a second (the endpoint answers 503 past a cap, 408 at the head deadline);
* ``--threads`` threads send ``-n`` hostile requests (devtools/http_fuzz.py), each on a
  fresh connection, for at most ``--seconds``.

The bar: every probe call during the attack answered 200 in under 1 s, the daemon's stderr grew by
less than 10 KB with no traceback, every fuzzed request got an HTTP answer or a close, the daemon is
alive at the end and exits 0 on SIGTERM.

    python bench/http_load.py [--half-open 1000] [-n 100000] [--seconds 600]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import dev_path
from devtools.children import stop_daemon
from devtools.http_fuzz import fuzz
from devtools.spawned import toml_list

PY = sys.executable
DEMO = [PY, "-m", "harness.demo.upstream", "--test-tools"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _probe_lines(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def http_load(
    folder: Path,
    half_open: int = 1000,
    fuzzed: int = 100_000,
    seed: int = 1,
    holders: int = 20,
    threads: int = 8,
    seconds: float = 600.0,
) -> dict[str, object]:
    """Run the attack in ``folder``; the figures, with ``ok`` saying whether the bar held."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    port = _free_port()
    probe_out = folder / "probe.jsonl"
    probe = [PY, "-m", "devtools.http_fuzz", "probe", str(port), str(probe_out), "3600", "demo__echo"]
    (folder / "harness.toml").write_text(
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n[mcp.demo]\nargv = {toml_list(DEMO)}\n\n'
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.probe]\nargv = {toml_list(probe)}\nmcp_policy = "p"\n'
        f"workdir = {json.dumps(dev_path.ROOT)}\n"  # `python -m devtools…` finds the repository's root
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [dev_path.ROOT, env.get("PYTHONPATH")]))  # devtools
    command = [
        "harness",
        "daemon",
        "--config",
        str(folder / "harness.toml"),
        "--state-dir",
        str(folder / "s"),
    ]
    daemon = subprocess.Popen(
        [PY, "-m", *command],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    stderr: list[bytes] = []
    assert daemon.stderr is not None
    reader = threading.Thread(target=lambda: stderr.extend(daemon.stderr or ()), daemon=True)
    reader.start()
    held: Counter[str] = Counter()
    try:
        deadline = time.monotonic() + 60
        while not (probe_out.exists() and _probe_lines(probe_out)):
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit(f"the probe never called; daemon stderr:\n{b''.join(stderr).decode()}")
            time.sleep(0.1)
        hold_seconds = str(min(seconds, 20.0))
        holding = [
            subprocess.Popen(
                [PY, "-m", "devtools.http_fuzz", "hold", str(port), str(share), hold_seconds],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            for share in (half_open // holders + (i < half_open % holders) for i in range(holders))
        ]
        for proc in holding:  # started and imported: the attack is connections, not interpreters
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        before = sum(map(len, stderr))
        started = time.time()
        for proc in holding:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        clock = time.monotonic()
        outcomes = fuzz(port, fuzzed, seed, threads=threads, seconds=seconds)
        fuzz_seconds = time.monotonic() - clock
        for proc in holding:
            out, _ = proc.communicate(timeout=120)
            out = out.strip().splitlines()[-1] if out.strip() else ""
            held.update(json.loads(out or "{}"))
        ended = time.time()
        alive = daemon.poll() is None
        grown = sum(map(len, stderr)) - before
    finally:
        code = stop_daemon(daemon, reader)
    log = b"".join(stderr).decode(errors="replace")
    during = [p for p in _probe_lines(probe_out) if started <= p["at"] <= ended]
    slowest = max((p["seconds"] for p in during), default=0.0)
    figures: dict[str, object] = {
        "half_open": half_open,
        "half_open_ends": dict(held),
        "fuzzed_sent": sum(outcomes.values()),
        "fuzz_outcomes": {str(k): v for k, v in sorted(outcomes.items())},
        "fuzz_seconds": round(fuzz_seconds, 1),
        "fuzz_per_s": round(sum(outcomes.values()) / max(fuzz_seconds, 1e-9)),
        "probe_calls_during": len(during),
        "probe_failures": sum(p["status"] != 200 for p in during),
        "probe_slowest_s": slowest,
        "probe_median_s": sorted(p["seconds"] for p in during)[len(during) // 2] if during else None,
        "probe_over_0_5_s_at": [
            (round(p["at"] - started, 1), p["seconds"]) for p in during if p["seconds"] > 0.5
        ],
        "stderr_growth_bytes": grown,
        "tracebacks": log.count("Traceback") + log.count("Unhandled exception"),
        "daemon_alive_at_end": alive,
        "daemon_exit": code,
    }
    figures["ok"] = (
        bool(during)
        and figures["probe_failures"] == 0
        and slowest < 1.0
        and grown < 10_240
        and figures["tracebacks"] == 0
        and outcomes[-1] == 0
        and alive
        and code == 0
    )
    return figures


def lookup_cost(connections: int = 1000, rounds: int = 20) -> dict[str, float]:
    """Milliseconds (medians of ``rounds``) of one peer lookup with ``connections`` open loopback
    connections on the host: sock_diag, /proc/net/tcp, an fd scan of every process, of one owner."""
    from harness.gateway.downstream.tcp_peers import SocketOwners, TcpPeers

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 2 * connections + 64)), hard))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(connections)
        pairs = []
        for _ in range(connections):
            client = socket.create_connection(server.getsockname())
            pairs.append((client, server.accept()[0]))
        last = pairs[-1][1]
        pair = (last.getpeername(), last.getsockname())

        def median_ms(run: object) -> float:
            times = []
            for _ in range(rounds):
                start = time.perf_counter()
                run()  # type: ignore[operator]
                times.append((time.perf_counter() - start) * 1000)
            return round(sorted(times)[rounds // 2], 3)

        netlink, table = TcpPeers(), TcpPeers(netlink=False)
        inode = os.fstat(pairs[-1][0].fileno()).st_ino
        owners = SocketOwners()
        figures = {
            "processes": float(sum(name.isdigit() for name in os.listdir("/proc"))),
            "sock_diag_ms": median_ms(lambda: netlink._rows([pair])),
            "proc_net_tcp_ms": median_ms(lambda: table._rows([pair])),
            "scan_every_process_ms": median_ms(lambda: owners._scan(owners._all())),
            "scan_one_owner_ms": median_ms(lambda: owners._scan([str(os.getpid())])),
            "remembered_socket_ms": median_ms(lambda: (owners.pids({inode}), netlink._rows([pair]))),
        }
        netlink.close()
        table.close()
        for client, accepted in pairs:
            client.close()
            accepted.close()
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half-open", type=int, default=1000)
    ap.add_argument("-n", "--fuzzed", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--holders", type=int, default=20, help="processes holding the half-open connections")
    ap.add_argument("--threads", type=int, default=8, help="fuzzing threads")
    ap.add_argument("--seconds", type=float, default=600.0, help="the fuzzing stops after this long")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--lookup-cost", type=int, metavar="N", help="only time a peer lookup with N connections open"
    )
    a = ap.parse_args()
    if a.lookup_cost is not None:
        print(json.dumps(lookup_cost(a.lookup_cost)))
        return 0
    with tempfile.TemporaryDirectory(prefix="hld-", dir="/tmp") as folder:
        figures = http_load(Path(folder), a.half_open, a.fuzzed, a.seed, a.holders, a.threads, a.seconds)
    if a.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:<22} {value}")
        verdict = "PASS" if figures["ok"] else "FAIL"
        print(f"http load: token client < 1 s, stderr < 10 KB, no traceback: {verdict}")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
