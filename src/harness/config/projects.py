"""Project files: ``harness.toml`` in a harness's workdir, whose ``[mcp.NAME]`` upstreams serve the
harnesses of that workdir only.

A project file may declare upstreams and nothing else: policies and a harness's ``mcp_policy`` /
``mcp_allow`` are global-only (a cloned repository must not widen its own harness's reach). Its
tables are read like global ones (paths relative to the project's folder), and a NAME a global
upstream has is refused: the project's table would otherwise shadow the global one, or merge with
it, without anyone asking for either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.errors import ConfigError
from harness.config.model import SETTINGS_KEYS, HarnessConfig, UpstreamConfig
from harness.config.tables import parse_toml, read_bytes, table, upstream_table

PROJECT_FILE = "harness.toml"


@dataclass(frozen=True)
class Projects:
    """What the project files of a configuration's harnesses declare."""

    upstreams: dict[str, UpstreamConfig]
    """Every project's upstreams, by key (``NAME@<project id>``)."""
    folders: dict[str, Path]
    """Each harness whose workdir holds a project file: that folder (resolved)."""
    files: tuple[Path, ...]
    """The project files read, in the order of the first harness of each."""
    digests: dict[Path, str]
    """Each project file's SHA-256, of the very bytes its upstreams were read from."""


def digest(data: bytes) -> str:
    """SHA-256 (hex) of a project file's bytes: what an approval records (config/approvals.py)."""
    return hashlib.sha256(data).hexdigest()


def read_projects(
    harnesses: Mapping[str, HarnessConfig], read: Collection[Path], global_upstreams: Mapping[str, Path]
) -> Projects:
    """Read the project file in each harness's workdir (once per folder, skipping the global files
    in ``read``); ``global_upstreams``: each global upstream's NAME and the file that declared it.
    ConfigError naming the project file, the key and the reason when one is bad."""
    global_files = {file.resolve() for file in read}
    upstreams: dict[str, UpstreamConfig] = {}
    folders: dict[str, Path] = {}
    files: list[Path] = []
    digests: dict[Path, str] = {}
    for harness in harnesses.values():
        if harness.workdir is None:
            continue
        folder = harness.workdir.resolve()
        file = folder / PROJECT_FILE
        if file.resolve() in global_files or not file.is_file():
            continue
        folders[harness.name] = folder
        if file in files:
            continue
        files.append(file)
        data = read_bytes(file)  # read once: what is approved is what is run (config/approvals.py)
        digests[file.resolve()] = digest(data)
        for upstream in _upstreams(file, parse_toml(file, data), global_upstreams):
            upstreams[upstream.key] = upstream
    return Projects(upstreams, folders, tuple(files), digests)


def read_project_file(file: Path, data: bytes) -> list[UpstreamConfig]:
    """The upstreams of one project file whose bytes are ``data``, checked as the loader checks them
    (but for shadowing a global upstream); ConfigError naming the key otherwise."""
    return _upstreams(file, parse_toml(file, data), {})


def _upstreams(
    file: Path, document: dict[str, Any], global_upstreams: Mapping[str, Path]
) -> list[UpstreamConfig]:
    """The ``[mcp.NAME]`` tables of one project file; ConfigError for anything else in it."""
    for section, value in document.items():
        if section == "mcp_policy":
            raise ConfigError(file, section, "policies are global-only; a project file may not set them")
        if section == "harness" and isinstance(value, dict):
            for name, harness in value.items():
                for key in ("mcp_policy", "mcp_allow"):
                    if isinstance(harness, dict) and key in harness:
                        reason = f"{key} is global-only; a project file may not set it"
                        raise ConfigError(file, f"harness.{name}.{key}", reason)
        if section != "mcp":
            raise ConfigError(file, section, "a project file may only declare [mcp.NAME] upstreams")
    found = []
    for name, value in table(file, "mcp", document.get("mcp", {})).items():
        key = f"mcp.{name}"
        if name in SETTINGS_KEYS or not isinstance(value, dict):
            raise ConfigError(file, key, "a project file may only declare [mcp.NAME] upstreams")
        if name in global_upstreams:
            reason = (
                f"{name!r} is a global upstream (declared in {global_upstreams[name]}); "
                "a project upstream may not shadow it: rename one of them"
            )
            raise ConfigError(file, key, reason)
        found.append(upstream_table(file, name, table(file, key, value), project=file.parent))
    return found
