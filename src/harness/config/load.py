"""Reading configuration files: the main file, its ``harness_d/*.toml`` drop-ins, checks and merge."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from harness.config import model
from harness.config.durations import parse_duration
from harness.config.envfile import check_upstream_references
from harness.config.errors import ConfigError
from harness.config.model import RESERVED_UPSTREAM_NAMES, SETTINGS_KEYS, TABLE_NAME, UPSTREAM_NAME
from harness.config.unbuilt import refuse_unbuilt

M = TypeVar("M", bound=BaseModel)

DROP_IN_DIR = "harness_d"
_SECTIONS = ("mcp", "mcp_policy", "harness")
_DURATION_KEYS = frozenset({"timeout", "breaker_cooldown", "restart_delay"})
_PATH_KEYS = {
    "mcp": frozenset({"env_file"}),
    "harness": frozenset({"workdir", "env_file"}),
    "settings": frozenset({"prompt_paths", "skill_paths"}),
}
_REASONS = {
    "missing": "required",
    "extra_forbidden": "unknown key",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "dict_type": "must be a table",
    "path_type": "must be a path (a string)",
    "string_too_short": "must not be empty",
    "too_short": "must not be empty",
}


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
    config = builder.build(tuple(files))
    check_project_files(config)
    return config


PROJECT_FILE = "harness.toml"


def check_project_files(config: model.Config) -> None:
    """Refuse what a project file (``harness.toml`` in a harness's workdir) may not say.

    Policies and a harness's ``mcp_policy`` / ``mcp_allow`` are global-only: a cloned repository
    must not widen its own harness's reach. Project-scoped ``[mcp.NAME]`` upstreams are the one
    thing a project file may declare; they are not built yet.
    """
    read = {f.resolve() for f in config.files}
    for harness in config.harnesses.values():
        if harness.workdir is None:
            continue
        project = (harness.workdir / PROJECT_FILE).resolve()
        if project in read or not project.is_file():
            continue
        read.add(project)
        document = read_toml(project)
        for section, value in document.items():
            if section == "mcp_policy":
                raise ConfigError(
                    project, section, "policies are global-only; a project file may not set them"
                )
            if section == "harness" and isinstance(value, dict):
                for name, table in value.items():
                    for key in ("mcp_policy", "mcp_allow"):
                        if isinstance(table, dict) and key in table:
                            reason = f"{key} is global-only; a project file may not set it"
                            raise ConfigError(project, f"harness.{name}.{key}", reason)
            if section != "mcp":
                raise ConfigError(project, section, "a project file may only declare [mcp.NAME] upstreams")
            for name in _table(project, "mcp", value):
                raise ConfigError(project, f"mcp.{name}", "project-scoped upstreams: not supported yet")


def read_toml(file: Path) -> dict[str, Any]:
    """A TOML file's document; ConfigError naming the file when it cannot be read or parsed."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(file, "", f"cannot read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(file, "", "not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(file, "", f"invalid TOML: {exc}") from None


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
        mcp = _table(file, "mcp", document.get("mcp", {}))
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
            for name, value in _table(file, section, document.get(section, {})).items():
                self._add_named(file, section, name, _table(file, f"{section}.{name}", value))

    def _add_settings(self, file: Path, raw: dict[str, Any]) -> None:
        raw = _with_paths(file, "mcp", raw, _PATH_KEYS["settings"])
        settings = validate_table(model.McpSettings, file, "mcp", raw)
        refuse_unbuilt(file, "mcp", None, settings)
        for key in raw:
            self.settings[key] = getattr(settings, key)
            self.origin[f"mcp.{key}"] = file

    def _add_upstream(self, file: Path, name: str, raw: dict[str, Any]) -> None:
        key = f"mcp.{name}"
        if not re.fullmatch(UPSTREAM_NAME, name):
            raise ConfigError(file, key, "upstream names use only a-z, 0-9 and '-'")
        if name in RESERVED_UPSTREAM_NAMES:
            raise ConfigError(file, key, f"{name!r} is reserved and cannot name an upstream")
        self._claim(file, key)
        raw = _with_paths(file, key, raw, _PATH_KEYS["mcp"])
        for duration in _DURATION_KEYS & raw.keys():
            raw[duration] = _duration(file, f"{key}.{duration}", raw[duration])
        upstream = validate_table(model.UpstreamConfig, file, key, _named(file, key, name, raw))
        refuse_unbuilt(file, "mcp", name, upstream)
        check_upstream_references(file, upstream)
        self.upstreams[name] = upstream

    def _add_named(self, file: Path, section: str, name: str, raw: dict[str, Any]) -> None:
        key = f"{section}.{name}"
        if not re.fullmatch(TABLE_NAME, name):
            raise ConfigError(file, key, "names use only A-Z, a-z, 0-9, '_', '.' and '-'")
        self._claim(file, key)
        if section == "harness":
            raw = _with_paths(file, key, raw, _PATH_KEYS["harness"])
            harness = validate_table(model.HarnessConfig, file, key, _named(file, key, name, raw))
            refuse_unbuilt(file, section, name, harness)
            self.harnesses[name] = harness
        else:
            self.policies[name] = policy_table(file, name, raw)

    def _claim(self, file: Path, key: str) -> None:
        first = self.origin.setdefault(key, file)
        if first != file:
            raise ConfigError(file, key, f"already defined in {first}")

    def build(self, files: tuple[Path, ...]) -> model.Config:
        """The merged configuration, after cross references are checked."""
        for name, policy in self.policies.items():
            for server in policy.servers:
                if server not in self.upstreams:
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
            upstreams=self.upstreams,
            policies=self.policies,
            harnesses=self.harnesses,
            files=files,
        )


