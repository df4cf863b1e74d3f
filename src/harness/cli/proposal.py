"""The file ``harness policy what-if --policy FILE`` reads, and the configuration it proposes.

FILE holds ``[mcp_policy.NAME]`` tables, each replacing the current table of that name (or adding
one); ``[harness.NAME]`` tables holding only ``mcp_policy`` and/or ``mcp_allow``, replacing those
two keys of a configured harness; and ``[mcp]`` holding only ``default_policy``. Everything else a
harness has (and every policy FILE does not name) stays as configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import Config, ConfigError, HarnessConfig, McpSettings, PolicyConfig
from harness.config.tables import policy_table, read_toml, validate_table

HARNESS_KEYS = ("mcp_policy", "mcp_allow")
"""What a proposal may change on a harness."""
SETTINGS_KEYS = ("default_policy",)
"""What a proposal may change in ``[mcp]``."""


@dataclass(frozen=True)
class Proposal:
    """The tables of one policy file, validated on their own (references are checked on apply)."""

    file: Path
    policies: Mapping[str, PolicyConfig]
    harnesses: Mapping[str, Mapping[str, Any]]
    """Per harness, the proposed ``mcp_policy`` / ``mcp_allow`` values as written."""
    settings: Mapping[str, Any]


def _table(file: Path, key: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(file, key, "must be a table")
    return value


def _only(file: Path, key: str, table: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for name in table:
        if name not in allowed:
            reason = f"a policy file may set only {' and '.join(allowed)} here"
            raise ConfigError(file, f"{key}.{name}", reason)


def read_proposal(file: Path) -> Proposal:
    """The policy file's tables; ConfigError (file, key, reason) for anything it may not say."""
    document = read_toml(file)
    for section in document:
        if section not in ("mcp_policy", "harness", "mcp"):
            raise ConfigError(file, section, "unknown key: a policy file holds [mcp_policy.NAME] tables")
    policies = {
        name: policy_table(file, name, _table(file, f"mcp_policy.{name}", raw))
        for name, raw in _table(file, "mcp_policy", document.get("mcp_policy", {})).items()
    }
    harnesses: dict[str, Mapping[str, Any]] = {}
    for name, raw in _table(file, "harness", document.get("harness", {})).items():
        table = _table(file, f"harness.{name}", raw)
        _only(file, f"harness.{name}", table, HARNESS_KEYS)
        harnesses[name] = table
    settings = _table(file, "mcp", document.get("mcp", {}))
    _only(file, "mcp", settings, SETTINGS_KEYS)
    if not (policies or harnesses or settings):
        raise ConfigError(file, "", "proposes nothing: give [mcp_policy.NAME] tables")
    return Proposal(file, policies, harnesses, settings)


def apply_proposal(config: Config, proposal: Proposal) -> Config:
    """``config`` with the proposal's tables in place; ConfigError naming the policy file when a
    proposed table names an upstream, a harness or a policy the result does not have."""
    file = proposal.file
    policies = {**config.policies, **proposal.policies}
    for name, policy in proposal.policies.items():
        for server in policy.servers:
            if server not in config.upstream_names:
                reason = f"no upstream named {server!r} in the configuration"
                raise ConfigError(file, f"mcp_policy.{name}.servers", reason)
    harnesses = dict(config.harnesses)
    for name, override in proposal.harnesses.items():
        key = f"harness.{name}"
        current = config.harnesses.get(name)
        if current is None:
            raise ConfigError(file, key, "no harness of that name in the configuration")
        harness = validate_table(HarnessConfig, file, key, {**current.model_dump(), **override})
        if harness.mcp_policy and harness.mcp_policy not in policies:
            raise ConfigError(file, f"{key}.mcp_policy", f"no policy named {harness.mcp_policy!r}")
        harnesses[name] = harness
    mcp = validate_table(McpSettings, file, "mcp", {**config.mcp.model_dump(), **proposal.settings})
    if mcp.default_policy and mcp.default_policy not in policies:
        raise ConfigError(file, "mcp.default_policy", f"no policy named {mcp.default_policy!r}")
    return Config(
        mcp=mcp,
        upstreams=config.upstreams,
        policies=policies,
        harnesses=harnesses,
        projects=config.projects,
        files=config.files,
    )
