"""Helpers shared by every test layer (unit, acceptance, durability), importable as ``support``.

* :func:`wait_until` is the one bounded wait on a condition (``await_until`` is the same wait for
  code running inside an event loop, which must keep running while it waits); :func:`holds_for` is
  its complement, for claims that something does *not* happen within a bounded window.
* :func:`toml_list` writes a TOML array of strings.
* :func:`start_daemon_process` runs a real ``harness daemon`` and waits, bounded, for its ``ready``;
  :func:`running` writes a config, starts one and, at the end, stops it with everything under it
  (:func:`stop_daemon_process`). The one out-of-process daemon harness of every test folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import apsw
import psutil
import pytest

from devtools.spawned import toml_list  # one definition, shared with bench/ (tests import it from here)
from harness.rules.gateway_tools import FACADE_READ_TOOLS

T = TypeVar("T")
D = TypeVar("D", bound="DaemonProcess")

PY = sys.executable
TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
PROBE_AGENT = TESTS / "acceptance" / "probe_agent.py"
FAULTY_UPSTREAM = FIXTURES / "faulty_upstream.py"
DEMO_UPSTREAM = [PY, "-m", "harness.demo.upstream", "--test-tools"]
"""The SDK demo server with the test tools (sleep, crash, env_keys, a 60-character name, delete_note)."""

INTERVAL = 0.02


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the block (the test is skipped where mounting is
    not permitted): a real file system that fills up."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until its file system is full; return the file (delete it to free the space)."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        for chunk in (b"\0" * 65536, b"\0" * 4096):  # then the last pages
            with contextlib.suppress(OSError):
                while out.write(chunk):
                    pass
    return filler


def probe_argv(out: Path, *extra: str) -> list[str]:
    """A harness that connects with the official SDK client and writes what it saw to ``out``
    (tests/acceptance/probe_agent.py; ``extra`` are its options)."""
    return [PY, str(PROBE_AGENT), "--out", str(out), *extra]


def _describe(predicate: Callable[..., Any], timeout: float, message: str | None) -> str:
    what = message or getattr(predicate, "__name__", "condition")
    return f"{what}: not met within {timeout:g} s"


def wait_until(
    predicate: Callable[[], T], timeout: float = 10.0, interval: float = INTERVAL, message: str | None = None
) -> T:
    """Poll ``predicate`` until it returns something truthy and return that; AssertionError (saying
    ``message``) once ``timeout`` seconds passed. The predicate is always tried once more at the end."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_describe(predicate, timeout, message))
        time.sleep(interval)


async def await_until(
    predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.005, message: str | None = None
) -> T:
    """:func:`wait_until` inside a running event loop: the loop keeps running between the tries."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_describe(predicate, timeout, message))
        await asyncio.sleep(interval)


def holds_for(
    predicate: Callable[[], Any], duration: float, interval: float = INTERVAL, message: str | None = None
) -> None:
    """Check that ``predicate`` stays truthy for ``duration`` seconds (a claim that something does not
    happen needs a window to watch); AssertionError as soon as it is false."""
    deadline = time.monotonic() + duration
    while True:
        if not predicate():
            what = message or getattr(predicate, "__name__", "condition")
            raise AssertionError(f"{what}: stopped holding within {duration:g} s")
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)


def read_out(path: Path, timeout: float = 60.0) -> Any:
    """The JSON a probe agent writes (atomically, by rename) to ``path``, once it is there."""
    wait_until(path.exists, timeout=timeout, message=f"{path.name} written")
    return json.loads(path.read_text())


def steps(*items: dict[str, Any]) -> str:
    """A probe agent's ``--steps`` plan (see ``run_step`` in tests/acceptance/probe_agent.py)."""
    return json.dumps(list(items))


