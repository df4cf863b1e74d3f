"""Who is on the other end of a control-socket connection, and what it may do (pure rules).

The daemon learns two things about a connection: where its peer process sits in the process tree
(:class:`PeerOrigin`, from the kernel's peer credentials and ``/proc``) and which token it presents.
These rules combine them. Ancestry can only take rights away, never grant them: a process inside a
harness's tree is at most that harness, whatever token it presents; only a process outside the
daemon's tree that presents no token is the operator. docs/control-socket.md explains the model and
what it cannot prevent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from harness.rules.routing import UNATTRIBUTED, Identity

OriginKind = Literal["outside", "harness", "daemon", "unknown", "unverified"]
"""Where a peer process sits: ``outside`` the daemon's tree (the operator's shell, a cron job);
inside a running ``harness``'s tree (by process ancestry or session); inside the ``daemon``'s tree
but no running harness's (an upstream server, an orphan the daemon adopted, what an exited harness
left behind); ``unknown`` (the peer is gone, or in another pid namespace); ``unverified`` (this
platform gives no peer credentials: the token alone decides)."""

ControlTier = Literal["read", "write", "operator"]
"""What a control command needs: ``read`` and ``write`` are ``mcp_allow`` tiers; ``operator`` is
reserved to the operator."""

COMMAND_TIERS: Mapping[str, ControlTier] = MappingProxyType(
    {
        "list": "read",
        "status": "read",
        "describe": "read",
        "logs": "read",
        "restart": "write",
        "stop": "write",
        "start": "write",
        "reload": "operator",
    }
)
"""The tier of each control command. ``reload`` re-reads configuration files that any process of
the operator's uid can edit, so it is the operator's alone (ADR-0035 puts the facade's start, stop
and restart in the write tier; a reload is not a facade tool)."""


@dataclass(frozen=True, slots=True)
class PeerOrigin:
    """Where a connection's peer process sits (``harness`` set only for kind ``harness``)."""

    kind: OriginKind
    pid: int = 0
    uid: int = -1
    harness: str | None = None

    def describe(self) -> str:
        """In words, for logs and refusals."""
        where = {
            "outside": "outside the daemon's process tree",
            "harness": f"in harness {self.harness}'s process tree",
            "daemon": "in the daemon's process tree but no running harness's",
            "unknown": "of unknown origin (the process is gone or not visible)",
            "unverified": "unverified (no peer credentials on this platform)",
        }[self.kind]
        return f"pid {self.pid} {where}" if self.pid else where


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a control request and what it may do."""

    operator: bool
    harness: str | None
    allow: frozenset[str]
    why: str
    """Why the caller is who it is, in words (shown in refusals)."""
    upstreams: frozenset[str] = frozenset()
    """The keys of the upstreams its policy exposes (what it may see of them: rules/scope.py)."""

    def permits(self, tier: ControlTier) -> bool:
        """Whether this caller may run a command of ``tier``."""
        return self.operator or (tier != "operator" and tier in self.allow)


OPERATOR = Caller(operator=True, harness=None, allow=frozenset({"read", "write"}), why="the operator")
"""The operator: a process outside the daemon's tree with no token (and the daemon's own readers)."""

Exposed = Callable[[Identity], frozenset[str]]
"""The keys of the upstreams an identity's policy exposes now."""


def _nothing_exposed(_identity: Identity) -> frozenset[str]:
    return frozenset()


class NotPermitted(Exception):
    """A control request its caller may not make; the message begins with ``not_permitted:``."""


def check(caller: Caller, command: str) -> None:
    """Raise :class:`NotPermitted` unless ``caller`` may run ``command`` (unknown commands pass: the
    control plane refuses them as unknown)."""
    tier = COMMAND_TIERS.get(command)
    if tier is None:
        return
    if not caller.operator and caller.harness is None:
        raise NotPermitted(
            f"not_permitted: `{command}` answers only a harness or the operator; "
            f"this connection is {caller.why}, which has no harness identity"
        )
    if caller.permits(tier):
        return
    if tier == "operator":
        needs = "is reserved to the operator (a process outside the daemon's tree, with no token)"
    else:
        needs = f'needs mcp_allow "{tier}"'
    allow = ", ".join(f'"{a}"' for a in sorted(caller.allow)) or "nothing"
    raise NotPermitted(
        f"not_permitted: `{command}` {needs}; this connection is {caller.why}, allowed {allow}"
    )


def _as_harness(identity: Identity, why: str, exposed: Exposed) -> Caller:
    return Caller(
        operator=False, harness=identity.harness, allow=identity.allow, why=why, upstreams=exposed(identity)
    )


def session_caller(identity: Identity, exposed: Exposed = _nothing_exposed) -> Caller:
    """The caller behind an MCP session's facade call: the token's harness with its ``mcp_allow`` and
    the upstreams its policy exposes; an unattributed session is no one (it may run no command)."""
    if identity.harness is None:
        return _no_one("an MCP session without a valid token")
    return _as_harness(identity, f"harness {identity.harness!r} (by its token)", exposed)


def _no_one(why: str) -> Caller:
    """A caller with no harness identity: it may run no command (``check``)."""
    return Caller(operator=False, harness=None, allow=frozenset(), why=why)


def control_caller(
    origin: PeerOrigin,
    presented: str | None,
    identify: Mapping[str, Identity],
    exposed: Exposed = _nothing_exposed,
) -> Caller:
    """The caller of a control request from ``origin`` presenting token ``presented`` (None: none).

    ``identify`` maps each running harness's current token to its identity; a harness's own entry
    is found through :func:`harness_identity`. ``exposed`` gives a harness's visible upstreams.
    """
    token_identity = identify.get(presented, UNATTRIBUTED) if presented else None
    where = origin.describe()
    if origin.kind in ("outside", "unverified"):
        if token_identity is None:
            return OPERATOR
        if token_identity.harness is None:
            return _no_one(f"a token no running harness holds, presented by {where}")
        return _as_harness(token_identity, f"harness {token_identity.harness!r} (by its token)", exposed)
    if origin.kind == "harness":
        own = harness_identity(origin.harness, identify)
        if token_identity is not None and token_identity.harness != origin.harness:
            return _no_one(f"a token that is not harness {origin.harness!r}'s, presented by {where}")
        if own is None:
            return _no_one(f"{where}, whose run has no identity")
        return _as_harness(own, where, exposed)
    return _no_one(where)


def harness_identity(name: str | None, identify: Mapping[str, Identity]) -> Identity | None:
    """The identity a running harness's token maps to (None if it holds none)."""
    if name is None:
        return None
    for identity in identify.values():
        if identity.harness == name:
            return identity
    return None


def session_token(origin: PeerOrigin, presented: str | None, identify: Mapping[str, Identity]) -> str | None:
    """The token an MCP session opened from ``origin`` may use (None: unattributed, read-only).

    Identity is the token alone (interfaces.md); ancestry only refuses a token the peer cannot own:
    a process in harness A's tree presenting B's token, or a process in the daemon's own tree (an
    upstream, an adopted orphan) or of unknown origin presenting any token.
    """
    if not presented:
        return None
    if origin.kind in ("outside", "unverified"):
        return presented
    if origin.kind == "harness":
        owner = identify.get(presented)
        return presented if owner is not None and owner.harness == origin.harness else None
    return None
