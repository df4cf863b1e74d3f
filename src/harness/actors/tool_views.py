"""Pure computation of what each policy exposes: namespaced names, tiers, and the tools/list payload."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from harness.config import Config, PolicyConfig, UpstreamConfig
from harness.events import Tier
from harness.naming import exposed_name


def tier_of(tool: Mapping[str, Any], upstream: UpstreamConfig) -> Tier:
    """``write_tools`` globs, then ``read_tools`` globs, then ``readOnlyHint``; otherwise write."""
    name = str(tool.get("name", ""))
    if any(fnmatchcase(name, g) for g in upstream.write_tools):
        return "write"
    if any(fnmatchcase(name, g) for g in upstream.read_tools):
        return "read"
    annotations = tool.get("annotations")
    if isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True:
        return "read"
    return "write"


@dataclass(frozen=True, slots=True)
class Route:
    """Where an exposed tool name goes."""

    exposed: str
    upstream: str
    tool: str
    tier: Tier


@dataclass(frozen=True)
class ToolView:
    """A policy's effective tool set: routes by exposed name and the pre-encoded tools/list array."""

    policy: str
    routes: Mapping[str, Route]
    tools_json: bytes
    fingerprint: str
    schema_bytes: int = field(default=0)


EMPTY_VIEW = ToolView(policy="", routes={}, tools_json=b"[]", fingerprint=hashlib.sha256(b"[]").hexdigest())


def _allowed(name: str, policy: PolicyConfig) -> bool:
    if any(fnmatchcase(name, g) for g in policy.deny):
        return False
    return not policy.tools or any(fnmatchcase(name, g) for g in policy.tools)


def build_view(
    policy: PolicyConfig, config: Config, catalogs: Mapping[str, Sequence[Mapping[str, Any]]]
) -> ToolView:
    """The view of one policy over the catalogues known so far (upstreams in ``servers`` order)."""
    routes: dict[str, Route] = {}
    listed: list[dict[str, Any]] = []
    for upstream_name in policy.servers:
        upstream = config.upstreams.get(upstream_name)
        if upstream is None:
            continue
        for tool in catalogs.get(upstream_name, ()):
            real = tool.get("name")
            if not isinstance(real, str) or not real:
                continue
            name = exposed_name(upstream_name, real)
            if name in routes or not _allowed(name, policy):
                continue
            routes[name] = Route(name, upstream_name, real, tier_of(tool, upstream))
            listed.append({**tool, "name": name})
    tools_json = json.dumps(listed, ensure_ascii=False, separators=(",", ":")).encode()
    return ToolView(
        policy=policy.name,
        routes=routes,
        tools_json=tools_json,
        fingerprint=hashlib.sha256(tools_json).hexdigest(),
        schema_bytes=len(tools_json),
    )
