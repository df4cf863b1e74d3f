"""PolicyActor: the one owner of the configuration, the upstream catalogues and the token registry.

It hears ``upstream.tool_catalog_fetched`` and ``harness.exited`` from the bus, takes
``RegisterToken`` and ``ApplyConfig`` commands, and after each change publishes an immutable
:class:`RoutingSnapshot` that the loop reads without asking.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pykka
from pydantic import BaseModel, ConfigDict

from harness.actors.asking import AnswersAsks
from harness.actors.snapshots import Published
from harness.config import Config
from harness.events import HarnessExited, ToolCatalogFetched
from harness.rules.exposure import EMPTY_VIEW, Route, ToolView, build_view, catalogue_routes, gateway_view
from harness.rules.routing import Identity, RoutingSnapshot, ViewKey
from harness.vocabulary import Exposure


@dataclass(frozen=True)
class RegisterToken:
    """Command: make ``token`` identify ``identity`` (answered once the snapshot holds it)."""

    token: str
    identity: Identity


@dataclass(frozen=True)
class ForgetToken:
    """Command: the token's process never started; it identifies nobody from now on."""

    token: str


@dataclass(frozen=True)
class ApplyConfig:
    """Command: a reloaded configuration; running harnesses take their new policy and allowance."""

    config: Config


class PolicyStatistics(BaseModel):
    """What the policy actor holds."""

    model_config = ConfigDict(frozen=True)

    generation: int
    tokens: int
    upstreams_with_catalogue: int
    views: int


class PolicyActor(AnswersAsks, pykka.ThreadingActor):
    """Single owner of configuration, catalogues and tokens; publishes routing snapshots."""

    def __init__(
        self,
        config: Config,
        snapshot: Published[RoutingSnapshot],
        on_publish: Callable[[RoutingSnapshot], None] | None = None,
    ) -> None:
        super().__init__()
        self._config = config
        self._snapshot = snapshot
        self._on_publish = on_publish
        self._catalogs: dict[str, tuple[dict[str, Any], ...]] = {}
        self._identities: dict[str, Identity] = {}
        self._views: dict[ViewKey, ToolView] = {}
        self._known: dict[str, Route] = {}
        self._known_in: dict[Path, dict[str, Route]] = {}
        self._unattributed = EMPTY_VIEW

    def on_start(self) -> None:
        """Publish the first snapshot (no catalogues yet)."""
        self._rebuild_views()
        self._publish()

    def handle(self, message: Any) -> Any:
        """Events and commands; an unknown message is an error."""
        if isinstance(message, ToolCatalogFetched):
            self._catalogs[message.upstream] = tuple(json.loads(message.tools_json))
            self._rebuild_views()
            self._publish()
        elif isinstance(message, RegisterToken):
            self._identities[message.token] = message.identity
            self._publish()
            return True
        elif isinstance(message, HarnessExited):
            gone = [t for t, ident in self._identities.items() if ident.run_id == message.run_id]
            self._forget(gone)
        elif isinstance(message, ForgetToken):
            self._forget([message.token])
        elif isinstance(message, ApplyConfig):
            self._apply(message.config)
        else:
            raise TypeError(f"PolicyActor: unhandled message {message!r}")
        return None

    def _forget(self, tokens: list[str]) -> None:
        removed = [token for token in tokens if self._identities.pop(token, None) is not None]
        if removed:
            self._publish()

    def _apply(self, config: Config) -> None:
        self._config = config
        self._catalogs = {k: v for k, v in self._catalogs.items() if k in config.upstreams}
        self._identities = {token: ident.under(config) for token, ident in self._identities.items()}
        self._rebuild_views()
        self._publish()

    def _rebuild_views(self) -> None:
        cfg = self._config
        modes: dict[str, set[Exposure]] = {name: {p.exposure} for name, p in cfg.policies.items()}
        projects: dict[str, set[Path | None]] = {name: {None} for name in cfg.policies}
        for harness in cfg.harnesses:  # a policy that sets no exposure takes each client's default
            if (p := cfg.policy_for(harness)) is not None:
                modes[p.name].add(cfg.exposure_for(harness))
                projects[p.name].add(cfg.project_of(harness))
        self._views = {
            (name, read_only, mode, project): build_view(
                p.model_copy(update={"exposure": mode}),
                cfg,
                self._catalogs,
                read_only=read_only,
                project=project,
            )
            for name, p in cfg.policies.items()
            for mode in sorted(modes[name])
            for project in projects[name]
            for read_only in (False, True)
        }
        for read_only in (False, True):  # a harness with no policy: the gateway's own tools only
            self._views[("", read_only, "full", None)] = gateway_view(cfg, read_only=read_only)
        self._unattributed = gateway_view(cfg, read_only=True, attributed=False)
        everywhere = [key for key, up in cfg.upstreams.items() if up.project is None]
        self._known = self._known_names(everywhere)
        self._known_in = {
            folder: self._known_names(
                [*everywhere, *(k for k, u in cfg.upstreams.items() if u.project == folder)]
            )
            for folder in set(cfg.projects.values())
        }

    def _known_names(self, keys: list[str]) -> dict[str, Route]:
        """Every exposed and unshortened tool name of these upstreams' catalogues, and its route."""
        routes, aliases, _tools = catalogue_routes(self._config, self._catalogs, keys)
        return {**routes, **{alias: routes[name] for alias, name in aliases.items()}}

    def _publish(self) -> None:
        snapshot = RoutingSnapshot(
            self._snapshot.current.generation + 1,
            MappingProxyType(dict(self._identities)),
            MappingProxyType(dict(self._views)),
            MappingProxyType(self._known),
            MappingProxyType(self._known_in),
            self._unattributed,
        )
        self._snapshot.current = snapshot
        if self._on_publish is not None:
            self._on_publish(snapshot)

    def statistics(self) -> PolicyStatistics:
        """Counts for tests and ``harness doctor``."""
        return PolicyStatistics(
            generation=self._snapshot.current.generation,
            tokens=len(self._identities),
            upstreams_with_catalogue=len(self._catalogs),
            views=len(self._views),
        )
