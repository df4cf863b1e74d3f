"""``harness demo``: a daemon on a built-in configuration, two agents, the calls shown as they land."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.cli.common import CliError, Globals, control_request
from harness.cli.formatting import format_call
from harness.gateway.state_dir import StatePaths
from harness.reading import open_store

READY_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 120.0


def demo_config(calls: int) -> str:
    """The demo's harness.toml: one upstream, one policy, two agents (one may write)."""
    py = shlex.quote(sys.executable).replace("'", "")
    agent = f'["{py}", "-m", "harness.demo.agent", "--calls", "{calls}", "--pause", "0.5"]'
    return f"""\
# The Harness demo configuration (written by `harness demo`).
[mcp]
default_policy = "demo"

[mcp.demo]                      # one upstream MCP server, started once for every agent
argv = ["{py}", "-m", "harness.demo.upstream"]

[mcp_policy.demo]
servers = ["demo"]

[harness.alice]                 # may call read and write tools
argv = {agent}
mcp_allow = ["read", "write"]
model = "demo-model"

[harness.bob]                   # read-only: write_note is not listed, and a try is refused (not_permitted)
argv = {agent}
model = "demo-model"
"""


def _harness_command() -> str:
    """``harness`` when that name runs this installation, else the path of this one's command."""
    own = Path(sys.executable).parent / "harness"
    found = shutil.which("harness")
    if found and own.exists() and Path(found).resolve() != own.resolve():
        return shlex.quote(str(own))
    if not found and own.exists():
        return shlex.quote(str(own))
    return "harness"


def _wait_ready(daemon: subprocess.Popen[bytes]) -> None:
    assert daemon.stderr is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = daemon.stderr.readline()
        if not line:
            raise CliError("the demo daemon exited before it was ready")
        if line.strip() == b"ready":
            return
        sys.stderr.write(line.decode(errors="replace"))
    raise CliError("the demo daemon did not become ready in time")


def _agents_done(paths: StatePaths) -> bool:
    try:
        rows = control_request(paths, "list")
    except CliError:
        return True
    return all(r["state"] != "running" for r in rows)


def run_demo(calls: int = 5, state_dir: Path | None = None) -> int:
    """Run the demo end to end; the state dir is kept so the call log can be read afterwards.

    With ``state_dir`` the daemon's state (store, socket, logs) goes there and the demo's
    configuration beside it; else both go into a new temporary folder.
    """
    if state_dir is not None:
        paths = StatePaths(state_dir.absolute())
        config = paths.root.parent / f"{paths.root.name}-demo.toml"
    else:
        root = Path(tempfile.mkdtemp(prefix="harness-demo-"))
        paths = StatePaths(root / "state")
        config = root / "harness.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(demo_config(calls))
    print(f"Harness demo: config {config}\n")
    print("Starting the daemon: one `demo` upstream process, two agents (alice, bob) each connected")
    print("through its own `harness mcp` bridge with its own token. alice may write; bob is read-only,")
    print("so his write_note is refused with not_permitted. Calls as they land in the call log:\n")
    cmd = [sys.executable, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(paths.root)]
    daemon = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_ready(daemon)
        shown, denied = _follow(paths)
    finally:
        daemon.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.wait(15)
        if daemon.poll() is None:
            daemon.kill()
    state = shlex.quote(str(paths.root))
    harness = _harness_command()
    refused = f" ({denied} refused by policy)" if denied else ""
    print(
        f"\n{shown} calls recorded{refused}; the daemon stopped and took its upstream and agents with it.\n"
    )
    print("Where to look next:")
    print(f"  {harness} calls --state-dir {state}            # the call log")
    print(f"  {harness} calls --state-dir {state} --json     # as JSON lines, one per call")
    print(f"  {harness} runs --state-dir {state}             # one line per agent run")
    print(f"  sqlite3 {shlex.quote(str(paths.db))} 'select * from call_log'")
    print(f"  {harness} tools --harness bob --config {shlex.quote(str(config))} --state-dir {state}")
    print(f"  {shlex.quote(str(paths.harness_logs))}/   # what each agent printed")
    print(f"  {config}      # the configuration; `harness daemon --config` runs it for real")
    return 0 if shown else 1


def _follow(paths: StatePaths) -> tuple[int, int]:
    """Print each call as it lands until the agents are done; the calls shown, and how many were
    denied."""
    last = 0
    shown = denied = 0
    quiet_since: float | None = None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    view = None
    while time.monotonic() < deadline:
        if view is None and paths.db.exists():
            view = open_store(paths.db)
        rows = view.calls(after_position=last) if view is not None else []
        for row in rows:
            print("  " + format_call(row), flush=True)
            last = row["position"]
            shown += 1
            denied += row["outcome"] == "denied"
        if rows:
            quiet_since = None
        elif _agents_done(paths):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 1.0:
                break
        time.sleep(0.2)
    if view is not None:
        view.close()
    return shown, denied


def command(ns: argparse.Namespace, g: Globals) -> int:
    """``harness demo``: with ``--state-dir``, the demo's daemon keeps its state there."""
    return run_demo(calls=ns.calls, state_dir=g.state_dir if g.state_dir_given else None)
