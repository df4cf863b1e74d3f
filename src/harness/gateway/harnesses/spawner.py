"""Spawning agent harness processes with a fresh token and run id, and stopping them."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pykka

from harness.actors.asking import ask
from harness.actors.policy import ForgetToken, RegisterToken
from harness.config import Config, ConfigError, HarnessConfig, config_hash, parse_env_file
from harness.events import Attribution, Event, HarnessExited, HarnessSpawned, HarnessStateChanged
from harness.gateway.harnesses.adapters import Spawn, wire
from harness.gateway.harnesses.deathsig import dying_with_daemon
from harness.gateway.harnesses.subreaper import child_groups
from harness.gateway.harnesses.survivors import RunningRecord
from harness.gateway.processes import BoundedLog, minimal_env, signal_group, stop_group
from harness.gateway.supervision import Change, Supervisor
from harness.rules.routing import Identity
from harness.vocabulary import HarnessState

log = logging.getLogger("harness.daemon")

RESTART_DELAY_S = 1.0
"""A failed harness's first restart delay; it doubles per restart (the upstreams' default and policy)."""


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
    def state(self) -> HarnessState:
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


def bridge_command(bin_dir: str) -> str:
    """The ``harness`` command a client launches as its MCP server (an absolute path when found)."""
    path = Path(bin_dir) / "harness"
    return str(path) if path.exists() else "harness"


class HarnessSpawner:
    """Spawns harnesses; the token is registered with the policy actor before the process starts."""

    def __init__(
        self,
        *,
        config: Callable[[], Config],
        socket_path: Path,
        log_dir: Path,
        clients_dir: Path,
        policy: pykka.ActorRef[Any],
        emit: Callable[[Event], None],
        top_tools: Callable[[str, int], Awaitable[tuple[tuple[str, str], ...]]] | None = None,
        record: RunningRecord | None = None,
        scrub: Callable[[str], str] | None = None,
    ) -> None:
        """``record`` keeps the running harnesses in the state dir, for a daemon after a crash;
        ``scrub`` redacts the daemon's held secrets from what a harness prints before it is logged;
        ``config`` reads the running configuration."""
        self._config = config
        self._record = record
        self._scrub = scrub
        self._top_tools = top_tools
        self._respawn: Callable[[HarnessConfig], Awaitable[object]] = partial(self.start, keep_history=True)
        """The supervisor's restart: keeps the restart history."""
        self._socket = socket_path.absolute()
        self._log_dir = log_dir
        self._clients_dir = clients_dir
        self._bin_dir = harness_bin_dir()
        """Where the daemon's own ``harness`` command is (first on every harness's PATH)."""
        self._bridge = bridge_command(self._bin_dir)
        self._policy = policy
        self._emit = emit
        self.processes: dict[str, HarnessProcess] = {}
        self._watchers: set[asyncio.Task[None]] = set()
        self._supervisors: dict[str, Supervisor] = {}
        """Each harness's supervisor (the upstreams' shape and rules), made at its first start."""

    @property
    def config(self) -> Config:
        """The running configuration (read at each spawn: a reload applies from the next one)."""
        return self._config()

    def state_of(self, name: str) -> HarnessState:
        """Where the harness is (:data:`~harness.vocabulary.HarnessState`)."""
        proc = self.processes.get(name)
        supervisor = self._supervisors.get(name)
        if proc is not None and proc.running:
            return "running"
        if supervisor is not None and supervisor.restart_pending:
            return "restarting"
        if supervisor is not None and supervisor.status == "failed":
            return "failed"
        return "stopped" if proc is None else proc.state

    def _supervisor(self, name: str) -> Supervisor:
        """The harness's supervisor: it restarts a failed process with the configuration of then."""
        if (supervisor := self._supervisors.get(name)) is None:
            supervisor = Supervisor(
                restart=partial(self._restart, name),
                changed=partial(self._changed, name),
                delay=lambda: RESTART_DELAY_S,
            )
            self._supervisors[name] = supervisor
        return supervisor

    async def _restart(self, name: str) -> None:
        """The supervisor's restart, past its backoff: unless the harness left the configuration."""
        cfg = self.config.harnesses.get(name)
        if cfg is not None:
            await self._respawn(cfg)

    def _changed(self, name: str, change: Change) -> None:
        """A failed exit's outcome is ``harness.state_changed`` (its spawns and exits have events of
        their own)."""
        state = change.state
        if state.status not in ("restarting", "failed"):
            return
        proc = self.processes[name]
        self._emit(
            HarnessStateChanged(
                ts=time.time(),
                harness=name,
                run_id=proc.run_id,
                state="restarting" if state.status == "restarting" else "failed",
                restarts=state.attempt,
                delay_s=None if change.delay is None else round(change.delay, 3),
                returncode=proc.returncode,
            )
        )

    def running_pids(self) -> dict[int, str]:
        """Each running harness's pid (also its session id: it leads a session of its own)."""
        return {p.pid: name for name, p in self.processes.items() if p.running}

    def log_path(self, name: str) -> Path:
        """Where a harness's output goes (rolled over to ``<name>.log.1`` past 1 MiB)."""
        return self._log_dir / f"{name}.log"

    async def start(self, cfg: HarnessConfig, *, keep_history: bool = False) -> None:
        """:meth:`spawn`, or one line in the daemon's log saying why the harness cannot start."""
        where = f"harness.{cfg.name} in {', '.join(map(str, self.config.files)) or 'the configuration'}"
        if cfg.workdir is not None and not cfg.workdir.is_dir():
            log.error(
                "harness %s: not started: workdir %s is not a folder (%s)", cfg.name, cfg.workdir, where
            )
            return
        try:
            await self.spawn(cfg, keep_history=keep_history)
        except ConfigError as exc:
            log.error("harness %s: not started: env_file %s (%s)", cfg.name, exc, where)
        except OSError as exc:
            log.error(
                "harness %s: cannot start %s: %s (%s)", cfg.name, cfg.argv[0], exc.strerror or exc, where
            )

    async def spawn(self, cfg: HarnessConfig, *, keep_history: bool = False) -> HarnessProcess:
        """Start one harness process with its minimal environment plus the gateway wiring.

        A start from the operator or the facade forgets the restart history; the supervisor's own
        restarts (``keep_history``) keep it, so a harness that keeps failing ends ``failed``.
        """
        supervisor = self._supervisor(cfg.name)
        supervisor.call_off()
        if not keep_history:
            supervisor.reset("start")
        failed = self.processes.get(cfg.name) if keep_history else None
        token = secrets.token_urlsafe(32)
        run_id = uuid.uuid4().hex
        trace_id = secrets.token_hex(16)
        chash = config_hash(self.config, cfg.name)
        policy = self.config.policy_for(cfg.name)
        exposure = self.config.exposure_for(cfg.name)
        top: tuple[tuple[str, str], ...] = ()
        if policy is not None and exposure == "top_k" and self._top_tools is not None:
            top = await self._top_tools(cfg.name, policy.top_k)
        attribution = Attribution(
            harness=cfg.name, run_id=run_id, adapter=cfg.harness, model=cfg.model, config_hash=chash
        )
        identity = Identity(attribution, trace_id, "", frozenset(), top).under(self.config)
        own = parse_env_file(cfg.env_file) if cfg.env_file else {}
        env = minimal_env(own, path_first=self._bin_dir)
        env.update(
            HARNESS_MCP_TOKEN=token,
            HARNESS_SOCKET=str(self._socket),
            HARNESS_NAME=cfg.name,
            HARNESS_RUN_ID=run_id,
        )
        workdir = cfg.workdir or (self.config.files[0].parent if self.config.files else Path.cwd())
        log = BoundedLog(self.log_path(cfg.name), scrub=self._scrub)
        loop = asyncio.get_running_loop()
        try:  # from registering the token to the running process: a failure or a cancel forgets it
            await ask(self._policy, RegisterToken(token, identity))
            wiring = wire(Spawn(cfg, self._bridge, self._clients_dir / cfg.name, env, workdir))
            transport, protocol = await loop.subprocess_exec(
                lambda: _LoggedChild(log),
                *dying_with_daemon(wiring.argv, env, workdir),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=workdir,
                start_new_session=True,
            )
        except BaseException:  # cancelled included: asyncio killed the child it was making
            self._policy.tell(ForgetToken(token))
            log.close()
            raise
        proc = HarnessProcess(cfg.name, run_id, transport.get_pid(), token, time.time(), protocol, transport)
        self.processes[cfg.name] = proc
        if self._record is not None:
            self._record.add(cfg.name, proc.pid, run_id)
        supervisor.up()
        self._emit(
            HarnessSpawned(
                ts=time.time(),
                **attribution.fields(),
                pid=proc.pid,
                trace_id=trace_id,
                workdir=str(workdir),
                restarted_run_id=failed.run_id if failed is not None else None,
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
                returncode=proc.returncode,
            )
        )
        proc.transport.close()
        log.close()
        if self._record is not None:
            self._record.remove(proc.name, proc.pid)
        if proc.stop_requested or proc.returncode == 0 or self.processes.get(proc.name) is not proc:
            return
        self._supervisors[proc.name].exited()

    async def stop(self, names: list[str]) -> None:
        """Stop the named harnesses (SIGTERM to each group, SIGKILL after a grace period); a restart
        waiting out its backoff, or starting the process, is called off."""
        restarts = []
        for name in names:
            supervisor = self._supervisors.get(name)
            if supervisor is not None and (task := supervisor.call_off()) is not None:
                restarts.append(task)
                supervisor.stopped("stop")
                if (proc := self.processes.get(name)) is not None:
                    proc.stop_requested = True  # stopped while waiting out its backoff
        await asyncio.gather(*restarts, return_exceptions=True)  # a process one was starting is killed
        running = [p for n, p in self.processes.items() if n in names and p.running]
        for p in running:
            p.stop_requested = True
            self._supervisors[p.name].stopped("stop")
        await asyncio.gather(*(stop_group(p.pid, p.protocol.exited, term_after=0.0) for p in running))

    async def stop_all(self) -> None:
        """Stop every harness, then SIGKILL the groups that a leader which exited earlier left
        members of behind: the daemon adopted those (it is their subreaper), so each such group is
        one of its children's. No other group is signalled: an old leader's pid may since have
        become another process's, and its group another program's."""
        await self.stop(list(self.processes))
        left = child_groups(os.getpid())
        for p in self.processes.values():
            if p.pid in left:
                signal_group(p.pid, signal.SIGKILL)
