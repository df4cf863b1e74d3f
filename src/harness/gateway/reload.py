"""A reload: re-read the configuration and bring every part of the running daemon to it.

A bad configuration is refused and the running one stays. Otherwise the one holder of the
configuration switches (:class:`~harness.gateway.running_config.ConfigHolder`), then in this order:
the listeners and the telemetry export follow their settings, the library is re-read, the policy
actor takes the new policies (live sessions get them at once), upstreams added start, removed stop
and changed restart, added autostart harnesses start and removed ones stop. A changed harness table
applies from its next spawn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykka

from harness.actors.asking import ask
from harness.actors.policy import ApplyConfig
from harness.config import Config, ConfigError, load_config
from harness.config.approvals import approved_only, read_approvals, unapproved_hint
from harness.events import ConfigReloaded, Event
from harness.gateway.evidence.telemetry import TelemetrySwitch
from harness.gateway.facade import GatewayTools, read_libraries
from harness.gateway.harnesses.spawner import HarnessSpawner
from harness.gateway.heap import resettle_heap
from harness.gateway.listeners import Listeners
from harness.gateway.running_config import ConfigHolder
from harness.gateway.upstream.directory import UpstreamDirectory

log = logging.getLogger("harness.daemon")


def approved(config: Config, state_dir: Path) -> tuple[Config, tuple[Path, ...]]:
    """``config`` without the upstreams of project files the operator has not approved as they
    are now (config/approvals.py), and those files, each named in the log with the command that
    approves it (``harness status`` and the status page list them too)."""
    config, unapproved = approved_only(config, read_approvals(state_dir))
    for file in unapproved:
        log.warning("%s", unapproved_hint(file))
    return config, unapproved


@dataclass(frozen=True)
class Reload:
    """The parts of a running daemon a reload brings to the new configuration."""

    config_path: Path | None
    state_dir: Path
    holder: ConfigHolder
    listeners: Listeners
    own_tools: GatewayTools
    upstreams: UpstreamDirectory
    spawner: HarnessSpawner
    telemetry: TelemetrySwitch
    policy: pykka.ActorRef[Any]
    emit: Callable[[Event], None]

    async def run(self) -> dict[str, Any]:
        """Apply the configuration file as it is now; what changed and what failed."""
        try:
            new, unapproved = approved(await asyncio.to_thread(load_config, self.config_path), self.state_dir)
        except ConfigError as exc:
            log.error("reload refused, the running configuration stays: %s", exc)
            raise
        old = self.holder.switch(new, unapproved)
        failed = self.listeners.serve_metrics(new.mcp)
        await self.telemetry.apply(new.mcp.export_telemetry)
        failed += await self.listeners.serve_http(new.mcp)
        for line in failed:
            log.error("reload: %s (the rest of the configuration applies)", line)
        self.own_tools.use(await asyncio.to_thread(read_libraries, new))
        await ask(self.policy, ApplyConfig(new))
        changed, not_up = await self.upstreams.reconcile(old, new)
        for name, cfg in new.harnesses.items():
            if name not in old.harnesses and cfg.autostart:
                await self.spawner.start(cfg)
        gone = [n for n in old.harnesses if n not in new.harnesses]
        await self.spawner.stop(gone)
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
