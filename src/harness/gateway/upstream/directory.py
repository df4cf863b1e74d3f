"""The upstream directory: every running upstream instance of the daemon, by key (shared) or by
(key, harness) (``shared = false``), and beside each its 2026-07-28 twin if a session of that era
reached it (``era_twins.py``); how a session reaches one, and how a new configuration's upstreams
replace the old ones (added start, removed stop, changed restart)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykka

from harness.actors.breaker import BreakerActor
from harness.actors.snapshots import Published
from harness.config import Config, UpstreamConfig
from harness.events import Event, HarnessExited, ToolCatalogFetched
from harness.gateway.processes import BoundedLog
from harness.gateway.upstream.admission import BreakerGate
from harness.gateway.upstream.era_twins import EraTwins, twin_name
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.upstream.supervised import StopsUnderWay, SupervisedUpstream, wait_first_attempts
from harness.gateway.upstream.transports import connector
from harness.gateway.upstream.unshared import UnsharedUpstreams
from harness.rules.breaker import CLOSED
from harness.vocabulary import StopReason, UpstreamStatus

log = logging.getLogger("harness.daemon")


@dataclass(frozen=True)
class LinkHooks:
    """What an upstream's wire tells the sessions it serves."""

    resource_updated: Callable[[UpstreamLink, str], None]
    resources_changed: Callable[[UpstreamLink], None]
    log_message: Callable[[UpstreamLink, Any], None]
    tools_announced: Callable[[UpstreamLink], None]
    """``notifications/tools/list_changed`` whose refreshed catalogue came back the same."""


