"""The configuration model: frozen tables for [mcp], [mcp.NAME], [mcp_policy.NAME] and [harness.NAME]."""

from __future__ import annotations

import importlib.util
import ipaddress
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from harness.clients import CLIENTS
from harness.config.frozen import FrozenMap, FrozenMapping
from harness.naming import project_key
from harness.vocabulary import Adapter, ArgsMode, Exposure, Tier

UPSTREAM_NAME = r"^[a-z0-9-]+$"
"""Upstream keys: they become tool-name prefixes (``gitea__create_issue``)."""
TABLE_NAME = r"^[A-Za-z0-9_.-]+$"
"""Policy and harness names."""
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""Environment variable names, and the NAME of a ``${NAME}`` reference."""
RESERVED_UPSTREAM_NAMES = frozenset({"harness"})
"""The gateway's own namespace; no upstream may take it."""

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Count = Annotated[StrictInt, Field(ge=1)]
UpstreamName = Annotated[StrictStr, Field(pattern=UPSTREAM_NAME)]
TableName = Annotated[StrictStr, Field(pattern=TABLE_NAME)]
EnvName = Annotated[StrictStr, Field(pattern=ENV_NAME)]
Argv = Annotated[tuple[NonEmptyStr, ...], Field(min_length=1)]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class McpSettings(BaseModel):
    """The settings keys of ``[mcp]`` (its sub-tables are upstreams, see :class:`UpstreamConfig`)."""

    model_config = _FROZEN

    call_log_args: ArgsMode = "redacted"
    call_log_days: Count = 30
    prompt_paths: tuple[Path, ...] = ()
    skill_paths: tuple[Path, ...] = ()
    listen: StrictStr = ""
    listen_unidentified_peers: Literal["refuse", "allow"] = "refuse"
    metrics_listen: StrictStr = ""
    export_telemetry: StrictBool = False
    default_policy: StrictStr = ""

    @field_validator("export_telemetry")
    @classmethod
    def _otel_installed(cls, value: bool) -> bool:
        needed = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
        if value and not all(importlib.util.find_spec(name) is not None for name in needed):
            raise ValueError("needs the optional extra: pip install 'harness-gateway[otel]'")
        return value

    @field_validator("metrics_listen", "listen")
    @classmethod
    def _loopback(cls, value: str) -> str:
        if value:
            loopback_address(value)
        return value


