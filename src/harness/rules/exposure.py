"""Pure computation of what each policy exposes: namespaced names, tiers, and the tools/list payload."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.config import Config, PolicyConfig, UpstreamConfig
from harness.naming import exposed_name
from harness.rules.gateway_tools import LAZY_TOOLS, gateway_listing
from harness.vocabulary import Exposure, Tier


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


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class ToolView:
    """A policy's effective tool set and what a session of it lists.

    ``routes`` holds every tool the policy allows (resolvable directly or through ``call_tool``);
    ``tools`` the tool objects the session may see (namespaced, untrimmed; for ``search_tools`` and
    the listing: a read-only view leaves write tools out);
    ``gateway`` the gateway's own tools listed after them (facade, skills: :func:`gateway_listing`);
    ``listing_json`` the ``tools/list`` array of the mode (for top_k, without the per-harness top
    tools: :func:`session_listing` adds them).
    """

    policy: str
    exposure: Exposure
    top_k: int
    max_description_chars: int
    routes: Mapping[str, Route]
    aliases: Mapping[str, str]
    tools: Mapping[str, Mapping[str, Any]]
    gateway: tuple[Mapping[str, Any], ...]
    listing_json: bytes
    servers: tuple[str, ...] = ()
    """The NAMEs of the exposed upstreams whose prompts, resources, completions and log messages a
    session may reach (:func:`reaches_features`); a session's links resolve a NAME to its project's
    upstream."""
    tool_globs: tuple[str, ...] = ()
    deny_globs: tuple[str, ...] = ()
    """The policy's ``tools`` and ``deny``: they narrow prompt names (``<upstream>__<prompt>``) too."""

    def allows_prompt(self, name: str) -> bool:
        """Whether an upstream's prompt, by its exposed name, is within the policy's tools/deny."""
        return _matches(name, self.tool_globs, self.deny_globs)

    def resolve(self, name: str) -> Route | None:
        """The route of an exposed name, or of the unshortened ``<upstream>__<tool>`` form."""
        route = self.routes.get(name)
        if route is None and (alias := self.aliases.get(name)) is not None:
            route = self.routes.get(alias)
        return route


