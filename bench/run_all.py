"""Run every benchmark in this folder one after the other (``tox -e bench`` calls this).

Each script runs with its defaults as a subprocess of this interpreter, its output passed through;
the exit code is the number of scripts that failed their bar (or failed to run). Options after ``--``
are not forwarded; run a script on its own to change its settings (see bench/README.md).

``--quick`` uses smoke-run sizes (well under a minute in all) instead of the defaults (several
minutes, dominated by gateway_overhead).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPTS: dict[str, tuple[list[str], list[str]]] = {
    # name: (default args, --quick args)
    "bridge_startup.py": ([], ["--runs", "5"]),
    "event_rate.py": ([], ["-n", "50000", "--repeats", "1"]),
    "gateway_overhead.py": ([], ["--rounds", "1", "-n", "200", "-c", "2", "-m", "50"]),
    "store_throughput.py": ([], ["-n", "50000", "--replay-calls", "100000"]),
    "writer_trickle.py": ([], ["-n", "300", "--rounds", "1"]),
    "tool_search.py": ([], []),
    "context_economy.py": ([], ["--quick"]),
    "chaos.py": ([], ["--duration", "10", "--kills", "5"]),
    "http_endpoint.py": ([], ["--rounds", "1", "-n", "50"]),
    "http_framing.py": ([], ["--rounds", "3", "-n", "2000"]),
    "multiplexed_progress.py": ([], ["--rounds", "1", "-n", "10"]),
    "export.py": ([], ["--calls", "20000", "--repeats", "1"]),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke-run sizes")
    a = ap.parse_args()
    failed = 0
    for name, (full, quick) in SCRIPTS.items():
        cmd = [sys.executable, str(HERE / name), *(quick if a.quick else full)]
        print(f"\n===== {' '.join(cmd)}", flush=True)
        try:
            rc = subprocess.run(cmd, check=False, timeout=3600).returncode
        except subprocess.TimeoutExpired:
            rc = -1
        if rc != 0:
            print(f"===== {name}: exit code {rc}", flush=True)
            failed += 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
