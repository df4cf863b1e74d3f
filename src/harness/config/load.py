"""Reading configuration files: the main file, its ``harness_d/*.toml`` drop-ins and the harnesses'
project files; checks and merge."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import model
from harness.config.errors import ConfigError
from harness.config.model import SETTINGS_KEYS, TABLE_NAME
from harness.config.projects import read_projects
from harness.config.tables import (
    PATH_KEYS,
    named,
    policy_table,
    read_toml,
    table,
    upstream_table,
    validate_table,
    with_paths,
)
from harness.config.unbuilt import refuse_unbuilt

DROP_IN_DIR = "harness_d"
_SECTIONS = ("mcp", "mcp_policy", "harness")


def default_config_path() -> Path:
    """``$XDG_CONFIG_HOME/harness/harness.toml``, else ``~/.config/harness/harness.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "harness" / "harness.toml"


def load_config(path: Path | None = None) -> model.Config:
    """Read ``path`` (default :func:`default_config_path`) and its drop-ins; ConfigError if bad.

    A missing file at the default path is no error (then only drop-ins, if any, are read); a
    missing file given explicitly is.
    """
    main = (default_config_path() if path is None else Path(path)).expanduser().absolute()
    files: list[Path] = []
    if main.exists() or path is not None:
        if not main.exists():
            raise ConfigError(main, "", "no such file")
        files.append(main)
    drop_ins = main.parent / DROP_IN_DIR
    if drop_ins.is_dir():
        files.extend(sorted((p for p in drop_ins.glob("*.toml") if p.is_file()), key=lambda p: p.name))
    if not files:
        return model.empty_config()
    builder = _Builder()
    for file in files:
        builder.add(file, read_toml(file))
    return builder.build(tuple(files))


@dataclass
class _Builder:
    """Accumulates validated tables file by file, remembering which file set what."""

    settings: dict[str, Any] = field(default_factory=dict)
    upstreams: dict[str, model.UpstreamConfig] = field(default_factory=dict)
    policies: dict[str, model.PolicyConfig] = field(default_factory=dict)
    harnesses: dict[str, model.HarnessConfig] = field(default_factory=dict)
    origin: dict[str, Path] = field(default_factory=dict)
    """Dotted key (``mcp.gitea``, ``mcp.default_policy``) → the file that set it."""

    def add(self, file: Path, document: dict[str, Any]) -> None:
        for key in document:
            if key not in _SECTIONS:
                raise ConfigError(file, key, "unknown key")
        mcp = table(file, "mcp", document.get("mcp", {}))
        settings: dict[str, Any] = {}
        for key, value in mcp.items():
            if key in SETTINGS_KEYS:
                if isinstance(value, dict):
                    raise ConfigError(file, f"mcp.{key}", "is a setting of [mcp], not an upstream")
                settings[key] = value
            elif isinstance(value, dict):
                self._add_upstream(file, key, value)
            else:
                raise ConfigError(file, f"mcp.{key}", "unknown key")
        self._add_settings(file, settings)
        for section in ("mcp_policy", "harness"):
            for name, value in table(file, section, document.get(section, {})).items():
                self._add_named(file, section, name, table(file, f"{section}.{name}", value))

    def _add_settings(self, file: Path, raw: dict[str, Any]) -> None:
        raw = with_paths(file, "mcp", raw, PATH_KEYS["settings"])
        settings = validate_table(model.McpSettings, file, "mcp", raw)
        refuse_unbuilt(file, "mcp", None, settings)
        for key in raw:
            self.settings[key] = getattr(settings, key)
            self.origin[f"mcp.{key}"] = file

    def _add_upstream(self, file: Path, name: str, raw: dict[str, Any]) -> None:
        self._claim(file, f"mcp.{name}")
        self.upstreams[name] = upstream_table(file, name, raw)

    def _add_named(self, file: Path, section: str, name: str, raw: dict[str, Any]) -> None:
        key = f"{section}.{name}"
        if not re.fullmatch(TABLE_NAME, name):
            raise ConfigError(file, key, "names use only A-Z, a-z, 0-9, '_', '.' and '-'")
        self._claim(file, key)
        if section == "harness":
            raw = with_paths(file, key, raw, PATH_KEYS["harness"])
            harness = validate_table(model.HarnessConfig, file, key, named(file, key, name, raw))
            refuse_unbuilt(file, section, name, harness)
            self.harnesses[name] = harness
        else:
            self.policies[name] = policy_table(file, name, raw)

    def _claim(self, file: Path, key: str) -> None:
        first = self.origin.setdefault(key, file)
        if first != file:
            raise ConfigError(file, key, f"already defined in {first}")

    def build(self, files: tuple[Path, ...]) -> model.Config:
        """The merged configuration with the harnesses' project files, after cross references are
        checked (a policy's ``servers`` name global upstreams or projects' upstreams by NAME)."""
        declared = {name: self.origin[f"mcp.{name}"] for name in self.upstreams}
        projects = read_projects(self.harnesses, files, declared)
        names = self.upstreams.keys() | {upstream.name for upstream in projects.upstreams.values()}
        for name, policy in self.policies.items():
            for server in policy.servers:
                if server not in names:
                    key = f"mcp_policy.{name}"
                    raise ConfigError(self.origin[key], f"{key}.servers", f"no upstream named {server!r}")
        for name, harness in self.harnesses.items():
            if harness.mcp_policy and harness.mcp_policy not in self.policies:
                key = f"harness.{name}"
                reason = f"no policy named {harness.mcp_policy!r}"
                raise ConfigError(self.origin[key], f"{key}.mcp_policy", reason)
        for name in self.harnesses.keys() & self.upstreams.keys():
            key = f"harness.{name}"
            reason = f"{name!r} also names an upstream ([mcp.{name}]); `harness restart {name}` must mean one"
            raise ConfigError(self.origin[key], key, reason)
        default_policy = self.settings.get("default_policy", "")
        if default_policy and default_policy not in self.policies:
            key = "mcp.default_policy"
            raise ConfigError(self.origin[key], key, f"no policy named {default_policy!r}")
        return model.Config(
            mcp=model.McpSettings(**self.settings),
            upstreams={**self.upstreams, **projects.upstreams},
            policies=self.policies,
            harnesses=self.harnesses,
            projects=projects.folders,
            project_digests=projects.digests,
            files=files + projects.files,
        )
