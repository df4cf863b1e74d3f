"""The daemon: the composition root. It builds the parts (actors, the upstream directory, the
listeners, the harness spawner), wires them (the bus: :mod:`harness.gateway.wiring`), and runs
start, reload (:mod:`harness.gateway.reload`) and a clean stop in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pykka

from harness import __version__
from harness.actors.asking import Barrier, ask, ask_from_thread
from harness.actors.bus import EventBus
from harness.actors.intake import EventIntake, intake_capacity
from harness.actors.log_stall import LogHealth
from harness.actors.log_writer import LogWriterActor, WaitFlushed
from harness.actors.policy import PolicyActor
from harness.actors.snapshots import Published
from harness.config import Config, default_config_path
from harness.events import DaemonStarted, DaemonStopped, Event
from harness.gateway.control_plane import ControlPlane
from harness.gateway.downstream.control_socket import ControlSocket
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.evidence.metrics import CALL_LOG_DROPPED, MetricsListener, follow_upstream_events
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.evidence.status_source import StatusPage
from harness.gateway.evidence.telemetry import TelemetrySwitch
from harness.gateway.facade import GatewayTools, read_libraries
from harness.gateway.harnesses.spawner import HarnessSpawner
from harness.gateway.harnesses.subreaper import OrphanReaper, adopt_orphans
from harness.gateway.harnesses.survivors import RunningRecord, stop_survivors, survivor_line
from harness.gateway.heap import settle_heap
from harness.gateway.listeners import Listeners, must_listen
from harness.gateway.reload import Reload, approved
from harness.gateway.retention import keep_retention
from harness.gateway.running_config import ConfigHolder
from harness.gateway.sessions import SessionRoster
from harness.gateway.state_dir import DaemonLock, StatePaths
from harness.gateway.store_reader import StoreReader
from harness.gateway.upstream.directory import UpstreamDirectory
from harness.gateway.wiring import connect
from harness.rules.routing import EMPTY_SNAPSHOT, Identity, RoutingSnapshot
from harness.rules.scope import exposed_upstreams
from harness.store.schema import check_usable

log = logging.getLogger("harness.daemon")


class Daemon:
    """One gateway daemon serving one state dir."""

    def __init__(self, config: Config, state_dir: Path, config_path: Path | None = None) -> None:
        self.paths = StatePaths(state_dir.absolute())
        self.holder = ConfigHolder(*approved(config, self.paths.root))
        self.config_path = config_path
        self.intake = EventIntake(intake_capacity(), on_drop=CALL_LOG_DROPPED.inc)
        self.log_health = LogHealth(self.intake.__len__, lambda: self.intake.dropped)
        self.bus = EventBus(self.intake.emit)
        self.telemetry = TelemetrySwitch()
        self.routing: Published[RoutingSnapshot] = Published(EMPTY_SNAPSHOT)
        self.recorder = CallRecorder(self.emit, settings=self.holder)
        self._writer: pykka.ActorRef[Any] | None = None
        self._policy: pykka.ActorRef[Any] | None = None
        self._spawner: HarnessSpawner | None = None
        self._server: asyncio.AbstractServer | None = None
        self._orphans: OrphanReaper | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = asyncio.Event()
        self._stop_reason = ""
        self.reader = StoreReader(self.paths.db)
        self._background: set[asyncio.Task[None]] = set()
        self._reloading = asyncio.Lock()
        self.directory = UpstreamDirectory(
            config=lambda: self.config,
            log_dir=self.paths.upstream_logs,
            emit=self.emit,
            scrub=self._scrub,
            kept_catalogue=self.reader.latest_catalogue,
            background=self._in_background,
        )
        self.upstreams = self.directory.shared
        self.unshared = self.directory.unshared
        self.twins = self.directory.twins.twins
        self.control = ControlPlane(self)
        self.own_tools = GatewayTools(read_libraries(config), self.control, self.reader, self.exposed)
        self.roster = SessionRoster(
            routing=self.routing,
            upstreams=self.directory,
            recorder=self.recorder,
            emit=self.emit,
            reader=self.reader,
            own=self.own_tools,
        )
        self.sessions = self.roster.live
        self.directory.hooks = self.roster.link_hooks()
        self.listeners = Listeners(
            MetricsListener(StatusPage(lambda: self._loop, self.control.status, self.paths.db, self._scrub)),
            self.roster.http_session,
            lambda: self.routing.current.identities,
            lambda: self._spawner.running_pids() if self._spawner else {},
        )

    @property
    def config(self) -> Config:
        """The running configuration (its one holder: :attr:`holder`)."""
        return self.holder.current.config

    @property
    def unapproved(self) -> tuple[Path, ...]:
        """Project files whose upstreams do not run: not approved as they are now."""
        return self.holder.current.unapproved

    @property
    def known(self) -> KnownSecrets:
        """The secret values the daemon holds for upstreams (rebuilt on reload)."""
        return self.holder.current.known

    def _scrub(self, value: Any) -> Any:
        """``value`` with the held secrets redacted, by the current configuration's (reload-proof)."""
        return self.known.scrub(value)

    def exposed(self, identity: Identity) -> frozenset[str]:
        """The keys of the upstreams ``identity``'s policy exposes now."""
        return exposed_upstreams(self.routing.current, self.config, identity)

    @property
    def spawner(self) -> HarnessSpawner | None:
        """Starts and stops harness processes (None until the daemon is ready)."""
        return self._spawner

    def emit(self, event: Event) -> None:
        """Publish an event: the log, then every subscriber of its type (never blocks)."""
        self.bus.publish(event)

    def _catalogue_fetched(self, _event: Event) -> None:
        """A catalogue goes into the tool index: have the search's snapshot of it made once the
        writer has committed it, before an agent searches."""
        writer = self._writer
        if writer is not None:
            self.reader.warm_search(lambda: ask_from_thread(writer, WaitFlushed(), timeout=30))

    async def restart_harness(self, name: str) -> None:
        """Stop a harness and spawn it again with a fresh token and run."""
        assert self._spawner is not None
        await self._spawner.stop([name])
        await self._spawner.start(self.config.harnesses[name])

    async def run(self, ready: Any = None) -> int:
        """Serve until SIGTERM/SIGINT; return the exit code."""
        self._loop = asyncio.get_running_loop()
        self.roster.serve_on(self._loop)
        lock = DaemonLock(self.paths)
        lock.acquire()
        try:
            await self._start()
            if ready is not None:
                ready()
            else:  # the daemon's own process (``harness daemon``)
                settle_heap()
                print("ready", file=sys.stderr, flush=True)
            await self._stop.wait()
        finally:
            await self._shutdown()
            lock.release()
        return 0

    async def _start(self) -> None:
        config = self.config
        if not config.files:
            log.warning(
                "no configuration file (looked for %s): running with no upstreams and no harnesses; "
                "give --config FILE",
                self.config_path or default_config_path(),
            )
        await asyncio.to_thread(check_usable, self.paths.db)  # a damaged or newer store: one line
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig.name)
        loop.add_signal_handler(signal.SIGHUP, lambda: self._in_background(self._reload_quietly()))
        self._writer = writer = LogWriterActor.start(self.paths.db, self.intake, health=self.log_health)
        self.intake.attach(writer)
        self._policy = self.directory.policy = PolicyActor.start(config, self.routing, self.roster.published)
        connect(
            self.bus,
            {
                "metrics": follow_upstream_events,
                "telemetry": self.telemetry,
                "policy": self._policy,
                "unshared upstreams": self.directory.harness_exited,
                "search": self._catalogue_fetched,
            },
        )
        files = tuple(map(str, config.files))
        self.emit(DaemonStarted(ts=time.time(), pid=os.getpid(), version=__version__, config_files=files))
        running = RunningRecord(self.paths.running)  # a crashed daemon's harnesses: stopped first
        for stopped in await asyncio.to_thread(stop_survivors, running):
            log.warning("%s", survivor_line(stopped))
            self.emit(stopped)
        for key, why in (await self.directory.start(config)).items():
            log.warning("upstream %s: %s; ready without it (its tools join when it answers)", key, why)
        # Barrier: the policy actor and the store (tool index) have every catalogue fetched so far.
        await ask(self._policy, Barrier())
        await asyncio.wait_for(ask(writer, WaitFlushed()), 30)
        must_listen(self.listeners.serve_metrics(config.mcp))
        await self.telemetry.apply(config.mcp.export_telemetry)
        self._orphans = adopt_orphans()  # before harnesses start: their orphans stay in our tree
        self._server = await ControlSocket(  # bridges and the CLI, attributed and capped
            new_session=self.roster.new_session,
            on_session=self.sessions.add,
            control=self.control.answer,
            identities=lambda: self.routing.current.identities,
            exposed=self.exposed,
            harness_pids=lambda: self._spawner.running_pids() if self._spawner else {},
        ).serve(self.paths.socket)
        must_listen(await self.listeners.serve_http(config.mcp))
        self._spawner = HarnessSpawner(
            config=lambda: self.config,
            socket_path=self.paths.socket,
            log_dir=self.paths.harness_logs,
            clients_dir=self.paths.clients,
            policy=self._policy,
            emit=self.emit,
            top_tools=self.reader.top_tools,
            record=running,
            scrub=self._scrub,
        )
        for cfg in config.harnesses.values():
            if cfg.autostart:
                await self._spawner.start(cfg)
        self._in_background(keep_retention(writer, lambda: self.config.mcp.call_log_days))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """``work`` as a task the daemon's stop cancels."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _reload_quietly(self) -> None:
        with contextlib.suppress(Exception):  # reload() already said why; the running configuration stays
            await self.reload()

    async def reload(self) -> dict[str, Any]:
        """Re-read the configuration (:mod:`harness.gateway.reload`); a bad one is refused and the
        running one stays."""
        policy, spawner = self._policy, self._spawner
        assert policy is not None and spawner is not None
        async with self._reloading:
            parts = (self.holder, self.listeners, self.own_tools, self.directory, spawner, self.telemetry)
            return await Reload(self.config_path, self.paths.root, *parts, policy, self.emit).run()

    def request_stop(self, reason: str = "requested") -> None:
        """Begin a clean stop."""
        self._stop_reason = reason
        self._stop.set()

    async def _shutdown(self) -> None:
        started = time.perf_counter()
        try:
            await self._stop_children()
        finally:  # even when stopping failed: the subreaper is not left on
            if self._orphans is not None:  # every child stopped: reap the orphans they left
                await self._orphans.finish()
        log.debug("children stopped after %.3fs", time.perf_counter() - started)
        self.listeners.metrics.close()
        await self.telemetry.stop()  # every call so far has its span sent
        self.emit(DaemonStopped(ts=time.time(), reason=self._stop_reason or "stopped"))
        if self._policy is not None:
            self._policy.stop()
        await asyncio.to_thread(self.reader.close)
        if self._writer is not None:
            await asyncio.to_thread(self._writer.stop)
        log.debug("log flushed after %.3fs", time.perf_counter() - started)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(sig)

    async def _stop_children(self) -> None:
        """Close the endpoints and sessions, then stop every harness and upstream."""
        for task in list(self._background):
            task.cancel()
        if self._server is not None:
            self._server.close()
        await self.listeners.close_http()
        self.roster.close_all("daemon stopping")
        if self._spawner is not None:
            await self._spawner.stop_all()
        await self.directory.stop_all()
