"""Each adapter's wiring as data: flags after argv[0], files it writes, what exclusive changes, and
the user's own servers it reads (never writes)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from harness.clients import CLIENTS
from harness.config import Config, HarnessConfig, PolicyConfig
from harness.gateway.harnesses.adapters import (
    BRIDGE_ENV,
    Spawn,
    codex_overrides,
    codex_user_servers,
    crush_user_servers,
    wire,
)
from harness.naming import MAX_EXPOSED_NAME


def _spawn(tmp_path: Path, adapter: str, exclusive: bool = False, env: dict | None = None) -> Spawn:
    cfg = HarnessConfig(
        name="h", harness=adapter, argv=("client", "--flag", "prompt"), mcp_exclusive=exclusive
    )
    return Spawn(
        cfg, "/opt/bin/harness", tmp_path / "clients" / "h", env or {"HOME": str(tmp_path)}, tmp_path
    )


def test_every_exposed_name_fits_64_characters_behind_any_client_prefix():
    assert all(MAX_EXPOSED_NAME + len(t.tool_prefix) <= 64 for t in CLIENTS.values())


def test_generic_changes_nothing_and_writes_nothing(tmp_path):
    wiring = wire(_spawn(tmp_path, "generic"))
    assert wiring.argv == ("client", "--flag", "prompt") and wiring.files == ()
    assert not (tmp_path / "clients").exists()


@pytest.mark.parametrize("exclusive", [False, True])
def test_claude_code_flags_go_after_the_executable_in_equals_form(tmp_path, exclusive):
    wiring = wire(_spawn(tmp_path, "claude-code", exclusive))
    [path] = wiring.files
    expected = [*(["--strict-mcp-config"] if exclusive else []), f"--mcp-config={path}"]
    assert wiring.argv == ("client", *expected, "--flag", "prompt")
    server = json.loads(path.read_text())["mcpServers"]["harness"]
    assert server == {
        "type": "stdio",
        "command": "/opt/bin/harness",
        "args": ["mcp"],
        "env": {name: "${" + name + "}" for name in BRIDGE_ENV},
    }
    assert path.stat().st_mode & 0o777 == 0o600


def test_codex_overrides_are_toml_and_quote_a_server_name_that_is_not_a_bare_key():
    flags = codex_overrides('/opt/my "bin"/harness', ["userserver", "with.dot", "harness"])
    pairs = flags[1::2]
    assert flags[0::2] == ["-c"] * len(pairs)
    merged = [tomllib.loads(pair) for pair in pairs]
    assert merged[0] == {"mcp_servers": {"harness": {"command": '/opt/my "bin"/harness'}}}
    assert {"mcp_servers": {"with.dot": {"enabled": False}}} in merged
    assert len(pairs) == 5  # command, args, env_vars, and two servers disabled (never the gateway itself)


def test_codex_reads_the_users_servers_from_codex_home_or_home(tmp_path):
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(
        '[mcp_servers.a]\ncommand = "x"\n[mcp_servers.b]\nurl = "y"\n'
    )
    assert codex_user_servers({"HOME": str(tmp_path)}) == ["a", "b"]
    assert codex_user_servers({"CODEX_HOME": str(tmp_path / "none")}) == []
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.toml").write_text("not toml [")
    assert codex_user_servers({"CODEX_HOME": str(tmp_path / "bad")}) == []


def test_codex_exclusive_disables_each_user_server(tmp_path):
    home = tmp_path / "ch"
    home.mkdir()
    (home / "config.toml").write_text('[mcp_servers.mine]\ncommand = "x"\n')
    spawn = _spawn(tmp_path, "codex", True, {"CODEX_HOME": str(home)})
    argv = wire(spawn).argv
    assert argv[0] == "client" and argv[-2:] == ("--flag", "prompt")
    assert "mcp_servers.mine.enabled=false" in argv
    assert "mcp_servers.mine.enabled=false" not in wire(_spawn(tmp_path, "codex", False, spawn.env)).argv


def test_crush_reads_global_and_project_configs_up_to_the_repository_root(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "crush").mkdir(parents=True)
    (home / ".config" / "crush" / "crush.json").write_text('{"mcp": {"global": {}}}')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    (repo / ".crush.json").write_text('{"mcp": {"project": {}, "global": {}}}')
    (tmp_path / "crush.json").write_text('{"mcp": {"above-the-repo": {}}}')
    (repo / "sub" / "crush.json").write_text("{broken")
    assert crush_user_servers({"HOME": str(home)}, repo / "sub") == ["global", "project"]


def test_crush_writes_its_config_into_a_harness_owned_data_dir(tmp_path):
    wiring = wire(_spawn(tmp_path, "crush"))
    [path] = wiring.files
    assert wiring.argv == ("client", f"--data-dir={path.parent}", "--flag", "prompt")
    assert json.loads(path.read_text())["mcp"]["harness"]["env"]["HARNESS_MCP_TOKEN"] == "$HARNESS_MCP_TOKEN"


def test_the_clients_default_exposure_applies_only_when_the_policy_sets_none():
    def config(policy: PolicyConfig) -> Config:
        return Config(
            policies={"p": policy},
            harnesses={
                "c": HarnessConfig(name="c", harness="crush", argv=("crush",), mcp_policy="p"),
                "g": HarnessConfig(name="g", argv=("a",), mcp_policy="p"),
            },
        )

    unset = config(PolicyConfig(name="p"))
    assert (unset.exposure_for("c"), unset.exposure_for("g")) == ("lazy", "full")
    explicit = config(PolicyConfig(name="p", exposure="full"))
    assert explicit.exposure_for("c") == "full"