def free_port() -> int:
    """A loopback TCP port free at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any ``HARNESS_*`` variable (a test may run under a daemon)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(extra)
    return env


@dataclass
class DaemonProcess:
    """A real ``harness daemon``; its stderr is read on a thread (so it never blocks on a full pipe)."""

    proc: subprocess.Popen[bytes]
    config: Path
    state: Path
    stderr_lines: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    @property
    def db(self) -> Path:
        """The store."""
        return self.state / "harness.db"

    def harness_cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``harness ARGS`` against this daemon's state dir and config."""
        cmd = [PY, "-m", "harness", *args, "--state-dir", str(self.state), "--config", str(self.config)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=check)

    def calls(self) -> list[dict[str, Any]]:
        """``harness calls --json``, one dict a call."""
        out = self.harness_cli("calls", "--json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def descendants(self) -> list[psutil.Process]:
        """Every process under the daemon now."""
        with contextlib.suppress(psutil.Error):
            return psutil.Process(self.proc.pid).children(recursive=True)
        return []

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM (once) and its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close_pipes(self, timeout: float = 5.0) -> None:
        """After the process ended: wait (bounded) for the reader to see EOF and close the pipe. A
        process the daemon left behind may hold the pipe open; its reader then stays blocked."""
        if self.reader is not None:
            self.reader.join(timeout)


def _read_stderr(daemon: DaemonProcess) -> None:
    stream: IO[bytes] | None = daemon.proc.stderr
    assert stream is not None
    with contextlib.suppress(ValueError, OSError), stream:
        for raw in stream:
            line = raw.decode(errors="replace")
            daemon.stderr_lines.append(line)
            if line.strip() == "ready":
                daemon.ready.set()


def start_daemon_process(
    config: Path,
    state: Path,
    *,
    ready_within: float = 60.0,
    cwd: Path | None = None,
    kind: type[D] = DaemonProcess,  # type: ignore[assignment]
    env: dict[str, str] | None = None,
) -> D:
    """Start ``harness daemon --config CONFIG --state-dir STATE`` and wait (bounded) for ``ready``;
    ``kind`` is the :class:`DaemonProcess` subclass to return, ``env`` extra variables, ``cwd`` the
    daemon's working directory (a relative ``state`` is in it)."""
    proc = subprocess.Popen(
        [PY, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(state)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(**(env or {})),
        cwd=cwd,
    )
    daemon = kind(proc, config, cwd / state if cwd is not None and not state.is_absolute() else state)
    daemon.reader = threading.Thread(target=_read_stderr, args=(daemon,), daemon=True)
    daemon.reader.start()
    try:
        wait_until(
            lambda: daemon.ready.is_set() or proc.poll() is not None,
            timeout=ready_within,
            message="the daemon's ready line",
        )
        if not daemon.ready.is_set():
            daemon.reader.join(5)
            if not daemon.ready.is_set():
                raise AssertionError(f"daemon exited ({proc.returncode}) before ready: {daemon.stderr_lines}")
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        daemon.close_pipes()
        raise
    return daemon


def stop_daemon_process(daemon: DaemonProcess) -> None:
    """End a test's daemon and every process under it, then check the arguments it stored parse."""
    leftovers = daemon.descendants()
    with contextlib.suppress(Exception):
        daemon.stop()
    for process in leftovers:
        with contextlib.suppress(psutil.Error):
            process.kill()
    daemon.close_pipes()
    assert_stored_args_parse(daemon.db)


@contextlib.contextmanager
def running(
    folder: Path,
    config_text: str,
    *,
    state: Path | None = None,
    kind: type[D] = DaemonProcess,  # type: ignore[assignment]
    **start: Any,
) -> Iterator[D]:
    """A daemon on ``config_text`` (written to ``folder/harness.toml``; state in ``folder/state``
    unless given), stopped with everything under it at the end (:func:`stop_daemon_process`).
    ``start``: :func:`start_daemon_process`'s ``ready_within``, ``cwd``, ``env``."""
    config = folder / "harness.toml"
    config.write_text(config_text)
    daemon = start_daemon_process(
        config, state if state is not None else folder / "state", kind=kind, **start
    )
    try:
        yield daemon
    finally:
        stop_daemon_process(daemon)


FACADE_READ = tuple(t["name"] for t in FACADE_READ_TOOLS)
"""The facade tools every session lists (an unattributed or read-only one too), in listing order."""


def process_env(pid: int) -> dict[str, str]:
    """A live process's environment, read from ``/proc`` (never from a configuration)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def process_argv(pid: int) -> list[str]:
    """A live process's argv, read from ``/proc``."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]


def http_upstream(mode: str, port: int = 0, json_response: bool = False) -> tuple[subprocess.Popen[str], int]:
    """tests/fixtures/faulty_http_upstream.py started in ``mode``, and the port it serves on."""
    argv = [PY, str(FIXTURES / "faulty_http_upstream.py"), "--mode", mode, "--port", str(port)]
    if json_response:
        argv.append("--json-response")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    return proc, int(line.split()[1])


def bridge_params(env: dict[str, str]) -> Any:
    """How an SDK client launches ``harness mcp`` with ``env`` (a harness's token and socket)."""
    from mcp import StdioServerParameters

    return StdioServerParameters(command=PY, args=["-m", "harness", "mcp"], env=env)


@contextlib.asynccontextmanager
async def clients_of_both_eras(
    envs: dict[str, dict[str, str]], elicitation: Callable[[str], Any]
) -> AsyncIterator[tuple[Any, Any]]:
    """SDK clients over ``harness mcp``: harness ``new`` speaking 2026-07-28, harness ``legacy`` the
    handshake era, each answering elicitations with ``elicitation(its name)``."""
    from mcp import Client

    async with (
        Client(bridge_params(envs["new"]), cache=None, elicitation_callback=elicitation("new")) as new,
        Client(
            bridge_params(envs["legacy"]),
            mode="legacy",
            cache=None,
            elicitation_callback=elicitation("legacy"),
        ) as legacy,
    ):
        yield new, legacy


NPM_BIN = TESTS / "npm" / "node_modules" / ".bin"
"""The real npm MCP servers and agent CLIs (``npm install --prefix tests/npm``; .ci/run does it)."""


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
"""A raw ``initialize`` request (for tests that speak HTTP or JSON-RPC by hand)."""


EVERYTHING = NPM_BIN / "mcp-server-everything"
"""The reference server `@modelcontextprotocol/server-everything` (tools, prompts, resources, logging,
elicitation)."""


def everything_upstream(read_all: bool = True) -> str:
    """An ``[mcp.everything]`` table running it (every tool read-tier unless ``read_all`` is False)."""
    return (
        f'[mcp.everything]\nargv = ["{EVERYTHING}"]\n' + ('read_tools = ["*"]\n' if read_all else "") + "\n"
    )


needs_everything = pytest.mark.skipif(not EVERYTHING.exists(), reason="npm install --prefix tests/npm")


EVERYTHING_SERVER = FIXTURES / "python-sdk-everything-server"
"""The python-sdk conformance everything server (mcp 2.3: it speaks both eras), vendored."""


@contextlib.contextmanager
def python_everything_server(transport: str, folder: Path) -> Iterator[str]:
    """Where the python-sdk everything server (a dual-era mcp 2.3 server) is reached on
    ``transport``, as lines of an ``[mcp.everything]`` table (``argv`` or ``url``); over HTTP the
    server runs (from the vendored source, on this venv's mcp) for the block, logging to
    ``folder``."""
    if transport == "stdio":
        yield f"argv = {toml_list([PY, str(EVERYTHING_SERVER / 'stdio.py')])}\n"
        return
    port = free_port()
    argv = [PY, "-m", "mcp_everything_server", "--port", str(port), "--log-level", "WARNING"]
    with (folder / "everything-server.log").open("wb") as log:
        proc = subprocess.Popen(
            argv, env=clean_env(PYTHONPATH=str(EVERYTHING_SERVER)), stdout=log, stderr=log, cwd=folder
        )
    try:
        wait_until(
            lambda: proc.poll() is not None or _accepts(port), timeout=30, message="the server listens"
        )
        assert proc.poll() is None, (folder / "everything-server.log").read_text()
        yield f'url = "http://127.0.0.1:{port}/mcp"\n'
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def idle_harnesses(policies: dict[str, str]) -> str:
    """``[harness.NAME]`` tables of agents that only wait (the test connects with their tokens), by
    name → policy."""
    return "".join(
        f'[harness.{n}]\nargv = ["sleep", "600"]\nmcp_policy = "{p}"\n\n' for n, p in policies.items()
    )


def assert_stored_args_parse(db: Path) -> None:
    """Every ``args`` a test's store holds is JSON (cut arguments included)."""
    if not db.exists():
        return
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = list(
            conn.execute("SELECT position, data ->> 'args' FROM events WHERE name = 'tool_call.completed'")
        )
    except apsw.Error:  # a test that left no store, or not one
        rows = []
    finally:
        conn.close()
    for position, args in rows:
        if args is not None:
            try:
                json.loads(args)
            except ValueError as exc:
                raise AssertionError(f"{db}: the args of event {position} are not JSON: {exc}") from exc
