"""Where a child's ``argv[0]`` resolves, as ``exec`` finds it with the child's environment and folder:
``harness doctor`` checks each stdio upstream's command and each harness's this way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from harness.cli.config_lines import declaring_file, key_line
from harness.config import Config, ConfigError, UpstreamConfig, resolve_upstream_env
from harness.gateway.harnesses.deathsig import resolve_program
from harness.gateway.processes import minimal_env


def resolve(argv0: str, cwd: Path, path: str) -> str | None:
    """The executable ``argv0`` names (with a slash, relative to ``cwd``; else the first on ``path``),
    found as the spawner finds it; None where starting it would fail."""
    try:
        return resolve_program(argv0, {"PATH": path}, cwd)
    except OSError:
        return None


def upstream_commands(config: Config) -> Iterator[tuple[Literal["ok", "problem"], str]]:
    """Each stdio upstream's ``argv[0]``, looked up on the PATH the daemon gives it (its allowlisted
    environment, then the upstream's ``env``) from the folder it runs in; one missing is a problem
    naming the file and the key."""
    for key, upstream in config.upstreams.items():
        if upstream.argv is None:
            continue
        argv0 = upstream.argv[0]
        try:
            path = minimal_env(resolve_upstream_env(upstream)).get("PATH", "")
        except ConfigError as exc:
            yield "problem", str(exc)
            continue
        found = resolve(argv0, _folder(config, upstream), path)
        if found is not None:
            yield "ok", f"{key}: argv[0] {argv0} -> {found}"
            continue
        dotted = f"mcp.{upstream.name}.argv"
        file = declaring_file(_files_of(config, upstream), f"mcp.{upstream.name}")
        line = key_line(file, dotted) if file is not None else None
        yield (
            "problem",
            (f"{file}: " if file is not None else "")
            + f"{dotted}: argv[0] {argv0!r} is not an executable on the PATH upstream {key} gets"
            + (f" (line {line})" if line is not None else ""),
        )


def _folder(config: Config, upstream: UpstreamConfig) -> Path:
    """Where the daemon runs it: its project's folder, else the configuration's."""
    return upstream.project or (config.files[0].parent if config.files else Path.cwd())


def _files_of(config: Config, upstream: UpstreamConfig) -> list[Path]:
    """The files that may declare it: its project's file, else the global ones."""
    return [f for f in config.files if (f.parent == upstream.project) == (upstream.project is not None)]
