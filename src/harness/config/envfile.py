"""env_file parsing and ``${NAME}`` secret references in an upstream's ``env`` and ``headers``.

A reference is resolved only from the upstream's own env_file, never from the daemon's environment,
and no error message ever quotes a value read from an env_file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from harness.config.errors import ConfigError
from harness.config.model import UpstreamConfig

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")


def references(value: str) -> tuple[str, ...]:
    """The NAMEs of the ``${NAME}`` references in ``value``; ValueError on a malformed ``${``."""
    if "${" in _REFERENCE.sub("", value):
        raise ValueError("malformed ${...} reference (NAME is letters, digits and '_')")
    return tuple(_REFERENCE.findall(value))


def parse_env_text(path: Path, text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of ``text`` (read from ``path``, named in errors); see :func:`parse_env_file`."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ConfigError(path, "", f"line {number}: expected KEY=VALUE")
        key, value = match.groups()
        if value[:1] in {"'", '"'}:
            if len(value) < 2 or value[-1] != value[0]:
                raise ConfigError(path, "", f"line {number}: unterminated quote")
            value = value[1:-1]
        values[key] = value
    return values


def parse_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines; blank lines and ``#`` comments skipped, ``export `` and quotes stripped.

    ConfigError names the file (and the line number of a malformed line, never its content).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(path, "", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(path, "", "not valid UTF-8") from None
    return parse_env_text(path, text)


def check_upstream_references(file: Path, up: UpstreamConfig) -> None:
    """At load: every ``${NAME}`` of ``up`` has an env_file that is readable and defines NAME.

    ``file`` is the configuration file that declared ``up``, named in errors about its keys.
    """
    tables = (("env", up.env), ("headers", up.headers))
    for field, table in tables:
        for key, value in table.items():
            try:
                names = references(value)
            except ValueError as exc:
                raise ConfigError(file, f"mcp.{up.name}.{field}.{key}", str(exc)) from None
            if names and up.env_file is None:
                reason = f"uses ${{{names[0]}}} but has no env_file"
                raise ConfigError(file, f"mcp.{up.name}.{field}.{key}", reason)
    if up.env_file is None:
        return
    try:
        text = up.env_file.read_text(encoding="utf-8")
    except OSError as exc:
        reason = f"cannot read {up.env_file}: {exc.strerror or exc}"
        raise ConfigError(file, f"mcp.{up.name}.env_file", reason) from None
    except UnicodeDecodeError:
        raise ConfigError(file, f"mcp.{up.name}.env_file", f"{up.env_file} is not valid UTF-8") from None
    defined = parse_env_text(up.env_file, text)
    for field, table in tables:
        for key, value in table.items():
            for name in references(value):
                if name not in defined:
                    raise ConfigError(
                        file, f"mcp.{up.name}.{field}.{key}", f"${{{name}}} is not defined in {up.env_file}"
                    )


def _resolve(up: UpstreamConfig, field: str, table: Mapping[str, str]) -> dict[str, str]:
    file = str(up.env_file or "")
    secrets: dict[str, str] | None = None
    resolved: dict[str, str] = {}
    for key, value in table.items():
        dotted = f"mcp.{up.name}.{field}.{key}"
        try:
            names = references(value)
        except ValueError as exc:
            raise ConfigError(file, dotted, str(exc)) from None
        if not names:
            resolved[key] = value
            continue
        if up.env_file is None:
            raise ConfigError(file, dotted, f"uses ${{{names[0]}}} but has no env_file")
        if secrets is None:
            secrets = parse_env_file(up.env_file)
        for name in names:
            if name not in secrets:
                raise ConfigError(file, dotted, f"${{{name}}} is not defined in {up.env_file}")
        resolved[key] = _substitute(value, secrets)
    return resolved


def _substitute(value: str, secrets: Mapping[str, str]) -> str:
    return _REFERENCE.sub(lambda match: secrets[match.group(1)], value)


def resolve_upstream_env(up: UpstreamConfig) -> dict[str, str]:
    """``up.env`` with every ``${NAME}`` replaced from ``up.env_file`` (never from ``os.environ``).

    Only the ``env`` table is returned; the env_file is read now, so call this at spawn.
    """
    return _resolve(up, "env", up.env)


def resolve_upstream_headers(up: UpstreamConfig) -> dict[str, str]:
    """``up.headers`` with every ``${NAME}`` replaced from ``up.env_file`` (never from ``os.environ``)."""
    return _resolve(up, "headers", up.headers)
