"""A harness that uses the loopback HTTP endpoint by hand, as the trial's thief did: each step
initializes a session with a token and calls ``demo__echo``; statuses and bodies go to --out (JSON),
then it sleeps (its harness keeps running).

Steps (``--steps``, a JSON list of [name, source]): source ``own`` is this harness's
HARNESS_MCP_TOKEN; ``stolen:NAME`` is harness NAME's, read from its /proc environ (its pid from
``harness list --json``, waited for).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from harness.testing.http_fuzz import post


def _token_of(name: str, state: str) -> str:
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(
            ["harness", "list", "--json", "--state-dir", state], capture_output=True, text=True, timeout=60
        )
        rows = json.loads(done.stdout) if done.returncode == 0 else []
        pid = next((r["pid"] for r in rows if r["name"] == name and r["pid"]), None)
        if pid or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"HARNESS_MCP_TOKEN="))


def _step(port: int, token: str, text: str) -> dict[str, Any]:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "a", "version": "0"},
        },
    }
    opened = post(port, token, init)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "demo__echo", "arguments": {"text": text}},
    }
    called = post(port, token, call, opened["session"] or "none")
    return {"initialize": opened, "call": called}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--steps", required=True)
    ns = parser.parse_args()
    results: dict[str, Any] = {"pid": os.getpid()}
    for name, source in json.loads(ns.steps):
        if source == "own":
            token = os.environ["HARNESS_MCP_TOKEN"]
        else:
            token = _token_of(source.split(":", 1)[1], ns.state)
        results[name] = _step(ns.port, token, name)
    tmp = Path(ns.out + ".tmp")
    tmp.write_text(json.dumps(results))
    tmp.rename(ns.out)
    time.sleep(600)


if __name__ == "__main__":
    main()
