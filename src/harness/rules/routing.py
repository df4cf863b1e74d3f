"""What the loop needs per session, as one immutable snapshot: identities by token, views by policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

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

    @property
    def harness(self) -> str | None:
        """The token's owner (None: unattributed)."""
        return self.attribution.harness

    @property
    def run_id(self) -> str | None:
        """The owner's run at spawn."""
        return self.attribution.run_id


UNATTRIBUTED = Identity(NO_ONE, "0" * 32, "", frozenset({"read"}))


@dataclass(frozen=True)
class RoutingSnapshot:
    """Published by the policy actor after each change; read by the loop with no ask."""

    generation: int
    identities: Mapping[str, Identity]
    views: Mapping[tuple[str, bool, Exposure], ToolView]
    """By (policy name, read-only, exposure): a harness without ``write`` gets the read-only view;
    the exposure is the harness's (its policy's, or its client's default)."""
    known: Mapping[str, Route] = field(default_factory=lambda: MappingProxyType({}))
    """Every exposed (and unshortened) tool name of every upstream, whatever the policies: a name
    here but not in a session's view is ``not_permitted`` (and recorded under its real upstream)."""

    def identify(self, token: str | None) -> Identity:
        """The token's owner, or the unattributed identity for a missing or unknown token."""
        if not token:
            return UNATTRIBUTED
        return self.identities.get(token, UNATTRIBUTED)

    def view_for(self, identity: Identity) -> ToolView:
        """The tool view of an identity's policy (empty for no policy)."""
        return self.views.get((identity.policy, "write" not in identity.allow, identity.exposure), EMPTY_VIEW)


EMPTY_SNAPSHOT = RoutingSnapshot(0, MappingProxyType({}), MappingProxyType({}))
