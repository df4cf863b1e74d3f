"""One configuration table at a time: a TOML file read, a table validated into its model, paths made
absolute and durations parsed, errors naming the file, the dotted key and the reason."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from harness.config import model
from harness.config.durations import parse_duration
from harness.config.envfile import check_upstream_references
from harness.config.errors import ConfigError
from harness.config.model import RESERVED_UPSTREAM_NAMES, UPSTREAM_NAME
from harness.config.unbuilt import refuse_unbuilt

M = TypeVar("M", bound=BaseModel)

DURATION_KEYS = frozenset({"timeout", "breaker_cooldown", "restart_delay"})
PATH_KEYS = {
    "mcp": frozenset({"env_file"}),
    "harness": frozenset({"workdir", "env_file"}),
    "settings": frozenset({"prompt_paths", "skill_paths"}),
}
"""Keys holding paths, by kind of table: relative ones are relative to the file's folder."""
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
_SET_BY_THE_LOADER = ("name", "project")
"""Fields of a table the loader fills in: a file that sets one has an unknown key."""


def read_toml(file: Path) -> dict[str, Any]:
    """A TOML file's document; ConfigError naming the file when it cannot be read or parsed."""
    return parse_toml(file, read_bytes(file))


def read_bytes(file: Path) -> bytes:
    """A configuration file's bytes; ConfigError naming the file when it cannot be read."""
    try:
        return file.read_bytes()
    except OSError as exc:
        raise ConfigError(file, "", f"cannot read: {exc.strerror or exc}") from None


def parse_toml(file: Path, data: bytes) -> dict[str, Any]:
    """The TOML document of ``data`` (read from ``file``); ConfigError naming the file if bad."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(file, "", "not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(file, "", f"invalid TOML: {exc}") from None


def upstream_table(
    file: Path, name: str, raw: dict[str, Any], project: Path | None = None
) -> model.UpstreamConfig:
    """One ``[mcp.NAME]`` table of ``file`` (of the project in ``project``, else global) as the loader
    reads it: the name checked, paths relative to ``file``'s folder, durations parsed, unbuilt keys
    and ``${NAME}`` references checked; ConfigError if bad."""
    key = f"mcp.{name}"
    if not re.fullmatch(UPSTREAM_NAME, name):
        raise ConfigError(file, key, "upstream names use only a-z, 0-9 and '-'")
    if name in RESERVED_UPSTREAM_NAMES:
        raise ConfigError(file, key, f"{name!r} is reserved and cannot name an upstream")
    raw = with_paths(file, key, raw, PATH_KEYS["mcp"])
    for duration in DURATION_KEYS & raw.keys():
        raw[duration] = _duration(file, f"{key}.{duration}", raw[duration])
    raw = named(file, key, name, raw)
    if project is not None:
        raw["project"] = project
    upstream = validate_table(model.UpstreamConfig, file, key, raw)
    if upstream.argv is not None and upstream.headers:
        reason = "only an HTTP upstream (url) sends headers; a stdio upstream (argv) gets env"
        raise ConfigError(file, f"{key}.headers", reason)
    refuse_unbuilt(file, "mcp", name, upstream)
    check_upstream_references(file, upstream)
    return upstream


def policy_table(file: Path, name: str, raw: dict[str, Any]) -> model.PolicyConfig:
    """One ``[mcp_policy.NAME]`` table of ``file`` as the loader reads it (keys, values, unbuilt keys,
    globs); ConfigError if bad. Its ``servers`` are checked against the upstreams by the caller."""
    key = f"mcp_policy.{name}"
    policy = validate_table(model.PolicyConfig, file, key, named(file, key, name, raw))
    refuse_unbuilt(file, "mcp_policy", name, policy)
    for field_name in ("tools", "deny"):
        for glob in getattr(policy, field_name):
            if (problem := glob_problem(glob) or _unreachable(glob, policy.servers)) is not None:
                raise ConfigError(file, f"{key}.{field_name}", f"{glob!r}: {problem}")
    return policy


def _unreachable(glob: str, servers: tuple[str, ...]) -> str | None:
    """Why a glob can match no tool of the policy: its upstream part (before ``__``) is spelled out
    and is none of ``servers`` (``gitt__*``); a wildcard there (``*__read_*``) may match any."""
    prefix, sep, _tool = glob.partition("__")
    if not sep or any(char in prefix for char in "*?["):
        return None
    if prefix in servers:
        return None
    return f"no upstream {prefix!r} in servers ({', '.join(servers) or 'none'}): it matches no tool"


def glob_problem(glob: str) -> str | None:
    """Why a tool-name glob is not one (an unclosed ``[``), or None."""
    depth_open = -1
    for i, char in enumerate(glob):
        if char == "[" and depth_open < 0:
            depth_open = i
        elif char == "]" and depth_open >= 0 and i > depth_open + 1:
            depth_open = -1
    return None if depth_open < 0 else f"unclosed '[' at position {depth_open + 1}"


def table(file: Path, key: str, value: object) -> dict[str, Any]:
    """``value`` if it is a TOML table, else ConfigError naming ``key``."""
    if not isinstance(value, dict):
        raise ConfigError(file, key, "must be a table")
    return value


def named(file: Path, key: str, name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with its ``name`` field set from the table key; a key the loader sets (``name``,
    ``project``) in the file is unknown."""
    for field in _SET_BY_THE_LOADER:
        if field in raw:
            raise ConfigError(file, f"{key}.{field}", "unknown key")
    return {**raw, "name": name}


def with_paths(file: Path, key: str, raw: dict[str, Any], path_keys: frozenset[str]) -> dict[str, Any]:
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
