"""The daemon: actors, upstream links, the control socket, harness processes, and a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
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
from harness.actors.asking import Barrier
from harness.actors.breaker import BreakerActor
from harness.actors.bus import EventBus
from harness.actors.log_stall import LogHealth
from harness.actors.log_writer import Compact, EventIntake, LogWriterActor, intake_capacity
from harness.actors.policy import ApplyConfig, PolicyActor
from harness.actors.snapshots import Published
from harness.actors.upstream import UpstreamActor
from harness.config import (
    Config,
    ConfigError,
    HarnessConfig,
    UpstreamConfig,
    default_config_path,
    load_config,
)
from harness.config.approvals import approved_only, read_approvals, unapproved_hint
from harness.events import (
    ConfigReloaded,
    DaemonStarted,
    DaemonStopped,
    Event,
    HarnessExited,
    ToolCallCompleted,
    ToolCatalogFetched,
)
from harness.gateway.actor_bridge import ask
from harness.gateway.control_plane import ControlPlane
from harness.gateway.downstream.connection import session_opened_event
from harness.gateway.downstream.control_socket import ControlSocket
from harness.gateway.downstream.features import ServerFeatures
from harness.gateway.downstream.log_relay import LogRelay
from harness.gateway.downstream.resource_proxy import Subscriptions
from harness.gateway.downstream.session import DownstreamSession, PolicyPublished
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.gateway.evidence.metrics import (
    CALL_LOG_DROPPED,
    TOOL_SCHEMA_BYTES,
    UPSTREAM_EVENTS,
    MetricsListener,
    follow_upstream_events,
)
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.evidence.status_source import StatusPage
from harness.gateway.evidence.telemetry import TelemetryExport
from harness.gateway.facade import GatewayTools, read_libraries
from harness.gateway.harnesses.spawner import HarnessSpawner
from harness.gateway.harnesses.subreaper import OrphanReaper, adopt_orphans
from harness.gateway.harnesses.survivors import RunningRecord, stop_survivors
from harness.gateway.listeners import Listeners, must_listen
from harness.gateway.processes import BoundedLog
from harness.gateway.state_dir import DaemonLock, StatePaths
from harness.gateway.store_reader import StoreReader
from harness.gateway.upstream.admission import BreakerGate
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.upstream.supervised import StopsUnderWay, SupervisedUpstream, wait_first_attempts
from harness.gateway.upstream.transports import connector
from harness.gateway.upstream.unshared import UnsharedUpstreams
from harness.gateway.wire import jsonrpc
from harness.rules.breaker import CLOSED
from harness.rules.exposure import Route
from harness.rules.routing import EMPTY_SNAPSHOT, Identity, RoutingSnapshot
from harness.rules.scope import exposed_upstreams
from harness.store.schema import check_usable

log = logging.getLogger("harness.daemon")

RETENTION_INTERVAL_S = 3600.0


def settle_heap() -> None:
    """Collect once, then move what is alive into the permanent generation: what start made
    (modules, config, catalogues, the SDK's types) lives as long as the daemon, and a full collection
    walking it costs ~40 ms on a 2-core VM, a pause that every call in flight would wait out. Only
    objects made later are collected from now on."""
    gc.collect()
    gc.freeze()


def resettle_heap() -> None:
    """After a reload: what the old configuration held may be garbage now, reference cycles included,
    which frozen objects never are collected as. Unfreeze, collect all, freeze again (one full
    collection, a pause of tens of ms; a reload is rare). Nothing to do if the heap was never frozen."""
    if gc.get_freeze_count():
        gc.unfreeze()
        settle_heap()


class Daemon:
    """One gateway daemon serving one state dir."""

    def __init__(self, config: Config, state_dir: Path, config_path: Path | None = None) -> None:
        self.paths = StatePaths(state_dir.absolute())
        self.config, self.unapproved = self._approved(config)
        self.config_path = config_path
        self.intake = EventIntake(intake_capacity(), on_drop=CALL_LOG_DROPPED.inc)
        self.log_health = LogHealth(self.intake.__len__, lambda: self.intake.dropped)
        self.bus = EventBus(self.intake.emit)
        self.bus.subscribe(UPSTREAM_EVENTS, follow_upstream_events)
        self._telemetry: TelemetryExport | None = None
        self.bus.subscribe((ToolCallCompleted,), self._export_call)
        self.routing: Published[RoutingSnapshot] = Published(EMPTY_SNAPSHOT)
        self.upstreams: dict[str, SupervisedUpstream] = {}
        self._retiring = StopsUnderWay()
        """The stops of the upstreams a reload took out."""
        self.sessions: set[DownstreamSession] = set()
        self.recorder = CallRecorder(self.emit, config.mcp.call_log_args)
        self.recorder.known = KnownSecrets.of(config)
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
        self._upstream_actors: dict[SupervisedUpstream, tuple[Any, ...]] = {}
        self.subscriptions = Subscriptions()
        self.log_relay = LogRelay(self._audience)
        self.unshared = UnsharedUpstreams(self._instance, self._stop_upstream, self._harness_workdir)
        self.control = ControlPlane(self)
        self.own_tools = GatewayTools(read_libraries(config), self.control, self.reader, self.exposed)
        self.listeners = Listeners(
            MetricsListener(StatusPage(lambda: self._loop, self.control.status, self.paths.db, self._scrub)),
            self._http_session,
            lambda: self.routing.current.identities,
            lambda: self._spawner.running_pids() if self._spawner else {},
        )

    # ---------------------------------------------------------------- events

    def emit(self, event: Event) -> None:
        """Publish an event: the log, then every subscriber of its type (never blocks)."""
        self.bus.publish(event)

    def _catalogue_fetched(self, _event: Event) -> None:
        """A catalogue goes into the tool index: have the search's snapshot of it made once the
        writer has committed it, before an agent searches."""
        writer = self._writer
        if writer is not None:
            self.reader.warm_search(lambda: writer.proxy().wait_flushed().get(timeout=30))

    def _export_call(self, event: Event) -> None:
        telemetry = self._telemetry
        if telemetry is not None:
            telemetry(event)

    async def _apply_telemetry(self) -> None:
        """Start or stop the OTLP export as ``export_telemetry`` says (at start and on reload)."""
        if self.config.mcp.export_telemetry:
            if self._telemetry is None:
                self._telemetry = TelemetryExport()
        else:
            await self._stop_telemetry()

    async def _stop_telemetry(self) -> None:
        """Send what is queued and stop the export (off the loop: it may wait for the collector)."""
        telemetry, self._telemetry = self._telemetry, None
        if telemetry is not None:
            await asyncio.to_thread(telemetry.close)

    def _published(self, snapshot: RoutingSnapshot) -> None:
        """Called on the policy actor's thread: each live session's mailbox gets it on the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._deliver_snapshot, snapshot)

    def _deliver_snapshot(self, snapshot: RoutingSnapshot) -> None:
        message = PolicyPublished(snapshot)
        for session in self.sessions:
            session.deliver(message)

    def running_link(self, name: str, harness: str | None) -> UpstreamLink | None:
        """The wire of an upstream instance that runs for ``harness`` now (never starts one);
        ``name``: a NAME (its project's upstream of that NAME) or a key."""
        config = self.config.upstream_for(name, self.config.project_of(harness))
        if config is None:
            return None
        upstream = self.upstreams.get(config.key)
        if upstream is None and harness is not None:
            upstream = self.unshared.instances.get((config.key, harness))
        return upstream.link if upstream is not None else None

    def link(self, name: str, harness: str | None = None) -> UpstreamLink | None:
        """The wire of an upstream by NAME or key, as ``harness`` reaches it (a global upstream, or
        one of its project's, never another project's): the shared instance, or for a
        ``shared = false`` one the harness's own instance (started now if it has none)."""
        config = self.config.upstream_for(name, self.config.project_of(harness))
        if config is None:
            return None
        upstream = self.upstreams.get(config.key)
        if upstream is not None:
            return upstream.link
        return None if config.shared else self.unshared.link(config, harness)

    @property
    def known(self) -> KnownSecrets:
        """The secret values the daemon holds for upstreams (rebuilt on reload)."""
        return self.recorder.known

    def _scrub(self, value: Any) -> Any:
        """``value`` with the held secrets redacted, by the current configuration's (reload-proof)."""
        return self.known.scrub(value)

    def exposed(self, identity: Identity) -> frozenset[str]:
        """The keys of the upstreams ``identity``'s policy exposes now."""
        return exposed_upstreams(self.routing.current, self.config, identity)

    def _reach(self, harness: str | None) -> frozenset[str]:
        """The keys of every upstream ``harness`` could reach: the global ones and its project's."""
        project = self.config.project_of(harness)
        return frozenset(k for k, up in self.config.upstreams.items() if up.project in (None, project))

    # ---------------------------------------------------------------- sessions

    def new_session(
        self, token: str | None, send: Any, bridge_version: int, transport: str = "stdio-bridge"
    ) -> DownstreamSession:
        """A session for a bridge connection (or an HTTP client) presenting ``token``."""
        snapshot = self.routing.current
        identity = snapshot.identify(token)
        session = DownstreamSession(
            identity=identity,
            view=snapshot.view_for(identity),
            links=lambda name: self.link(name, identity.harness),
            running=lambda name: self.running_link(name, identity.harness),
            recorder=self.recorder,
            emit=self.emit,
            send=send,
            on_close=self.sessions.discard,
            known=lambda name: self._known(name, token),
            search=lambda query, k, allowed, done: self.reader.search(
                query, k, allowed, done, upstreams=self._reach(identity.harness)
            ),
            token=token if identity.harness else None,
            own=self.own_tools,
            subscriptions=self.subscriptions,
            log_relay=self.log_relay,
        )
        TOOL_SCHEMA_BYTES.labels(identity.harness or "").set(len(session.listing))
        self.emit(session_opened_event(session, transport, bridge_version))
        return session

    def _known(self, name: str, token: str | None) -> Route | None:
        """A tool some upstream the token's harness could reach has, whatever its policy (the newest
        snapshot: a refusal then says ``not_permitted``, else ``unknown_tool``)."""
        snapshot = self.routing.current
        return snapshot.known_route(name, snapshot.identify(token).project)

    def _http_session(self, token: str, send: Any) -> DownstreamSession:
        session = self.new_session(token, send, 0, transport="http")
        self._track(session)
        return session

    def _track(self, session: DownstreamSession) -> None:
        self.sessions.add(session)

    @property
    def spawner(self) -> HarnessSpawner | None:
        """Starts and stops harness processes (None until the daemon is ready)."""
        return self._spawner

    async def restart_harness(self, name: str) -> None:
        """Stop a harness and spawn it again with a fresh token and run."""
        assert self._spawner is not None
        await self._spawner.stop([name])
        await self._spawn(self.config.harnesses[name])

    # ---------------------------------------------------------------- life

    async def run(self, ready: Any = None) -> int:
        """Serve until SIGTERM/SIGINT; return the exit code."""
        self._loop = asyncio.get_running_loop()
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
        if not self.config.files:
            log.warning(
                "no configuration file (looked for %s): running with no upstreams and no harnesses; "
                "give --config FILE",
                self.config_path or default_config_path(),
            )
        await asyncio.to_thread(check_usable, self.paths.db)  # a damaged or newer store: one line
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig.name)
        loop.add_signal_handler(signal.SIGHUP, self._hangup)
        self._writer = LogWriterActor.start(self.paths.db, self.intake, health=self.log_health)
        self.intake.attach(self._writer)
        self._policy = PolicyActor.start(self.config, self.routing, self._published)
        self.bus.subscribe_actor((ToolCatalogFetched, HarnessExited), self._policy)
        self.bus.subscribe((HarnessExited,), self._harness_exited)
        self.bus.subscribe((ToolCatalogFetched,), self._catalogue_fetched)
        self.emit(
            DaemonStarted(
                ts=time.time(),
                pid=os.getpid(),
                version=__version__,
                config_files=tuple(map(str, self.config.files)),
            )
        )
        running = RunningRecord(self.paths.running)  # a crashed daemon's harnesses: stopped first
        for stopped in await asyncio.to_thread(stop_survivors, running):
            log.warning("%s", stopped.line)
            self.emit(stopped.event(time.time()))
        for up in self.config.upstreams.values():
            if up.shared:
                self._new_upstream(up)
        for upstream in self.upstreams.values():
            upstream.begin()
        probes = [
            self._in_background(self._catalogue_unshared(up))
            for up in self.config.upstreams.values()
            if not up.shared
        ]
        for key, why in (await wait_first_attempts(list(self.upstreams.values()), probes)).items():
            log.warning("upstream %s: %s; ready without it (its tools join when it answers)", key, why)
        # Barrier: the policy actor and the store (tool index) have every catalogue fetched so far.
        await ask(self._policy, Barrier())
        writer = self._writer
        await asyncio.to_thread(lambda: writer.proxy().wait_flushed().get(timeout=30))
        must_listen(self.listeners.serve_metrics(self.config.mcp))
        await self._apply_telemetry()
        self._orphans = adopt_orphans()  # before harnesses start: their orphans stay in our tree
        self._server = await self._listen()
        must_listen(await self.listeners.serve_http(self.config.mcp))
        self._spawner = HarnessSpawner(
            config=self.config,
            socket_path=self.paths.socket,
            log_dir=self.paths.harness_logs,
            clients_dir=self.paths.clients,
            policy=self._policy,
            emit=self.emit,
            top_tools=self.reader.top_tools,
            respawn=lambda cfg: self._spawn(cfg, keep_history=True),
            record=running,
            scrub=self._scrub,
        )
        for cfg in self.config.harnesses.values():
            if cfg.autostart:
                await self._spawn(cfg)
        retention = asyncio.get_running_loop().create_task(self._retention())
        self._background.add(retention)
        retention.add_done_callback(self._background.discard)

    async def _retention(self) -> None:
        """Remove events and call-log rows older than ``call_log_days``: at start, then hourly.

        The writer runs each compaction in its own thread, draining calls between its steps.
        """
        while True:
            if self._writer is not None:
                cutoff = time.time() - self.config.mcp.call_log_days * 86_400
                self._writer.tell(Compact(older_than=cutoff))
            await asyncio.sleep(RETENTION_INTERVAL_S)

    def _config_folder(self) -> Path:
        return self.config.files[0].parent if self.config.files else Path.cwd()

    def _harness_workdir(self, harness: str) -> Path:
        cfg = self.config.harnesses.get(harness)
        return cfg.workdir if cfg is not None and cfg.workdir is not None else self._config_folder()

    def _upstream_folder(self, config: UpstreamConfig) -> Path:
        """Where a shared upstream (or a catalogue probe) runs: its project's folder, else the
        configuration's."""
        return config.project or self._config_folder()

    def _new_upstream(self, config: UpstreamConfig) -> SupervisedUpstream:
        """A shared upstream's actors, wire and supervision, registered under its key."""
        upstream = self._instance(config, self._upstream_folder(config), config.key)
        self.upstreams[config.key] = upstream
        return upstream

    def _instance(self, config: UpstreamConfig, cwd: Path, label: str) -> SupervisedUpstream:
        """One running instance of an upstream table: its actors, wire and supervision; its stderr
        goes to ``upstreams/<label>.log``."""
        breaker_state = Published(CLOSED)
        status: Published[Any] = Published("starting")
        breaker = BreakerActor.start(
            config.key, config.breaker_failures, config.breaker_cooldown, breaker_state, self.emit
        )
        supervisor = UpstreamActor.start(config.key, config.restart_delay, status, self.emit)
        gate = BreakerGate(breaker, breaker_state, config.breaker_cooldown, time.monotonic)
        link = UpstreamLink(config, gate=gate, status=status)
        link.on_resource_updated = self.subscriptions.updated
        link.on_resources_changed = self._resources_changed
        link.on_log_message = self.log_relay.message
        log_file = BoundedLog(self.paths.upstream_logs / f"{label}.log", scrub=self._scrub)
        upstream = SupervisedUpstream(
            link,
            supervisor=supervisor,
            connect=connector(config, cwd, log_file),
            publish=self.emit,
            log_file=log_file,
        )
        self._upstream_actors[upstream] = (breaker, supervisor)
        return upstream

    async def _catalogue_unshared(self, config: UpstreamConfig) -> None:
        """Give the policy actor a ``shared = false`` upstream's catalogue before any instance runs:
        the one the store kept, else a probe's."""
        assert self._policy is not None
        try:
            kept = await self.reader.latest_catalogue(config.key)
        except Exception as exc:  # a store that cannot be read here: the probe still gives the list
            log.warning("upstream %s: no kept catalogue (%s); probing", config.key, exc)
            kept = None
        if kept is not None:
            self._policy.tell(kept)
            return
        try:
            await self.unshared.probe(config, self._upstream_folder(config))
        except Exception:  # the daemon starts regardless; the list fills on the first instance
            log.exception("upstream %s: the catalogue probe failed", config.key)

    def _audience(self, link: UpstreamLink) -> list[ServerFeatures]:
        """The live sessions an upstream instance serves (its policy exposes it, it runs for them)."""
        return [
            s.features
            for s in self.sessions
            if link.name in s.view.servers and self.running_link(link.name, s.identity.harness) is link
        ]

    def _resources_changed(self, link: UpstreamLink) -> None:
        """An upstream's resource list changed: tell the sessions it serves."""
        line = jsonrpc.notification("notifications/resources/list_changed")
        for session in self._audience(link):
            session.send(line)

    def _harness_exited(self, event: Event) -> None:
        """A harness's process ended: its ``shared = false`` instances stop."""
        assert isinstance(event, HarnessExited)
        self._in_background(self.unshared.stop_harness(event.harness))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """``work`` as a task the daemon's stop cancels."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _stop_upstream(self, upstream: SupervisedUpstream) -> None:
        """Stop its process, then its actors."""
        await upstream.stop()
        actors = self._upstream_actors.pop(upstream, ())
        await asyncio.to_thread(lambda: [actor.stop(timeout=5) for actor in actors if actor.is_alive()])

    async def _spawn(self, cfg: HarnessConfig, *, keep_history: bool = False) -> None:
        assert self._spawner is not None
        where = f"harness.{cfg.name} in {', '.join(map(str, self.config.files)) or 'the configuration'}"
        if cfg.workdir is not None and not cfg.workdir.is_dir():
            log.error(
                "harness %s: not started: workdir %s is not a folder (%s)", cfg.name, cfg.workdir, where
            )
            return
        try:
            await self._spawner.spawn(cfg, keep_history=keep_history)
        except ConfigError as exc:
            log.error("harness %s: not started: env_file %s (%s)", cfg.name, exc, where)
        except OSError as exc:
            log.error(
                "harness %s: cannot start %s: %s (%s)", cfg.name, cfg.argv[0], exc.strerror or exc, where
            )

    async def _listen(self) -> asyncio.AbstractServer:
        """The control socket: bridges and the CLI, attributed and capped (docs/control-socket.md)."""
        control_socket = ControlSocket(
            new_session=self.new_session,
            on_session=self._track,
            control=self.control.answer,
            identities=lambda: self.routing.current.identities,
            exposed=self.exposed,
            harness_pids=lambda: self._spawner.running_pids() if self._spawner else {},
        )
        return await control_socket.serve(self.paths.socket)

    def _hangup(self) -> None:
        task = asyncio.get_running_loop().create_task(self._reload_quietly())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _reload_quietly(self) -> None:
        try:
            await self.reload()
        except Exception:  # noqa: S110 - reload() already said why; the running configuration stays
            pass

    def _approved(self, config: Config) -> tuple[Config, tuple[Path, ...]]:
        """``config`` without the upstreams of project files the operator has not approved as they
        are now (config/approvals.py), and those files, each named in the log with the command that
        approves it (``harness status`` and the status page list them too)."""
        config, unapproved = approved_only(config, read_approvals(self.paths.root))
        for file in unapproved:
            log.warning("%s", unapproved_hint(file))
        return config, unapproved

    async def reload(self) -> dict[str, Any]:
        """Re-read the configuration; a bad one is refused and the running one stays.

        Policies, tiers and each running harness's policy and allowance apply to live sessions at
        once (sessions whose tool list changed get ``notifications/tools/list_changed``). Added
        upstreams start, removed ones stop, changed ones restart; added autostart harnesses start,
        removed ones stop. A changed harness table applies from its next spawn.
        """
        async with self._reloading:
            try:
                new, unapproved = self._approved(await asyncio.to_thread(load_config, self.config_path))
            except ConfigError as exc:
                log.error("reload refused, the running configuration stays: %s", exc)
                raise
            old, self.config, self.unapproved = self.config, new, unapproved
            self.recorder.args_mode = new.mcp.call_log_args
            self.recorder.known = KnownSecrets.of(new)
            failed = self.listeners.serve_metrics(new.mcp)
            await self._apply_telemetry()
            failed += await self.listeners.serve_http(new.mcp)
            for line in failed:
                log.error("reload: %s (the rest of the configuration applies)", line)
            self.own_tools.use(await asyncio.to_thread(read_libraries, new))
            assert self._policy is not None and self._spawner is not None
            self._spawner.config = new
            await ask(self._policy, ApplyConfig(new))
            changed, not_up = await self._reconcile_upstreams(old, new)
            for name, cfg in new.harnesses.items():
                if name not in old.harnesses and cfg.autostart:
                    await self._spawn(cfg)
            gone = [n for n in old.harnesses if n not in new.harnesses]
            await self._spawner.stop(gone)
            log.info("configuration reloaded from %s", ", ".join(map(str, new.files)) or "(no files)")
            resettle_heap()
            self.emit(
                ConfigReloaded(
                    ts=time.time(),
                    config_files=tuple(map(str, new.files)),
                    upstreams_changed=tuple(changed),
                    harnesses_stopped=tuple(gone),
                )
            )
            return {
                "upstreams_changed": changed,
                "upstreams_not_up": not_up,
                "harnesses_stopped": gone,
                "failed": failed,
            }

    async def _reconcile_upstreams(self, old: Config, new: Config) -> tuple[list[str], dict[str, str]]:
        """Stop the upstreams removed or changed and start the added or changed ones; the changed
        keys, and why each started one is not up after a short wait (:func:`wait_first_attempts`)."""
        names = old.upstreams.keys() | new.upstreams.keys()
        changed = sorted(n for n in names if old.upstreams.get(n) != new.upstreams.get(n))
        stopping = [self.upstreams.pop(n) for n in changed if n in self.upstreams]
        await self._retiring.run(
            *(self._stop_upstream(up) for up in stopping),
            *(self.unshared.stop_upstream(n) for n in changed),
        )
        started, probes = [], []
        for name in changed:
            config = new.upstreams.get(name)
            if config is not None and config.shared:
                started.append(upstream := self._new_upstream(config))
                upstream.begin()
            elif config is not None:
                probes.append(self._in_background(self._catalogue_unshared(config)))
        return changed, await wait_first_attempts(started, probes)

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
        await self._stop_telemetry()  # every call so far has its span sent
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
        for session in list(self.sessions):
            session.close("daemon stopping")
        if self._spawner is not None:
            await self._spawner.stop_all()
        await asyncio.gather(
            *(self._stop_upstream(up) for up in list(self.upstreams.values())),
            self.unshared.stop_all(),
            self._retiring.wait(),
            return_exceptions=True,
        )
