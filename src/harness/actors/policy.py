"""PolicyActor: owns the configuration, the upstream catalogues and the token registry.

It publishes an immutable :class:`RoutingSnapshot` that the loop reads without asking.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import pykka
from pydantic import BaseModel, ConfigDict

from harness.actors.asking import AnswersAsks
from harness.actors.tool_views import EMPTY_VIEW, ToolView, build_view, catalogue_routes
from harness.config import Config
from harness.events import ToolCatalogFetched


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a session is: the token's owner and what it may do. ``harness`` None = unattributed."""

    harness: str | None
    run_id: str | None
    adapter: str | None
    model: str | None
    config_hash: str | None
    trace_id: str
    policy: str
    allow: frozenset[str]
    top_tools: tuple[tuple[str, str], ...] = ()
    """For top_k exposure: the (upstream, tool) pairs this run called most, fixed at spawn."""


UNATTRIBUTED = Identity(None, None, None, None, None, "0" * 32, "", frozenset({"read"}))


@dataclass(frozen=True)
class RoutingSnapshot:
    """What the loop needs per session: identities by token and views by policy name."""

    generation: int
    identities: Mapping[str, Identity]
    views: Mapping[str, ToolView]
    known: frozenset[str] = frozenset()
    """Every exposed (and unshortened) tool name of every upstream: excluded ones are not_permitted."""

    def identify(self, token: str | None) -> Identity:
        """The token's owner, or the unattributed identity for a missing or unknown token."""
        if not token:
            return UNATTRIBUTED
        return self.identities.get(token, UNATTRIBUTED)

    def view_for(self, identity: Identity) -> ToolView:
        """The tool view of an identity's policy (empty for no policy)."""
        return self.views.get(identity.policy, EMPTY_VIEW)


class SnapshotBox:
    """Holds the current snapshot; the actor replaces it, the loop reads ``current``."""

    def __init__(self) -> None:
        self.current = RoutingSnapshot(0, MappingProxyType({}), MappingProxyType({}))


@dataclass(frozen=True)
class RegisterToken:
    """Command: make ``token`` identify ``identity`` (answered once the snapshot holds it)."""

    token: str
    identity: Identity


@dataclass(frozen=True)
class ApplyConfig:
    """Command: a reloaded configuration; running harnesses take their new policy and allowance."""

    config: Config


@dataclass(frozen=True)
class ForgetToken:
    """Command: the token's process is gone; it identifies nobody from now on."""

    token: str


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
        self, config: Config, box: SnapshotBox, on_publish: Callable[[RoutingSnapshot], None] | None = None
    ) -> None:
        super().__init__()
        self._config = config
        self._box = box
        self._on_publish = on_publish
        self._catalogs: dict[str, tuple[dict[str, Any], ...]] = {}
        self._identities: dict[str, Identity] = {}
        self._views: dict[str, ToolView] = {}
        self._known: frozenset[str] = frozenset()

    def on_start(self) -> None:
        """Publish the first snapshot (no catalogues yet)."""
        self._rebuild_views()
        self._publish()

    def handle(self, message: Any) -> Any:
        """Events and commands; anything else is answered with None (a barrier)."""
        if isinstance(message, ToolCatalogFetched):
            self._catalogs[message.upstream] = tuple(json.loads(message.tools_json))
            self._rebuild_views()
            self._publish()
        elif isinstance(message, RegisterToken):
            self._identities[message.token] = message.identity
            self._publish()
            return True
        elif isinstance(message, ForgetToken) and self._identities.pop(message.token, None) is not None:
            self._publish()
        elif isinstance(message, ApplyConfig):
            self._apply(message.config)
        return None

    def _apply(self, config: Config) -> None:
        self._config = config
        self._catalogs = {k: v for k, v in self._catalogs.items() if k in config.upstreams}
        for token, ident in list(self._identities.items()):
            table = config.harnesses.get(ident.harness or "")
            if table is not None:
                policy = config.policy_for(table.name)
                self._identities[token] = replace(
                    ident, policy=policy.name if policy else "", allow=frozenset(table.mcp_allow)
                )
        self._rebuild_views()
        self._publish()

    def _rebuild_views(self) -> None:
        cfg = self._config
        self._views = {name: build_view(p, cfg, self._catalogs) for name, p in cfg.policies.items()}
        routes, aliases, _tools = catalogue_routes(cfg, self._catalogs)
        self._known = frozenset(routes) | frozenset(aliases)

    def _publish(self) -> None:
        snapshot = RoutingSnapshot(
            self._box.current.generation + 1,
            MappingProxyType(dict(self._identities)),
            MappingProxyType(dict(self._views)),
            self._known,
        )
        self._box.current = snapshot
        if self._on_publish is not None:
            self._on_publish(snapshot)

    def statistics(self) -> PolicyStatistics:
        """Counts for tests and ``harness doctor``."""
        return PolicyStatistics(
            generation=self._box.current.generation,
            tokens=len(self._identities),
            upstreams_with_catalogue=len(self._catalogs),
            views=len(self._views),
        )
