"""The control plane: the handlers behind ``harness list``, ``status``, ``restart`` and ``reload``
(and the facade tools, which call the same handlers). The daemon is reached through :class:`Fleet`,
so this module does not import it."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from harness import __version__
from harness.config import Config
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.harnesses.spawner import HarnessSpawner
from harness.gateway.upstream.supervised import SupervisedUpstream


class Fleet(Protocol):
    """What the control plane reads and drives."""

    @property
    def config(self) -> Config:
        """The running configuration."""
        ...

    @property
    def upstreams(self) -> Mapping[str, SupervisedUpstream]:
        """Every upstream by key."""
        ...

    @property
    def sessions(self) -> Iterable[DownstreamSession]:
        """The live downstream sessions."""
        ...

    @property
    def spawner(self) -> HarnessSpawner | None:
        """Starts and stops harness processes (None before the daemon is ready)."""
        ...

    async def reload(self) -> dict[str, Any]:
        """Re-read the configuration."""
        ...

    async def restart_harness(self, name: str) -> None:
        """Stop a harness and spawn it again with a fresh token."""
        ...


Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class ControlPlane:
    """Answers one control request by name."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self._handlers: dict[str, Handler] = {
            "list": self._list,
            "status": self._status,
            "reload": self._reload,
            "restart": self._restart,
        }

    async def answer(self, command: str, args: dict[str, Any]) -> Any:
        """The result of one control request; ValueError for an unknown command or bad arguments."""
        handler = self._handlers.get(command)
        if handler is None:
            raise ValueError(f"unknown control command {command!r}")
        return await handler(args)

    async def _list(self, _args: dict[str, Any]) -> list[dict[str, Any]]:
        fleet = self._fleet
        spawner = fleet.spawner
        rows = []
        for name, cfg in sorted(fleet.config.harnesses.items()):
            proc = spawner.processes.get(name) if spawner else None
            policy = fleet.config.policy_for(name)
            rows.append(
                {
                    "name": name,
                    "adapter": cfg.harness,
                    "state": "running" if proc and proc.running else ("exited" if proc else "stopped"),
                    "pid": proc.pid if proc else None,
                    "run_id": proc.run_id if proc else None,
                    "policy": policy.name if policy else None,
                    "sessions": sum(1 for s in fleet.sessions if s.identity.harness == name),
                }
            )
        return rows

    async def _status(self, _args: dict[str, Any]) -> dict[str, Any]:
        fleet = self._fleet
        return {
            "pid": os.getpid(),
            "version": __version__,
            "upstreams": {
                name: {
                    "state": up.link.status,
                    "pid": up.pid,
                    "tools": len(up.tools),
                    "in_flight": up.link.in_flight,
                    "waiting": up.link.waiting,
                    "breaker": up.link.gate.state.status,
                }
                for name, up in fleet.upstreams.items()
            },
            "sessions": sum(1 for _ in fleet.sessions),
        }

    async def _reload(self, _args: dict[str, Any]) -> dict[str, Any]:
        return await self._fleet.reload()

    async def _restart(self, args: dict[str, Any]) -> dict[str, Any]:
        """Restart a harness (stop, spawn with a fresh token) or an upstream (its history forgotten)."""
        name = str(args.get("name", ""))
        fleet = self._fleet
        if name in fleet.config.harnesses and fleet.spawner is not None:
            await fleet.restart_harness(name)
            return {"restarted": name, "kind": "harness"}
        upstream = fleet.upstreams.get(name)
        if upstream is None:
            raise ValueError(f"no harness or upstream named {name!r}")
        upstream.restart_now("restart requested")
        return {"restarted": name, "kind": "upstream"}