def loopback_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` with a loopback host (127.0.0.0/8, ::1 or localhost); ValueError otherwise."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if host == "localhost":
        return host, int(port_text)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{host!r} is not an IP address") from None
    if not address.is_loopback:
        raise ValueError(f"{host} is not a loopback address; the gateway listens on loopback only")
    return host, int(port_text)


SETTINGS_KEYS = frozenset(McpSettings.model_fields)
"""Keys of ``[mcp]`` that are settings; every other table in ``[mcp]`` is an upstream."""


class UpstreamConfig(BaseModel):
    """One ``[mcp.NAME]`` upstream: a stdio child (``argv``) or a Streamable HTTP server (``url``).

    ``env`` and ``headers`` hold values as written: ``${NAME}`` references stay unresolved until
    :func:`harness.config.resolve_upstream_env` reads ``env_file`` at spawn. Durations are seconds.
    ``project`` is set by the loader, never by a file: the folder of the project file that declared
    the table (None: the global configuration).
    """

    model_config = _FROZEN

    name: UpstreamName
    argv: Argv | None = None
    url: NonEmptyStr | None = None
    env_file: Path | None = None
    env: FrozenMapping[EnvName, StrictStr] = FrozenMap[str, str]()
    headers: FrozenMapping[NonEmptyStr, StrictStr] = FrozenMap[str, str]()
    timeout: Annotated[float, Field(gt=0)] = 60.0
    max_concurrency: Count = 8
    breaker_failures: Count = 5
    breaker_cooldown: Annotated[float, Field(gt=0)] = 30.0
    restart_delay: Annotated[float, Field(ge=0)] = 1.0
    read_tools: tuple[NonEmptyStr, ...] = ()
    write_tools: tuple[NonEmptyStr, ...] = ()
    shared: StrictBool = True
    project: Path | None = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
                raise ValueError("must be an http:// or https:// URL (Streamable HTTP)")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> UpstreamConfig:
        if self.name in RESERVED_UPSTREAM_NAMES or self.name in SETTINGS_KEYS:
            raise ValueError(f"{self.name!r} is reserved and cannot name an upstream")
        if (self.argv is None) == (self.url is None):
            raise ValueError("set exactly one of argv (stdio) or url (Streamable HTTP)")
        return self

    @property
    def kind(self) -> Literal["stdio", "http"]:
        """``stdio`` for an ``argv`` upstream, ``http`` for a ``url`` one."""
        return "http" if self.url is not None else "stdio"

    @property
    def key(self) -> str:
        """How the daemon, its events and the call log name it: the NAME of a global upstream,
        ``NAME@<project id>`` of a project's (:func:`harness.naming.project_key`)."""
        return self.name if self.project is None else project_key(self.name, self.project)


class PolicyConfig(BaseModel):
    """One ``[mcp_policy.NAME]``: which upstreams and tools a harness sees, and how."""

    model_config = _FROZEN

    name: TableName
    servers: tuple[NonEmptyStr, ...] = ()
    tools: tuple[NonEmptyStr, ...] = ()
    deny: tuple[NonEmptyStr, ...] = ()
    exposure: Exposure = "full"
    top_k: Count = 8
    max_description_chars: Annotated[StrictInt, Field(ge=20)] = 300


class HarnessConfig(BaseModel):
    """One ``[harness.NAME]``: an agent the daemon spawns, and its MCP reach."""

    model_config = _FROZEN

    name: TableName
    harness: Adapter = "generic"
    argv: tuple[NonEmptyStr, ...] = ()
    workdir: Path | None = None
    env_file: Path | None = None
    model: StrictStr = ""
    mcp_policy: StrictStr = ""
    mcp_allow: tuple[Tier, ...] = ("read",)
    mcp_exclusive: StrictBool = False
    autostart: StrictBool = True

    @model_validator(mode="after")
    def _spawnable(self) -> HarnessConfig:
        if self.autostart and not self.argv:
            raise ValueError("argv must not be empty when autostart is true")
        return self


class Config(BaseModel):
    """A whole, validated configuration; ``files`` are the files read, in order (project files last).

    ``upstreams`` holds the global upstreams and every project's, by key (:attr:`UpstreamConfig.key`);
    ``projects`` the project folder of each harness whose workdir holds a project file.
    """

    model_config = _FROZEN

    mcp: McpSettings = McpSettings()
    upstreams: FrozenMapping[str, UpstreamConfig] = FrozenMap[str, UpstreamConfig]()
    policies: FrozenMapping[str, PolicyConfig] = FrozenMap[str, PolicyConfig]()
    harnesses: FrozenMapping[str, HarnessConfig] = FrozenMap[str, HarnessConfig]()
    projects: FrozenMapping[str, Path] = FrozenMap[str, Path]()
    project_digests: FrozenMapping[Path, str] = FrozenMap[Path, str]()
    """Each project file read (resolved) → the SHA-256 of the bytes its upstreams came from."""
    files: tuple[Path, ...] = ()

    @model_validator(mode="after")
    def _keyed_by_name(self) -> Config:
        keyed: tuple[tuple[str, str], ...] = (
            *((key, entry.key) for key, entry in self.upstreams.items()),
            *((key, entry.name) for key, entry in self.policies.items()),
            *((key, entry.name) for key, entry in self.harnesses.items()),
        )
        for key, own in keyed:
            if key != own:
                raise ValueError(f"key {key!r} holds an entry named {own!r}")
        return self

    @property
    def upstream_names(self) -> frozenset[str]:
        """Every NAME a policy's ``servers`` may give: the global upstreams' and the projects'."""
        return frozenset(upstream.name for upstream in self.upstreams.values())

    def project_of(self, harness: str | None) -> Path | None:
        """The project folder of a harness (None: no project file in its workdir, or no harness)."""
        return self.projects.get(harness) if harness is not None else None

    def upstream_for(self, name: str, project: Path | None) -> UpstreamConfig | None:
        """What ``name`` (a NAME, or a key) means to a harness of ``project``: a global upstream, or
        that project's own; never another project's (None)."""
        upstream = self.upstreams.get(name)
        if upstream is None and project is not None:
            upstream = self.upstreams.get(project_key(name, project))
        return upstream if upstream is not None and upstream.project in (None, project) else None

    def policy_for(self, harness: str) -> PolicyConfig | None:
        """The harness's ``mcp_policy``, else ``[mcp] default_policy``, else None; KeyError if unknown."""
        name = self.harnesses[harness].mcp_policy or self.mcp.default_policy
        return self.policies[name] if name else None

    def exposure_for(self, harness: str) -> Exposure:
        """The harness's exposure mode: its policy's ``exposure`` if the policy sets it, else its
        client's default (:data:`harness.clients.CLIENTS`); KeyError if unknown."""
        policy = self.policy_for(harness)
        if policy is not None and "exposure" in policy.model_fields_set:
            return policy.exposure
        return CLIENTS[self.harnesses[harness].harness].default_exposure


def empty_config() -> Config:
    """The configuration of no file at all: default settings, no upstreams, policies or harnesses."""
    return Config()
