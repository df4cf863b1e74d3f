"""A harness that uses the loopback HTTP endpoint by hand, as the trial's thief did: each step
initializes a session with a token and calls ``demo__echo``; statuses and bodies go to --out (JSON),
then it sleeps (its harness keeps running).

Steps (``--steps``, a JSON list of [name, source]): source ``own`` is this harness's
HARNESS_MCP_TOKEN; ``stolen:NAME`` is harness NAME's, read from a /proc environ (waited for).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # run as a harness: devtools/ from the repository
from devtools.http_fuzz import post


def _token_of(name: str) -> str:
    """Harness NAME's token, from the environment of a process of this uid that holds it under this
    daemon's socket (the attacker's way: ``harness list`` shows a read-only harness no sibling),
    waited for."""
    deadline = time.monotonic() + 60
    socket = os.environ["HARNESS_SOCKET"].encode()
    while time.monotonic() < deadline:
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                env = dict(e.split(b"=", 1) for e in environ.read_bytes().split(b"\0") if b"=" in e)
            except OSError:
                continue
            if env.get(b"HARNESS_NAME") == name.encode() and env.get(b"HARNESS_SOCKET") == socket:
                return env[b"HARNESS_MCP_TOKEN"].decode()
        time.sleep(0.1)
    raise SystemExit(f"no process holds harness {name}'s token")


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
            token = _token_of(source.split(":", 1)[1])
        results[name] = _step(ns.port, token, name)
    tmp = Path(ns.out + ".tmp")
    tmp.write_text(json.dumps(results))
    tmp.rename(ns.out)
    time.sleep(600)


if __name__ == "__main__":
    main()
