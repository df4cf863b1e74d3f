"""Fuzz a real daemon with hostile MCP traffic (issue 9): 0 crashes, 0 hangs, 0 lost rows, and a
healthy sibling session throughout.

A daemon runs one upstream (tests/fixtures/faulty_upstream.py) and two spawned harnesses that only
hold their tokens: ``fuzzer`` (``mcp_allow = ["read"]``) and ``sibling``. :func:`run_fuzz`
(devtools/fuzz.py, through devtools/fuzz_daemon.py) writes ``-n`` hostile messages as ``fuzzer``
on the daemon's socket, one session per 5,000 messages (``--per-session``), each handshake version
in turn; a ``ping`` every 250 messages must be answered within 10 s. Meanwhile ``sibling`` calls
``up__echo`` every 50 ms through a real ``harness mcp`` bridge. Then:

* crashes: the daemon is alive at every probe and exits 0 on SIGTERM, with no traceback on stderr;
* hangs: every probe and every owed answer (well-formed requests with an int/string id) arrived;
* lost rows: ``call_log`` holds exactly one row per ``tools/call`` the fuzzer sent as a well-formed
  request, and one per sibling call;
* the sibling: every call answered, not an error; its p99 latency is printed.

    python bench/fuzz.py [-n 100000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import dev_path  # noqa: F401 - puts devtools/ on sys.path
from devtools.fuzz_daemon import fuzz_daemon


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--messages", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-session", type=int, default=5000, help="messages per session (default 5000)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hfz-", dir="/tmp") as folder:
        figures = fuzz_daemon(Path(folder), a.messages, a.seed, a.per_session, quiet=a.json)
    if a.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:<22} {value}")
        verdict = "PASS" if figures["ok"] else "FAIL"
        print(f"fuzz: 0 crashes, 0 hangs, 0 lost rows, healthy sibling: {verdict}")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