def _view(
    policy: str,
    exposure: Exposure,
    top_k: int,
    chars: int,
    routes: dict[str, Route],
    aliases: dict[str, str],
    tools: dict[str, Mapping[str, Any]],
    listing: list[Mapping[str, Any]],
    gateway: tuple[Mapping[str, Any], ...] = (),
    servers: tuple[str, ...] = (),
    globs: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> ToolView:
    listing_json = _encode([*listing, *gateway])
    return ToolView(
        policy=policy,
        exposure=exposure,
        top_k=top_k,
        max_description_chars=chars,
        routes=MappingProxyType(routes),
        aliases=MappingProxyType(aliases),
        tools=MappingProxyType(tools),
        gateway=gateway,
        listing_json=listing_json,
        servers=servers,
        tool_globs=globs[0],
        deny_globs=globs[1],
    )


EMPTY_VIEW = _view("", "full", 0, 300, {}, {}, {}, [])


def trim_description(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at a sentence boundary if one is past the middle,
    else at a word boundary with an ellipsis. Short text is returned as it is."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    sentence_end = max(head.rfind(mark) for mark in (". ", "! ", "? ", "\n"))
    if sentence_end >= limit // 2:
        return head[: sentence_end + 1].rstrip()
    cut = head[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def trimmed(tool: Mapping[str, Any], limit: int) -> Mapping[str, Any]:
    """The tool with its description trimmed; everything else, the input schema first, untouched."""
    description = tool.get("description")
    if isinstance(description, str) and len(description) > limit:
        return {**tool, "description": trim_description(description, limit)}
    return tool


def _matches(name: str, tools: Sequence[str], deny: Sequence[str]) -> bool:
    if any(fnmatchcase(name, g) for g in deny):
        return False
    return not tools or any(fnmatchcase(name, g) for g in tools)


def _allowed(name: str, policy: PolicyConfig) -> bool:
    return _matches(name, policy.tools, policy.deny)


def reaches_features(policy: PolicyConfig, upstream: str, with_tools: Set[str], kept: Set[str]) -> bool:
    """Whether a session of ``policy`` may reach the prompts, resources and completions of an
    exposed upstream (by key; ``with_tools``: the upstreams that have tools, ``kept``: those the
    policy leaves at least one tool of): when ``tools``/``deny`` leave it a tool, or, without a
    ``tools`` allowlist, when it has no tools at all (a resource-only server). An allowlist names
    everything a session gets; denying every tool of an upstream hides all of it."""
    return upstream in kept or (not policy.tools and upstream not in with_tools)


def _with_tier(annotations: Any, tier: Tier) -> dict[str, Any]:
    """The tool's annotations with ``readOnlyHint`` saying the gateway's tier, which decides (a
    ``write_tools`` override makes a tool the upstream calls read-only a write tool, and says so)."""
    base = dict(annotations) if isinstance(annotations, Mapping) else {}
    base["readOnlyHint"] = tier == "read"
    return base


def catalogue_routes(
    config: Config, catalogs: Mapping[str, Sequence[Mapping[str, Any]]], keys: Sequence[str] | None = None
) -> tuple[dict[str, Route], dict[str, str], dict[str, Mapping[str, Any]]]:
    """Routes, aliases and namespaced tool objects of the upstreams with the given keys (every one
    with a catalogue when None). Tools are named by the upstream's NAME; routes hold its key."""
    routes: dict[str, Route] = {}
    aliases: dict[str, str] = {}
    tools: dict[str, Mapping[str, Any]] = {}
    for key in keys if keys is not None else list(catalogs):
        upstream = config.upstreams.get(key)
        if upstream is None:
            continue
        for tool in catalogs.get(key, ()):
            real = tool.get("name")
            if not isinstance(real, str) or not real:
                continue
            name = exposed_name(upstream.name, real)
            if name in routes:
                continue
            tier = tier_of(tool, upstream)
            routes[name] = Route(name, key, real, tier)
            tools[name] = {**tool, "name": name, "annotations": _with_tier(tool.get("annotations"), tier)}
            plain = f"{upstream.name}__{real}"
            if plain != name:
                aliases[plain] = name
    return routes, aliases, tools


def build_view(
    policy: PolicyConfig,
    config: Config,
    catalogs: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    read_only: bool = False,
    project: Path | None = None,
) -> ToolView:
    """The view of one policy over the catalogues known so far (upstreams in ``servers`` order),
    for a harness of ``project``: a NAME in ``servers`` is a global upstream, or that project's own
    (:meth:`~harness.config.Config.upstream_for`); other projects' upstreams are never in it.

    ``read_only`` (a harness without ``write`` in ``mcp_allow``): write tools stay routed, so calling
    one is refused as ``not_permitted`` with the tier named, but they are neither listed nor found
    by ``search_tools``: no context is spent on tools that harness can never call. The same goes for
    the facade's write tools.
    """
    reached = [u for name in policy.servers if (u := config.upstream_for(name, project)) is not None]
    all_routes, all_aliases, all_tools = catalogue_routes(config, catalogs, [u.key for u in reached])
    routes = {n: r for n, r in all_routes.items() if _allowed(n, policy)}
    aliases = {a: n for a, n in all_aliases.items() if n in routes}
    tools = {
        n: t for n, t in all_tools.items() if n in routes and not (read_only and routes[n].tier == "write")
    }
    chars = policy.max_description_chars
    if policy.exposure == "full":
        listing = [trimmed(t, chars) for t in tools.values()]
    else:
        listing = list(LAZY_TOOLS)
    gateway = gateway_listing(read_only=read_only, skills=bool(config.mcp.skill_paths))
    with_tools = {r.upstream for r in all_routes.values()}
    kept = {r.upstream for r in routes.values()}
    servers = tuple(u.name for u in reached if reaches_features(policy, u.key, with_tools, kept))
    return _view(
        policy.name,
        policy.exposure,
        policy.top_k,
        chars,
        routes,
        aliases,
        tools,
        listing,
        gateway,
        servers,
        (policy.tools, policy.deny),
    )


def gateway_view(config: Config, *, read_only: bool, attributed: bool = True) -> ToolView:
    """The view of a harness with no policy (and no ``default_policy``): no upstream tools, only the
    gateway's own tools its tier permits; of an unattributed session (``attributed`` False): the
    skill tools only."""
    skills = bool(config.mcp.skill_paths)
    gateway = gateway_listing(read_only=read_only, skills=skills, attributed=attributed)
    return _view("", "full", 0, 300, {}, {}, {}, [], gateway)


def session_listing(view: ToolView, top: Sequence[tuple[str, str]]) -> bytes:
    """What a session lists: the view's listing, plus, in top_k mode, the harness's top tools first."""
    if view.exposure != "top_k" or not top:
        return view.listing_json
    chosen: list[Mapping[str, Any]] = []
    for upstream, tool in top:
        route = view.routes.get(exposed_name(upstream, tool))
        if route is not None and route.exposed in view.tools and len(chosen) < view.top_k:
            chosen.append(trimmed(view.tools[route.exposed], view.max_description_chars))
    return _encode([*chosen, *LAZY_TOOLS, *view.gateway])