def policy_table(file: Path, name: str, raw: dict[str, Any]) -> model.PolicyConfig:
    """One ``[mcp_policy.NAME]`` table of ``file`` as the loader reads it (keys, values, unbuilt keys,
    globs); ConfigError if bad. Its ``servers`` are checked against the upstreams by the caller."""
    key = f"mcp_policy.{name}"
    policy = validate_table(model.PolicyConfig, file, key, _named(file, key, name, raw))
    refuse_unbuilt(file, "mcp_policy", name, policy)
    for field_name in ("tools", "deny"):
        for glob in getattr(policy, field_name):
            if (problem := glob_problem(glob)) is not None:
                raise ConfigError(file, f"{key}.{field_name}", f"{glob!r}: {problem}")
    return policy


def glob_problem(glob: str) -> str | None:
    """Why a tool-name glob is not one (an unclosed ``[``), or None."""
    depth_open = -1
    for i, char in enumerate(glob):
        if char == "[" and depth_open < 0:
            depth_open = i
        elif char == "]" and depth_open >= 0 and i > depth_open + 1:
            depth_open = -1
    return None if depth_open < 0 else f"unclosed '[' at position {depth_open + 1}"


def _table(file: Path, key: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(file, key, "must be a table")
    return value


def _named(file: Path, key: str, name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with its ``name`` field set from the table key; a ``name`` key in the file is unknown."""
    if "name" in raw:
        raise ConfigError(file, f"{key}.name", "unknown key")
    return {**raw, "name": name}


def _with_paths(file: Path, key: str, raw: dict[str, Any], path_keys: frozenset[str]) -> dict[str, Any]:
    """``raw`` with its path strings made absolute: ``~`` expanded, relative to ``file``'s folder."""
    raw = dict(raw)
    for name in path_keys & raw.keys():
        value = raw[name]
        if isinstance(value, list):
            raw[name] = [_path(file, f"{key}.{name}[{i}]", item) for i, item in enumerate(value)]
        else:
            raw[name] = _path(file, f"{key}.{name}", value)
    return raw


def _path(file: Path, key: str, value: object) -> object:
    if not isinstance(value, str):
        return value  # the model rejects it with a typed reason
    if not value:
        raise ConfigError(file, key, "must not be empty")
    path = Path(value).expanduser()
    return path if path.is_absolute() else file.parent / path


def _duration(file: Path, key: str, value: object) -> float:
    if not isinstance(value, str):
        raise ConfigError(file, key, 'must be a duration string such as "30s"')
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigError(file, key, str(exc)) from None


def validate_table(model: type[M], file: Path, key: str, raw: dict[str, Any]) -> M:
    """``raw`` as ``model``; ConfigError naming ``file``, the dotted key under ``key`` and the reason."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _config_error(file, key, exc.errors(include_url=False)[0]) from None


def _config_error(file: Path, key: str, error: ErrorDetails) -> ConfigError:
    """One pydantic error as a ConfigError: a dotted key and a short reason, never the input."""
    dotted = key
    loc = [part for part in error["loc"] if part != "[key]"]
    if loc[:1] != ["name"]:
        for part in loc:
            dotted += f"[{part}]" if isinstance(part, int) else f".{part}"
    ctx = error.get("ctx", {})
    kind = error["type"]
    if kind in _REASONS:
        reason = _REASONS[kind]
    elif kind == "literal_error":
        reason = f"must be {ctx['expected']}"
    elif kind == "greater_than":
        reason = f"must be > {ctx['gt']:g}"
    elif kind == "greater_than_equal":
        reason = f"must be >= {ctx['ge']:g}"
    elif kind == "string_pattern_mismatch":
        reason = f"must match {ctx['pattern']}"
    elif kind == "value_error":
        reason = str(ctx["error"])
    else:
        reason = error["msg"]
    return ConfigError(file, dotted, reason)
