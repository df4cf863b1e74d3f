"""What the loop needs per session, as one immutable snapshot: identities by token, views by policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from harness.config import Config
from harness.events.attribution import UNATTRIBUTED as NO_ONE
from harness.events.attribution import Attribution
from harness.rules.exposure import EMPTY_VIEW, Route, ToolView
from harness.vocabulary import Exposure


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a session is: the token's owner and what it may do (``attribution.harness`` None:
    unattributed, read-only, no upstream tools)."""

    attribution: Attribution
    trace_id: str
    policy: str
    allow: frozenset[str]
    top_tools: tuple[tuple[str, str], ...] = ()
    """For top_k exposure: the (upstream, tool) pairs this run called most, fixed at spawn."""
    exposure: Exposure = "full"
    """The policy's mode, or the client's default when the policy sets none (``Config.exposure_for``)."""
    project: Path | None = None
    """The harness's project folder (``Config.project_of``): its policy reaches that project's
    upstreams by NAME, and no other project's."""

    @property
    def harness(self) -> str | None:
        """The token's owner (None: unattributed)."""
        return self.attribution.harness

    @property
    def run_id(self) -> str | None:
        """The owner's run at spawn."""
        return self.attribution.run_id

    def under(self, config: Config) -> Identity:
        """This identity with what ``config`` grants its harness: its policy, ``mcp_allow``,
        exposure and project (the one derivation, at spawn and on reload); unchanged when ``config``
        has no such harness."""
        table = config.harnesses.get(self.harness or "")
        if table is None:
            return self
        policy = config.policy_for(table.name)
        return replace(
            self,
            policy=policy.name if policy else "",
            allow=frozenset(table.mcp_allow),
            exposure=config.exposure_for(table.name),
            project=config.project_of(table.name),
        )


ViewKey = tuple[str, bool, Exposure, Path | None]
"""(policy name, read-only, exposure, project folder): what a tool view depends on."""

UNATTRIBUTED = Identity(NO_ONE, "0" * 32, "", frozenset({"read"}))


@dataclass(frozen=True)
class RoutingSnapshot:
    """Published by the policy actor after each change; read by the loop with no ask."""

    generation: int
    identities: Mapping[str, Identity]
    views: Mapping[ViewKey, ToolView]
    """By (policy name, read-only, exposure, project): a harness without ``write`` gets the read-only
    view; the exposure is the harness's (its policy's, or its client's default); the project is the
    harness's (None: none, and for every harness without a policy)."""
    known: Mapping[str, Route] = field(default_factory=lambda: MappingProxyType({}))
    """Every exposed (and unshortened) tool name of every global upstream, whatever the policies: a
    name here but not in a session's view is ``not_permitted`` (and recorded under its real upstream)."""
    known_in: Mapping[Path, Mapping[str, Route]] = field(default_factory=lambda: MappingProxyType({}))
    """The same per project, its own upstreams' names with the global ones: another project's tool
    is as unknown to a harness as a tool nobody has."""
    unattributed: ToolView = EMPTY_VIEW
    """The view of a session with no harness identity: the skill tools at most."""

    def identify(self, token: str | None) -> Identity:
        """The token's owner, or the unattributed identity for a missing or unknown token."""
        if not token:
            return UNATTRIBUTED
        return self.identities.get(token, UNATTRIBUTED)

    def view_for(self, identity: Identity) -> ToolView:
        """The tool view of an identity's policy in its project (the gateway's own tools only for no
        policy; for no harness identity, :attr:`unattributed`)."""
        if identity.harness is None:
            return self.unattributed
        project = identity.project if identity.policy else None
        key = (identity.policy, "write" not in identity.allow, identity.exposure, project)
        return self.views.get(key, EMPTY_VIEW)

    def known_route(self, name: str, project: Path | None) -> Route | None:
        """The route of a tool name some upstream a harness of ``project`` could reach has, whatever
        its policy (None: no such tool there)."""
        known = self.known_in.get(project, self.known) if project is not None else self.known
        return known.get(name)


EMPTY_SNAPSHOT = RoutingSnapshot(0, MappingProxyType({}), MappingProxyType({}))
