"""The policy decision: may this identity call this tool? One pure function, used by a session's
calls (upstream tools and the gateway's own) and by ``harness policy what-if``."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from harness.rules.exposure import Route
from harness.rules.refusals import Denial


@dataclass(frozen=True, slots=True)
class Denied:
    """A refused call: why, and the route of the tool when one exists (the policy hides it, or
    its tier is above the caller's) so the refusal is recorded under its upstream."""

    denial: Denial
    route: Route | None


def _none(_name: str) -> Route | None:
    return None


def decide(
    name: str,
    route: Route | None,
    allow: Collection[str],
    known: Callable[[str], Route | None] = _none,
) -> Route | Denied:
    """The route a call of ``name`` goes to, or why it is refused.

    ``route``: where the caller's view sends ``name`` (None: its view has no such tool);
    ``allow``: the caller's ``mcp_allow`` tiers; ``known``: the route of a tool the view hides,
    looked up only on refusal (a hidden tool is ``excluded``, a name nobody has ``unknown_tool``).
    """
    if route is None:
        hidden = known(name)
        return Denied("unknown_tool" if hidden is None else "excluded", hidden)
    if route.tier == "write" and "write" not in allow:
        return Denied("write_tier", route)
    return route