class UpstreamDirectory:
    """Starts, finds and stops the daemon's upstream instances."""

    def __init__(
        self,
        *,
        config: Callable[[], Config],
        log_dir: Path,
        emit: Callable[[Event], None],
        scrub: Callable[[Any], Any],
        kept_catalogue: Callable[[str], Awaitable[ToolCatalogFetched | None]],
        background: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]],
    ) -> None:
        self._config = config
        self._log_dir = log_dir
        self._emit = emit
        self._scrub = scrub
        self.hooks = LinkHooks(lambda _l, _u: None, lambda _l: None, lambda _l, _p: None, lambda _l: None)
        """What new instances' wires tell the sessions (the daemon sets the session roster's)."""
        self._kept_catalogue = kept_catalogue
        self._background = background
        self.policy: pykka.ActorRef[Any] | None = None
        """Told a ``shared = false`` upstream's kept catalogue (set once the policy actor runs)."""
        self.shared: dict[str, SupervisedUpstream] = {}
        self.unshared = UnsharedUpstreams(self._instance, self.stop_instance, self._harness_workdir)
        self.twins = EraTwins(self._twin_of, self.stop_instance)
        self._breakers: dict[SupervisedUpstream, pykka.ActorRef[Any]] = {}
        self._placed: dict[SupervisedUpstream, tuple[Path, str]] = {}
        """Each instance's working directory and log label (its twin's are made from them)."""
        self._retiring = StopsUnderWay()
        """The stops of the upstreams a reload took out."""

    # ---------------------------------------------------------------- reaching one

    def _running(self, name: str, harness: str | None) -> SupervisedUpstream | None:
        """The upstream instance that runs for ``harness`` now (never starts one); ``name``: a NAME
        (its project's upstream of that NAME) or a key."""
        config = self._config()
        table = config.upstream_for(name, config.project_of(harness))
        if table is None:
            return None
        upstream = self.shared.get(table.key)
        if upstream is None and harness is not None:
            upstream = self.unshared.instances.get((table.key, harness))
        return upstream

    def running_link(self, name: str, harness: str | None) -> UpstreamLink | None:
        """The wire of the (handshake) upstream instance that runs for ``harness`` now (never starts
        one): listings, subscriptions, logging and completion of either era go to it."""
        upstream = self._running(name, harness)
        return upstream.link if upstream is not None else None

    def link(self, name: str, harness: str | None = None, modern: bool = False) -> UpstreamLink | None:
        """The wire a call of ``harness`` goes to, by NAME or key (a global upstream, or one of its
        project's, never another project's): the shared instance, or for a ``shared = false`` one the
        harness's own (started now if it has none); for a 2026-07-28 session (``modern``), that
        instance's twin (:meth:`EraTwins.link`)."""
        config = self._config()
        table = config.upstream_for(name, config.project_of(harness))
        if table is None:
            return None
        upstream = self.shared.get(table.key)
        if upstream is None and not table.shared and self.unshared.link(table, harness) is not None:
            upstream = self.unshared.instances.get((table.key, harness or ""))
        if upstream is None:
            return None
        return self.twins.link(upstream) if modern else upstream.link

    async def reading(self, name: str, harness: str | None, link: UpstreamLink) -> UpstreamLink:
        """Where a 2026-07-28 session's ``prompts/get`` or ``resources/read`` of an upstream whose
        handshake instance is ``link`` goes: the twin, once it has started (else ``link``)."""
        upstream = self._running(name, harness)
        return await self.twins.settled(upstream) if upstream is not None and upstream.link is link else link

    def reach(self, harness: str | None) -> frozenset[str]:
        """The keys of every upstream ``harness`` could reach: the global ones and its project's."""
        config = self._config()
        project = config.project_of(harness)
        return frozenset(k for k, up in config.upstreams.items() if up.project in (None, project))

    # ---------------------------------------------------------------- starting and stopping

    async def start(self, config: Config) -> dict[str, str]:
        """Start every upstream of ``config``; why each is not up after a short wait."""
        return await self._start([*config.upstreams.values()])

    async def reconcile(self, old: Config, new: Config) -> tuple[list[str], dict[str, str]]:
        """Stop the upstreams removed or changed and start the added or changed ones; the changed
        keys, and why each started one is not up after a short wait (:func:`wait_first_attempts`)."""
        names = old.upstreams.keys() | new.upstreams.keys()
        changed = sorted(n for n in names if old.upstreams.get(n) != new.upstreams.get(n))
        stopping = [self.shared.pop(n) for n in changed if n in self.shared]
        await self._retiring.run(
            *(self.stop_instance(up, "reload") for up in stopping),
            *(self.unshared.stop_upstream(n) for n in changed),
        )
        tables = [new.upstreams[name] for name in changed if name in new.upstreams]
        return changed, await self._start(tables)

    async def _start(self, tables: list[UpstreamConfig]) -> dict[str, str]:
        """Shared tables start an instance; ``shared = false`` ones get their catalogue."""
        started = [self._new_shared(table) for table in tables if table.shared]
        for upstream in started:
            upstream.begin()
        probes = [self._background(self._catalogue_unshared(t)) for t in tables if not t.shared]
        return await wait_first_attempts(started, probes)

    def harness_exited(self, event: Event) -> None:
        """A harness's process ended: its ``shared = false`` instances stop."""
        assert isinstance(event, HarnessExited)
        self._background(self.unshared.stop_harness(event.harness))

    async def stop_instance(
        self, upstream: SupervisedUpstream, reason: StopReason = "daemon stopping"
    ) -> None:
        """Stop its process (and its twin's), then its breaker."""
        self._placed.pop(upstream, None)
        await asyncio.gather(upstream.stop(reason), self.twins.forget(upstream, reason))
        if (breaker := self._breakers.pop(upstream, None)) is not None and breaker.is_alive():
            await asyncio.to_thread(breaker.stop, timeout=5)

    async def stop_all(self) -> None:
        """Stop every instance, and wait for the stops a reload began."""
        await asyncio.gather(
            *(self.stop_instance(up) for up in list(self.shared.values())),
            self.unshared.stop_all(),
            self._retiring.wait(),
            return_exceptions=True,
        )
        await self.twins.stop_all()

    # ---------------------------------------------------------------- instances

    def _config_folder(self) -> Path:
        config = self._config()
        return config.files[0].parent if config.files else Path.cwd()

    def _harness_workdir(self, harness: str) -> Path:
        cfg = self._config().harnesses.get(harness)
        return cfg.workdir if cfg is not None and cfg.workdir is not None else self._config_folder()

    def _upstream_folder(self, config: UpstreamConfig) -> Path:
        """Where a shared upstream (or a catalogue probe) runs: its project's folder, else the
        configuration's."""
        return config.project or self._config_folder()

    def _new_shared(self, config: UpstreamConfig) -> SupervisedUpstream:
        """A shared upstream's breaker, wire and supervision, registered under its key."""
        upstream = self._instance(config, self._upstream_folder(config), config.key)
        self.shared[config.key] = upstream
        return upstream

    def _instance(
        self, config: UpstreamConfig, cwd: Path, label: str, twin_of: SupervisedUpstream | None = None
    ) -> SupervisedUpstream:
        """One running instance of an upstream table (or the 2026-07-28 twin of one): its breaker,
        wire and supervision; its stderr goes to ``upstreams/<label>.log``."""
        breaker_state = Published(CLOSED)
        status: Published[UpstreamStatus] = Published("starting")
        name = label if twin_of is not None else config.key
        breaker = BreakerActor.start(
            name, config.breaker_failures, config.breaker_cooldown, breaker_state, self._emit
        )
        gate = BreakerGate(breaker, breaker_state, config.breaker_cooldown, time.monotonic)
        link = UpstreamLink(config, gate=gate, status=status)
        link.on_resource_updated = self.hooks.resource_updated
        link.on_resources_changed = self.hooks.resources_changed
        link.on_log_message = self.hooks.log_message
        log_file = BoundedLog(self._log_dir / f"{label}.log", scrub=self._scrub)
        upstream = SupervisedUpstream(
            link,
            status=status,
            connect=connector(config, cwd, log_file),
            publish=self._emit,
            log_file=log_file,
            tools_announced=lambda: self.hooks.tools_announced(link),
            name=name,
            era_twin=twin_of is not None,
            starting=lambda: self.twins.restarted(upstream),
        )
        self._breakers[upstream] = breaker
        self._placed[upstream] = (cwd, label)
        return upstream

    def _twin_of(self, base: SupervisedUpstream) -> SupervisedUpstream:
        """A 2026-07-28 twin of ``base``, in its working directory (not started)."""
        cwd, label = self._placed[base]
        return self._instance(base.config, cwd, twin_name(label), twin_of=base)

    async def _catalogue_unshared(self, config: UpstreamConfig) -> None:
        """Give the policy actor a ``shared = false`` upstream's catalogue before any instance runs:
        the one the store kept, else a probe's."""
        assert self.policy is not None
        try:
            kept = await self._kept_catalogue(config.key)
        except Exception as exc:  # a store that cannot be read here: the probe still gives the list
            log.warning("upstream %s: no kept catalogue (%s); probing", config.key, exc)
            kept = None
        if kept is not None:
            self.policy.tell(kept)
            return
        try:
            await self.unshared.probe(config, self._upstream_folder(config))
        except Exception:  # the daemon starts regardless; the list fills on the first instance
            log.exception("upstream %s: the catalogue probe failed", config.key)
