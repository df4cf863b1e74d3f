"""``harness doctor``'s look at one harness's wiring: its adapter, env file, workdir and the
executable its ``argv[0]`` names, as the spawner would meet them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from harness.cli.executables import resolve
from harness.clients import CLIENTS
from harness.config import Config, ConfigError, HarnessConfig, parse_env_file
from harness.gateway.processes import minimal_env

Status = Literal["ok", "note", "problem"]


def wiring(config: Config, harness: HarnessConfig) -> Iterator[tuple[Status, str]]:
    """What launching ``harness`` would meet: its adapter, env file, workdir and ``argv[0]``."""
    yield "ok", f"adapter {harness.harness}: {_adapter_wiring(harness)}"
    command = CLIENTS[harness.harness].command
    if command and harness.argv and Path(harness.argv[0]).name != command:
        yield (
            "note",
            f"adapter {harness.harness} puts its flags right after argv[0] {harness.argv[0]!r}, "
            f"which is not {command!r}: a wrapper must pass them on to {command}",
        )
    own: dict[str, str] = {}
    if harness.env_file is not None:
        try:
            own = parse_env_file(harness.env_file)
        except ConfigError as exc:
            yield "problem", f"env_file: {exc}"
        else:
            yield "ok", f"env_file {harness.env_file} readable ({len(own)} variables)"
    workdir = harness.workdir or config.files[0].parent
    if workdir.is_dir():
        yield "ok", f"workdir {workdir}" + ("" if harness.workdir else " (the configuration's folder)")
    else:
        yield "problem", f"workdir {workdir} is not a folder"
    if not harness.argv:
        yield "note", "no argv: never spawned (autostart = false)"
        return
    found = _resolve(harness.argv[0], workdir, own)
    if found is None:
        yield "problem", f"argv[0] {harness.argv[0]!r} is not an executable on the PATH it gets"
    else:
        yield "ok", f"argv[0] {harness.argv[0]} -> {found}"


def _adapter_wiring(harness: HarnessConfig) -> str:
    from harness.gateway.harnesses.adapters import CLAUDE_CONFIG, CRUSH_DATA_DIR

    exclusive = harness.mcp_exclusive
    return {
        "generic": "no client config written; the agent launches `harness mcp` itself "
        "(HARNESS_MCP_TOKEN and HARNESS_SOCKET are in its environment)",
        "claude-code": f"--mcp-config=clients/{harness.name}/{CLAUDE_CONFIG} in the state dir"
        + (" and --strict-mcp-config (the gateway only)" if exclusive else " (additive)"),
        "codex": "-c mcp_servers.harness.* overrides"
        + (", the user's own servers disabled" if exclusive else " (additive)"),
        "crush": f"--data-dir=clients/{harness.name}/{CRUSH_DATA_DIR} in the state dir"
        + (", the user's own servers disabled" if exclusive else " (additive)"),
    }[harness.harness]


def _resolve(argv0: str, workdir: Path, own: dict[str, str]) -> str | None:
    """Where the spawner's exec would find ``argv0``: on the PATH the harness gets, or, with a
    slash, relative to its workdir."""
    from harness.gateway.harnesses.spawner import harness_bin_dir

    return resolve(argv0, workdir, minimal_env(own, path_first=harness_bin_dir()).get("PATH", ""))
