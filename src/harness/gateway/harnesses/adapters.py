"""Adapters: wire the ``harness mcp`` bridge into each agent client at spawn, in that client's own
format, without touching the user's files.

=============  =================================================================================
client         wiring
=============  =================================================================================
generic        nothing: the operator's argv reaches the bridge itself (``HARNESS_*`` are in its env)
claude-code    a Harness-owned ``mcp.json`` passed as ``--mcp-config=FILE``; ``--strict-mcp-config``
               when ``mcp_exclusive`` (only the gateway then)
codex          ``-c mcp_servers.harness.*`` overrides (command, args, ``env_vars`` so Codex passes
               the token through its environment allowlist); when ``mcp_exclusive``, ``-c
               mcp_servers.NAME.enabled=false`` for each server of the user's ``config.toml``
crush          a Harness-owned data dir (``--data-dir=DIR``) whose ``crush.json``, loaded last,
               adds the ``mcp`` entry; when ``mcp_exclusive``, it disables each server of the user's
               JSON configs
=============  =================================================================================

Flags go right after ``argv[0]`` (the client's executable), always in ``--flag=value`` form so a
variadic option cannot swallow what follows. The token itself is never written to a file or put
in argv (where ``/proc/PID/cmdline`` shows it to every user): files and overrides reference it,
and the client passes it from its environment to the bridge.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.clients import SERVER_KEY
from harness.config import HarnessConfig

CLAUDE_CONFIG = "claude-mcp.json"
"""Claude Code's generated ``--mcp-config`` file, in the harness's clients folder."""
CRUSH_DATA_DIR = "crush-data"
"""Crush's ``--data-dir``, in the harness's clients folder."""

BRIDGE_ENV = ("HARNESS_MCP_TOKEN", "HARNESS_SOCKET", "HARNESS_NAME", "HARNESS_RUN_ID")
"""What the bridge reads from its environment; each adapter makes its client pass these through."""


@dataclass(frozen=True, slots=True)
class Wiring:
    """What a spawn runs: the argv with the adapter's flags, and the files it wrote."""

    argv: tuple[str, ...]
    files: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class Spawn:
    """What an adapter knows of one spawn."""

    harness: HarnessConfig
    bridge: str
    """The absolute path of the ``harness`` command the client launches (with ``mcp``)."""
    folder: Path
    """The harness's own folder for generated client files (under the state dir, mode 0700)."""
    env: Mapping[str, str]
    """The environment the client gets (where it finds its own configuration)."""
    workdir: Path


def _private_json(path: Path, value: Any) -> Path:
    """Write ``value`` as JSON to ``path`` (mode 0600, replaced atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return path


def _after_executable(argv: Sequence[str], flags: Sequence[str]) -> tuple[str, ...]:
    return (argv[0], *flags, *argv[1:])


def wire_generic(spawn: Spawn) -> Wiring:
    """No wiring: the operator's own argv and client configuration reach the bridge."""
    return Wiring(tuple(spawn.harness.argv))


def claude_code_config(bridge: str) -> dict[str, Any]:
    """The ``mcp.json`` Claude Code reads: the gateway as a stdio server, the bridge's variables
    expanded by Claude Code from its own environment (``${NAME}``)."""
    return {
        "mcpServers": {
            SERVER_KEY: {
                "type": "stdio",
                "command": bridge,
                "args": ["mcp"],
                "env": {name: "${" + name + "}" for name in BRIDGE_ENV},
            }
        }
    }


def wire_claude_code(spawn: Spawn) -> Wiring:
    """``--mcp-config=FILE`` (additive), plus ``--strict-mcp-config`` when exclusive."""
    path = _private_json(spawn.folder / CLAUDE_CONFIG, claude_code_config(spawn.bridge))
    flags = ["--strict-mcp-config"] if spawn.harness.mcp_exclusive else []
    flags.append(f"--mcp-config={path}")
    return Wiring(_after_executable(spawn.harness.argv, flags), (path,))


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def codex_overrides(bridge: str, disable: Sequence[str] = ()) -> list[str]:
    """Codex ``-c key=value`` overrides (values in TOML) adding the gateway as server ``harness``
    and disabling the servers named in ``disable``."""
    table = f"mcp_servers.{SERVER_KEY}"
    pairs = [
        f"{table}.command={json.dumps(bridge)}",
        f'{table}.args=["mcp"]',
        f"{table}.env_vars={json.dumps(list(BRIDGE_ENV))}",
    ]
    pairs += [f"mcp_servers.{_toml_key(name)}.enabled=false" for name in disable if name != SERVER_KEY]
    return [flag for pair in pairs for flag in ("-c", pair)]


