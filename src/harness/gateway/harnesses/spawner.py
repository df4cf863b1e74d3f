"""Spawning agent harness processes with a fresh token and run id, and stopping them."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pykka

from harness.actors.policy import ForgetToken, RegisterToken
from harness.config import Config, HarnessConfig, config_hash, parse_env_file
from harness.events import Attribution, Event, HarnessExited, HarnessSpawned
from harness.gateway.actor_bridge import ask
from harness.gateway.processes import BoundedLog, minimal_env, signal_group, stop_group
from harness.rules.routing import Identity


class _LoggedChild(asyncio.SubprocessProtocol):
    """Copies a child's stdout and stderr into one bounded log; sets ``exited`` when it ends."""

    def __init__(self, log: BoundedLog) -> None:
        self.log = log
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.log.write(data)

    def process_exited(self) -> None:
        self.exited.set()


@dataclass
class HarnessProcess:
    """One spawn of a harness."""

    name: str
    run_id: str
    pid: int
    token: str = field(repr=False)
    started: float
    protocol: _LoggedChild = field(repr=False)
    transport: asyncio.SubprocessTransport = field(repr=False)
    stop_requested: bool = False
    """The daemon stopped it (``harness stop``, a restart, a reload, shutdown)."""

    @property
    def running(self) -> bool:
        """True until the process exits."""
        return not self.protocol.exited.is_set()

    @property
    def state(self) -> str:
        """``running``, ``stopped`` (by the daemon) or ``exited`` (on its own)."""
        if self.running:
            return "running"
        return "stopped" if self.stop_requested else "exited"

    @property
    def returncode(self) -> int | None:
        """Its exit status once it exited (negative: the signal that ended it)."""
        return self.transport.get_returncode()


def harness_bin_dir() -> str:
    """The folder of the running daemon's own ``harness`` command (beside its interpreter, as in a
    venv), put first on a spawned harness's PATH; else the first ``harness`` on PATH."""
    own = Path(sys.executable).parent
    if (own / "harness").exists():
        return str(own)
    found = shutil.which("harness")
    return str(Path(found).parent) if found else str(own)


class HarnessSpawner:
    """Spawns harnesses; the token is registered with the policy actor before the process starts."""

    def __init__(
        self,
        *,
        config: Config,
        socket_path: Path,
        log_dir: Path,
        policy: pykka.ActorRef[Any],
        emit: Callable[[Event], None],
        top_tools: Callable[[str, int], Awaitable[tuple[tuple[str, str], ...]]] | None = None,
    ) -> None:
        self.config = config
        self._top_tools = top_tools
        self._socket = socket_path.absolute()
        self._log_dir = log_dir
        self._policy = policy
        self._emit = emit
        self.processes: dict[str, HarnessProcess] = {}
        self._watchers: set[asyncio.Task[None]] = set()

    def running_pids(self) -> dict[int, str]:
        """Each running harness's pid (also its session id: it leads a session of its own)."""
        return {p.pid: name for name, p in self.processes.items() if p.running}

    def log_path(self, name: str) -> Path:
        """Where a harness's output goes (rolled over to ``<name>.log.1`` past 1 MiB)."""
        return self._log_dir / f"{name}.log"

    async def spawn(self, cfg: HarnessConfig) -> HarnessProcess:
        """Start one harness process with its minimal environment plus the gateway wiring."""
        token = secrets.token_urlsafe(32)
        run_id = uuid.uuid4().hex
        trace_id = secrets.token_hex(16)
        chash = config_hash(self.config, cfg.name)
        policy = self.config.policy_for(cfg.name)
        top: tuple[tuple[str, str], ...] = ()
        if policy is not None and policy.exposure == "top_k" and self._top_tools is not None:
            top = await self._top_tools(cfg.name, policy.top_k)
        attribution = Attribution(
            harness=cfg.name, run_id=run_id, adapter=cfg.harness, model=cfg.model, config_hash=chash
        )
        identity = Identity(
            attribution=attribution,
            trace_id=trace_id,
            policy=policy.name if policy else "",
            allow=frozenset(cfg.mcp_allow),
            top_tools=top,
        )
        await ask(self._policy, RegisterToken(token, identity))
        own = parse_env_file(cfg.env_file) if cfg.env_file else {}
        env = minimal_env(own, path_first=harness_bin_dir())
        env.update(
            HARNESS_MCP_TOKEN=token,
            HARNESS_SOCKET=str(self._socket),
            HARNESS_NAME=cfg.name,
            HARNESS_RUN_ID=run_id,
        )
        workdir = cfg.workdir or (self.config.files[0].parent if self.config.files else Path.cwd())
        log = BoundedLog(self.log_path(cfg.name))
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _LoggedChild(log),
                *cfg.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=workdir,
                start_new_session=True,
            )
        except OSError:
            self._policy.tell(ForgetToken(token))
            log.close()
            raise
        proc = HarnessProcess(cfg.name, run_id, transport.get_pid(), token, time.time(), protocol, transport)
        self.processes[cfg.name] = proc
        self._emit(
            HarnessSpawned(
                ts=time.time(),
                **attribution.fields(),
                pid=proc.pid,
                trace_id=trace_id,
                workdir=str(workdir),
            )
        )
        self._watchers.add(task := loop.create_task(self._watch(proc, log)))
        task.add_done_callback(self._watchers.discard)
        return proc

    async def _watch(self, proc: HarnessProcess, log: BoundedLog) -> None:
        await proc.protocol.exited.wait()
        self._emit(  # the policy actor hears it from the bus and forgets the run's token
            HarnessExited(
                ts=time.time(),
                harness=proc.name,
                run_id=proc.run_id,
                pid=proc.pid,
                returncode=proc.transport.get_returncode(),
            )
        )
        proc.transport.close()
        log.close()

    async def stop(self, names: list[str]) -> None:
        """Stop the named harnesses (SIGTERM to each group, SIGKILL after a grace period)."""
        running = [p for n, p in self.processes.items() if n in names and p.running]
        for p in running:
            p.stop_requested = True
        await asyncio.gather(*(stop_group(p.pid, p.protocol.exited, term_after=0.0) for p in running))

    async def stop_all(self) -> None:
        """Stop every harness, then SIGKILL each group: a leader that exited earlier may have left
        members of its group behind."""
        await self.stop(list(self.processes))
        for p in self.processes.values():
            signal_group(p.pid, signal.SIGKILL)
