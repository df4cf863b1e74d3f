"""``harness tools``: a harness's effective tools, their tiers, and what each exposure mode costs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.cli.common import CliError, Globals
from harness.config import Config, PolicyConfig, default_config_path, load_config
from harness.events import ToolCatalogFetched
from harness.reading import StoreView, open_store
from harness.rules.exposure import Route, ToolView, build_view, catalogue_routes, session_listing, trimmed

MODES = ("full", "lazy", "top_k")
NO_POLICY = PolicyConfig(name="no-policy")
"""A harness with no policy gets no upstream tools."""


def latest_catalogs(view: StoreView) -> dict[str, list[dict[str, Any]]]:
    """Each upstream's newest tool catalogue in the store, as the upstream returned it."""
    catalogs: dict[str, list[dict[str, Any]]] = {}
    for envelope in view.events(name=ToolCatalogFetched.STORED_NAME):
        event = envelope.event
        assert isinstance(event, ToolCatalogFetched)
        catalogs[event.upstream] = json.loads(event.tools_json)
    return catalogs


def _read_from(config: Config) -> str:
    """Which configuration was read, for messages: its files, or where none was found."""
    if config.files:
        return ", ".join(map(str, config.files))
    return f"no configuration file (looked for {default_config_path()}; give --config FILE)"


def _policy(config: Config, harness: str) -> PolicyConfig:
    if harness not in config.harnesses:
        raise CliError(f"no harness {harness!r} in the configuration read: {_read_from(config)}")
    return config.policy_for(harness) or NO_POLICY


def harness_view(g: Globals, view: StoreView, harness: str) -> ToolView:
    """The view the harness's policy gives over the catalogues in the store."""
    config = load_config(g.config)
    policy = _policy(config, harness).model_copy(update={"exposure": config.exposure_for(harness)})
    return build_view(
        policy,
        config,
        latest_catalogs(view),
        read_only=_read_only(config, harness),
        project=config.project_of(harness),
    )


def _read_only(config: Config, harness: str) -> bool:
    return "write" not in config.harnesses[harness].mcp_allow


def mode_views(
    policy: PolicyConfig,
    config: Config,
    catalogs: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    read_only: bool,
    project: Path | None = None,
) -> dict[str, ToolView]:
    """The policy's view in each exposure mode, for a harness of ``project``."""
    return {
        m: build_view(
            policy.model_copy(update={"exposure": m}), config, catalogs, read_only=read_only, project=project
        )
        for m in MODES
    }


def bytes_per_mode(views: Mapping[str, ToolView], top: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Bytes of tool schemas a session lists in each mode (``top``: the harness's most-called
    (upstream, tool) pairs, best first), and the full listing before descriptions are trimmed (the
    same tools, the gateway's own included)."""
    full = views["full"]
    return {
        "full_untrimmed": _size([*full.tools.values(), *full.gateway]),
        "full": len(full.listing_json),
        "lazy": len(views["lazy"].listing_json),
        "top_k": len(session_listing(views["top_k"], top)),
    }


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def configured(g: Globals) -> Config:
    """The configuration read; CliError when there is no configuration file."""
    config = load_config(g.config)
    if not config.files:
        raise CliError(_read_from(config))
    return config


def store_catalogs(view: StoreView) -> dict[str, list[dict[str, Any]]]:
    """:func:`latest_catalogs`; CliError when the store has none yet."""
    catalogs = latest_catalogs(view)
    if not catalogs:
        raise CliError("no tool catalogue in the store yet: start the daemon once")
    return catalogs


def print_tools(g: Globals, harness: str | None, *, as_json: bool) -> int:
    """Print the tools (all known, or one harness's) with tiers and bytes, then bytes per mode."""
    config = configured(g)
    with open_store(g.paths.db) as view:
        catalogs = store_catalogs(view)
        listed: list[tuple[Mapping[str, Route], Mapping[str, str], Mapping[str, Mapping[str, Any]]]]
        exposure: str | None = None
        if harness is None:  # each upstream on its own: two projects' may list the same names
            listed = [catalogue_routes(config, catalogs, [key]) for key in catalogs]
            chars, modes = NO_POLICY.max_description_chars, {}
        else:
            policy = _policy(config, harness)
            exposure = policy.exposure
            views = mode_views(
                policy,
                config,
                catalogs,
                read_only=_read_only(config, harness),
                project=config.project_of(harness),
            )
            tools, chars = views["full"].tools, policy.max_description_chars
            listed = [({name: views["full"].routes[name] for name in tools}, {}, tools)]
            top = tuple((upstream, tool) for upstream, tool, _calls in view.top_tools(harness, policy.top_k))
            modes = bytes_per_mode(views, top)
    rows = [
        {
            "name": name,
            "upstream": route.upstream,
            "tool": route.tool,
            "tier": route.tier,
            "bytes": _size(trimmed(tools[name], chars)),
        }
        for routes, _aliases, tools in listed
        for name, route in routes.items()
    ]
    if as_json:
        out = {"harness": harness, "exposure": exposure, "tools": rows, "bytes_per_mode": modes}
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(f"{'NAME':<50} {'TIER':<5} {'BYTES':>7}")
    for row in rows:
        print(f"{row['name']:<50} {row['tier']:<5} {row['bytes']:>7}")
    print(f"\n{len(rows)} tools")
    if exposure is not None:
        print(f"{harness} uses exposure {exposure!r} (its policy's); what each mode would cost:")
    for mode, size in modes.items():
        marker = "  <- in use" if mode == exposure else ""
        print(f"  {mode:<15} {size:>9,} bytes of tool schemas per session{marker}")
    if modes and modes["top_k"] > modes["full"]:
        print("  (top_k also lists search_tools and call_tool: for a small tool set it costs more than full)")
    return 0
