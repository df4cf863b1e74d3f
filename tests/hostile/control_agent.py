"""A harness that drives the control plane through the real `harness` command on its PATH, as the
trial's attacker did: each step is a command line, its exit code and output go to --out (JSON).

Steps (``--steps``, JSON list of [name, argv]) run with the harness's own environment. Special
steps: ``["stolen:NAME", argv]`` runs with the token of harness NAME read from a /proc environ; ``["no-token", argv]`` runs without HARNESS_MCP_TOKEN;
``["orphan", argv]`` runs in a grandchild that left this process's session and was orphaned
(setsid plus a double fork, like ``setsid -f``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _run(argv: list[str], env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def _token_of(name: str) -> str:
    """Harness NAME's token, from the environment of a process of this uid that holds it (the
    attacker's way: ``harness list`` shows a read-only harness no sibling's pid)."""
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            env = dict(e.split(b"=", 1) for e in environ.read_bytes().split(b"\0") if b"=" in e)
        except OSError:
            continue
        if env.get(b"HARNESS_NAME") == name.encode() and b"HARNESS_MCP_TOKEN" in env:
            return env[b"HARNESS_MCP_TOKEN"].decode()
    raise SystemExit(f"no process holds harness {name}'s token")


def _orphan(argv: list[str], env: dict[str, str], out: Path) -> dict[str, object]:
    first_parent = os.getpid()
    if (pid := os.fork()) == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)  # the grandchild is orphaned
        deadline = time.monotonic() + 10
        while os.getppid() == first_parent and time.monotonic() < deadline:
            time.sleep(0.01)
        result = {**_run(argv, env), "parent": os.getppid()}
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(result))
        tmp.replace(out)
        os._exit(0)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 60
    while not out.exists():
        if time.monotonic() > deadline:
            return {"rc": None, "stdout": "", "stderr": "the orphan did not report"}
        time.sleep(0.02)
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--steps", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    results: dict[str, object] = {}
    for name, argv in json.loads(args.steps):
        env = dict(os.environ)
        if name.startswith("stolen:"):
            env["HARNESS_MCP_TOKEN"] = _token_of(name.split(":", 1)[1])
        if name in ("no-token", "orphan"):
            env.pop("HARNESS_MCP_TOKEN", None)
        if name == "orphan":
            results[name] = _orphan(argv, env, out.with_name(out.name + ".orphan"))
        else:
            results[name] = _run(argv, env)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(results))
    tmp.replace(out)
    sys.stdout.flush()
    time.sleep(3600)


if __name__ == "__main__":
    main()
