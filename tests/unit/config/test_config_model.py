import pickle
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.config import (
    Config,
    ConfigError,
    HarnessConfig,
    McpSettings,
    PolicyConfig,
    UpstreamConfig,
    empty_config,
)


def test_a_config_error_reads_file_key_and_reason():
    error = ConfigError("/etc/h.toml", "mcp.gitea.timeout", "must be > 0")
    assert str(error) == "/etc/h.toml: mcp.gitea.timeout: must be > 0"
    assert (error.file, error.key, error.reason) == ("/etc/h.toml", "mcp.gitea.timeout", "must be > 0")


def test_a_file_level_config_error_leaves_the_key_out():
    assert str(ConfigError(Path("/etc/h.toml"), "", "no such file")) == "/etc/h.toml: no such file"


def test_a_config_error_survives_pickling():
    error = pickle.loads(pickle.dumps(ConfigError("f", "k", "r")))
    assert (error.file, error.key, error.reason) == ("f", "k", "r")


def test_an_upstream_with_argv_is_stdio_and_one_with_url_is_http():
    assert UpstreamConfig(name="a", argv=("x",)).kind == "stdio"
    assert UpstreamConfig(name="b", url="http://127.0.0.1:9000/mcp").kind == "http"


def test_an_upstream_needs_exactly_one_of_argv_and_url():
    with pytest.raises(ValidationError, match="exactly one"):
        UpstreamConfig(name="a")
    with pytest.raises(ValidationError, match="exactly one"):
        UpstreamConfig(name="a", argv=("x",), url="http://h/mcp")


def test_models_are_frozen_and_their_mappings_read_only():
    up = UpstreamConfig(name="a", argv=("x",), env={"K": "v"})
    with pytest.raises(ValidationError):
        up.timeout = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        up.env["K"] = "w"  # type: ignore[index]
    assert up.env == {"K": "v"}
    assert hash(up) == hash(UpstreamConfig(name="a", argv=("x",), env={"K": "v"}))


def test_the_empty_config_has_default_settings_and_no_tables():
    config = empty_config()
    assert config.mcp == McpSettings()
    assert (dict(config.upstreams), dict(config.policies), dict(config.harnesses)) == ({}, {}, {})
    assert config.files == ()


def _config(harness_policy: str, default_policy: str) -> Config:
    return Config(
        mcp=McpSettings(default_policy=default_policy),
        policies={"a": PolicyConfig(name="a"), "b": PolicyConfig(name="b")},
        harnesses={"h": HarnessConfig(name="h", argv=("x",), mcp_policy=harness_policy)},
    )


def test_policy_for_prefers_the_harness_policy_over_the_default():
    assert _config("a", "b").policy_for("h") == PolicyConfig(name="a")


def test_policy_for_falls_back_to_the_default_policy():
    assert _config("", "b").policy_for("h") == PolicyConfig(name="b")


def test_policy_for_is_none_without_either_policy():
    assert _config("", "").policy_for("h") is None


def test_policy_for_an_unknown_harness_is_a_key_error():
    with pytest.raises(KeyError):
        _config("", "").policy_for("nobody")


def test_a_config_refuses_a_table_keyed_by_another_name():
    with pytest.raises(ValidationError, match="holds an entry named"):
        Config(policies={"a": PolicyConfig(name="b")})
