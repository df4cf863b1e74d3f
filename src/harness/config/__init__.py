"""Configuration: the TOML files, their model, env_file secrets and the per-harness config hash."""

from __future__ import annotations

from harness.config.durations import parse_duration
from harness.config.envfile import parse_env_file, resolve_upstream_env, resolve_upstream_headers
from harness.config.errors import ConfigError
from harness.config.hashing import config_hash
from harness.config.load import default_config_path, load_config
from harness.config.model import (
    Config,
    HarnessConfig,
    McpSettings,
    PolicyConfig,
    UpstreamConfig,
    empty_config,
)
from harness.config.unbuilt import NOT_SUPPORTED_YET

__all__ = [
    "NOT_SUPPORTED_YET",
    "Config",
    "ConfigError",
    "HarnessConfig",
    "McpSettings",
    "PolicyConfig",
    "UpstreamConfig",
    "config_hash",
    "default_config_path",
    "empty_config",
    "load_config",
    "parse_duration",
    "parse_env_file",
    "resolve_upstream_env",
    "resolve_upstream_headers",
]