def _read_json_servers(path: Path, key: str) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = data.get(key) if isinstance(data, dict) else None
    return [str(name) for name in servers] if isinstance(servers, dict) else []


def codex_user_servers(env: Mapping[str, str]) -> list[str]:
    """The MCP servers of the user's Codex configuration (``$CODEX_HOME/config.toml``, default
    ``~/.codex``), read, never written."""
    home = env.get("CODEX_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".codex")
    try:
        data = tomllib.loads((Path(home) / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = data.get("mcp_servers")
    return list(servers) if isinstance(servers, dict) else []


def wire_codex(spawn: Spawn) -> Wiring:
    """``-c`` overrides: nothing written, and no secret in argv (the token passes by ``env_vars``)."""
    disable = codex_user_servers(spawn.env) if spawn.harness.mcp_exclusive else []
    return Wiring(_after_executable(spawn.harness.argv, codex_overrides(spawn.bridge, disable)))


def crush_config(bridge: str, disable: Sequence[str] = ()) -> dict[str, Any]:
    """The ``crush.json`` of the Harness-owned data dir: the gateway's ``mcp`` entry, and each server
    in ``disable`` disabled."""
    servers: dict[str, Any] = {name: {"disabled": True} for name in disable if name != SERVER_KEY}
    servers[SERVER_KEY] = {
        "type": "stdio",
        "command": bridge,
        "args": ["mcp"],
        "env": {name: "$" + name for name in BRIDGE_ENV},
    }
    return {"mcp": servers}


def crush_user_servers(env: Mapping[str, str], workdir: Path) -> list[str]:
    """The MCP servers of the user's Crush JSON configurations: system, global, and the project's
    from the workdir up (``crushrc`` shell files are not read)."""
    home = Path(env.get("HOME", str(Path.home())))
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    files = [
        Path("/etc/crush/crush.json"),
        Path(env["CRUSH_GLOBAL_CONFIG"]) / "crush.json"
        if env.get("CRUSH_GLOBAL_CONFIG")
        else config_home / "crush" / "crush.json",
        Path(env["CRUSH_GLOBAL_DATA"]) / "crush.json"
        if env.get("CRUSH_GLOBAL_DATA")
        else home / ".local" / "share" / "crush" / "crush.json",
    ]
    for folder in (workdir, *workdir.parents):
        files += [folder / "crush.json", folder / ".crush.json"]
        if (folder / ".git").exists():
            break
    return list(dict.fromkeys(name for f in files for name in _read_json_servers(f, "mcp")))


def wire_crush(spawn: Spawn) -> Wiring:
    """``--data-dir=DIR`` holding the gateway's ``crush.json`` (Crush loads it last, merged over the
    user's own configuration). The data dir also keeps Crush's sessions: one per harness, kept."""
    disable = crush_user_servers(spawn.env, spawn.workdir) if spawn.harness.mcp_exclusive else []
    data_dir = spawn.folder / CRUSH_DATA_DIR
    path = _private_json(data_dir / "crush.json", crush_config(spawn.bridge, disable))
    return Wiring(_after_executable(spawn.harness.argv, [f"--data-dir={data_dir}"]), (path,))


ADAPTERS: Mapping[str, Callable[[Spawn], Wiring]] = {
    "generic": wire_generic,
    "claude-code": wire_claude_code,
    "codex": wire_codex,
    "crush": wire_crush,
}
"""Each adapter's wiring, by the ``harness`` key's value."""


def wire(spawn: Spawn) -> Wiring:
    """The wiring of the spawn's adapter."""
    return ADAPTERS[spawn.harness.harness](spawn)
