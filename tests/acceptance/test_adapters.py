"""Adapters through a real daemon: a stand-in agent named like its client is spawned through each
adapter; its argv and environment are read from ``/proc``; the generated client configuration is
read back (by the real client's own parser where npm installs it here: Claude Code, Codex) and
followed to ``harness mcp``, which must open a session attributed to the agent by its token.

Crush cannot be installed here (its npm package downloads its binary from GitHub), so its
configuration is checked against its documented format and followed the way Crush runs a stdio
server (the whole environment plus the entry's ``$NAME``-expanded ``env``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from harness.clients import CLIENTS
from harness.gateway.harnesses.adapters import BRIDGE_ENV
from support import (
    DEMO_UPSTREAM,
    NPM_BIN,
    PY,
    bridge_params,
    process_argv,
    process_env,
    toml_list,
    wait_until,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

SECRET = "upstream-secret-7f3a9c"
CODEX_ALLOWLIST = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
"""What Codex passes to an MCP server besides ``env_vars`` (codex-rs rmcp-client utils.rs)."""


def _stand_in(folder: Path, name: str) -> Path:
    """An executable named like the client that only waits (its argv and env are what we read)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{PY}\nimport time\ntime.sleep(600)\n")
    path.chmod(0o755)
    return path


def _start(start_daemon, tmp_path: Path, adapter: str, exclusive: bool, agent_env: str = "") -> tuple:
    stand_in = _stand_in(tmp_path / "bin", CLIENTS[adapter].command or "agent")
    (tmp_path / "up.env").write_text(f"DEMO_SECRET={SECRET}\n")
    (tmp_path / "agent.env").write_text(agent_env)
    daemon = start_daemon(
        f'[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\nenv_file = "up.env"\n'
        'env = { DEMO_TOKEN = "${DEMO_SECRET}" }\n\n'
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.agent]\nharness = "{adapter}"\nargv = ["{stand_in}"]\nmcp_policy = "p"\n'
        f'env_file = "agent.env"\nmcp_exclusive = {str(exclusive).lower()}\n'
    )
    rows = wait_until(
        lambda: (r := json.loads(daemon.harness_cli("list", "--json").stdout)) and r[0]["pid"] and r
    )
    pid = rows[0]["pid"]
    argv = process_argv(pid)
    assert argv[:2] == [PY, str(stand_in)], argv
    return daemon, pid, argv[2:], process_env(pid)


def _no_credential(env: dict[str, str], flags: list[str]) -> None:
    assert not any(SECRET in value for value in env.values()), "an upstream credential reached the agent"
    assert env["HARNESS_MCP_TOKEN"] and env["HARNESS_SOCKET"]
    assert not any(env["HARNESS_MCP_TOKEN"] in flag for flag in flags), "the token is in argv"


def _expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), value)


def _session(command: str, args: list[str], env: dict[str, str]) -> tuple[list[str], str | None]:
    """Launch what the client would: the tools it lists, and the run its session belongs to
    (``harness_run_calls`` names the caller's own run; an unattributed session has none)."""

    async def session() -> tuple[list[str], str | None]:
        params = StdioServerParameters(command=command, args=args, env=env)
        async with Client(params, mode="legacy", cache=None) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            if "call_tool" in names:  # lazy: the facade is reachable through call_tool too
                result = await client.call_tool("call_tool", {"name": "harness_run_calls", "arguments": {}})
            else:
                result = await client.call_tool("harness_run_calls", {})
            return names, None if result.is_error else result.structured_content["run_id"]

    return anyio.run(session)


def _reaches_gateway_as_agent(
    command: str, args: list[str], child_env: dict[str, str], env: dict[str, str]
) -> list[str]:
    names, run_id = _session(command, args, child_env)
    assert run_id == env["HARNESS_RUN_ID"], "the session is not attributed to the agent's run"
    return names


def _flag_value(flags: list[str], name: str) -> str:
    [value] = [f.split("=", 1)[1] for f in flags if f.startswith(name + "=")]
    return value


@pytest.mark.parametrize("exclusive", [False, True], ids=["additive", "exclusive"])
def test_claude_code_gets_a_harness_owned_mcp_json_and_strict_only_when_exclusive(
    start_daemon, tmp_path, exclusive
):
    _daemon, _pid, flags, env = _start(start_daemon, tmp_path, "claude-code", exclusive)
    _no_credential(env, flags)
    assert ("--strict-mcp-config" in flags) is exclusive
    path = Path(_flag_value(flags, "--mcp-config"))
    assert path.stat().st_mode & 0o077 == 0 and env["HARNESS_MCP_TOKEN"] not in path.read_text()
    server = json.loads(path.read_text())["mcpServers"]["harness"]
    assert (
        server["type"] == "stdio" and server["args"] == ["mcp"] and Path(server["command"]).name == "harness"
    )
    # Claude Code runs a stdio server with its own environment plus the entry's ${NAME}-expanded env.
    child_env = {**env, **{k: _expand(v, env) for k, v in server["env"].items()}}
    assert "demo__echo" in _reaches_gateway_as_agent(server["command"], server["args"], child_env, env)


def _codex_home(tmp_path: Path) -> Path:
    """A CODEX_HOME whose config.toml declares the user's own server ``userserver``."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('[mcp_servers.userserver]\ncommand = "/bin/true"\n')
    return home


@pytest.mark.parametrize("exclusive", [False, True], ids=["additive", "exclusive"])
def test_codex_gets_c_overrides_that_pass_the_token_by_env_vars(start_daemon, tmp_path, exclusive):
    home = _codex_home(tmp_path)
    _daemon, _pid, flags, env = _start(start_daemon, tmp_path, "codex", exclusive, f"CODEX_HOME={home}\n")
    _no_credential(env, flags)
    pairs = [flags[i + 1] for i, f in enumerate(flags) if f == "-c"]
    assert len(pairs) * 2 == len(flags)
    merged: dict = {}
    for pair in pairs:  # each override is a TOML key = value
        _merge(merged, tomllib.loads(pair))
    servers = merged["mcp_servers"]
    assert servers.get("userserver") == ({"enabled": False} if exclusive else None)
    server = servers["harness"]
    assert server["args"] == ["mcp"] and set(BRIDGE_ENV) <= set(server["env_vars"])
    child_env = {k: v for k, v in env.items() if k in CODEX_ALLOWLIST or k in server["env_vars"]}
    assert "demo__echo" in _reaches_gateway_as_agent(server["command"], server["args"], child_env, env)


def _merge(into: dict, value: dict) -> None:
    for key, item in value.items():
        if isinstance(item, dict) and isinstance(into.get(key), dict):
            _merge(into[key], item)
        else:
            into[key] = item


@pytest.mark.parametrize("exclusive", [False, True], ids=["additive", "exclusive"])
def test_crush_gets_a_harness_owned_data_dir_whose_crush_json_adds_the_gateway(
    start_daemon, tmp_path, exclusive
):
    home = tmp_path / "home"
    (home / ".config" / "crush").mkdir(parents=True)
    (home / ".config" / "crush" / "crush.json").write_text(
        '{"mcp": {"userserver": {"command": "/bin/true"}}}'
    )
    _daemon, _pid, flags, env = _start(start_daemon, tmp_path, "crush", exclusive, f"HOME={home}\n")
    _no_credential(env, flags)
    data_dir = Path(_flag_value(flags, "--data-dir"))
    config = json.loads((data_dir / "crush.json").read_text())
    assert config["mcp"].get("userserver") == ({"disabled": True} if exclusive else None)
    server = config["mcp"]["harness"]
    assert server["type"] == "stdio" and server["args"] == ["mcp"]
    child_env = {**env, **{k: _expand(v, env) for k, v in server["env"].items()}}
    names = _reaches_gateway_as_agent(server["command"], server["args"], child_env, env)
    assert "search_tools" in names and "demo__echo" not in names  # Crush's default exposure: lazy


def test_generic_leaves_argv_alone_and_the_agent_launches_the_bridge_itself(start_daemon, tmp_path):
    _daemon, _pid, flags, env = _start(start_daemon, tmp_path, "generic", False)
    _no_credential(env, flags)
    assert flags == []
    params = bridge_params(env)
    assert "demo__echo" in _reaches_gateway_as_agent(params.command, params.args, env, env)


# ---------------------------------------------------------------- the real clients' own parsers

CLAUDE = NPM_BIN / "claude"
CODEX = NPM_BIN / "codex"


def _claude_init(flags: list[str], env: dict[str, str], home: Path) -> dict:
    """Claude Code's own init record for ``flags``: which MCP servers it configured and connected.
    Not logged in, it stops before any model call."""
    run_env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    run_env.update(
        HOME=str(home), MCP_CONNECTION_NONBLOCKING="0", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1"
    )
    argv = [str(CLAUDE), "-p", "x", "--output-format", "stream-json", "--verbose", *flags]
    done = subprocess.run(
        argv, env=run_env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    for line in done.stdout.splitlines():
        record = json.loads(line) if line.startswith("{") else {}
        if record.get("type") == "system" and record.get("subtype") == "init":
            return record
    raise AssertionError(f"no init record from claude: {done.stdout[-2000:]} {done.stderr[-2000:]}")


@pytest.mark.slow
@pytest.mark.skipif(not CLAUDE.exists(), reason="npm install --prefix tests/npm (claude-code)")
@pytest.mark.parametrize("exclusive", [False, True], ids=["additive", "exclusive"])
def test_claude_code_itself_connects_to_the_gateway_through_the_generated_config(
    start_daemon, tmp_path, exclusive
):
    daemon, _pid, flags, env = _start(start_daemon, tmp_path, "claude-code", exclusive)
    home = tmp_path / "claude-home"
    home.mkdir()
    (home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"userserver": {"type": "stdio", "command": "/bin/true", "args": []}}})
    )
    init = _claude_init(flags, env, home)
    servers = {s["name"]: s["status"] for s in init["mcp_servers"]}
    assert servers["harness"] == "connected", servers
    assert ("userserver" in servers) is not exclusive  # the user's own server stays unless exclusive
    assert "mcp__harness__demo__echo" in init["tools"]
    opened = wait_until(lambda: [e for e in daemon.events("session.opened") if e["harness"] == "agent"])
    assert opened  # the session Claude Code opened is the agent's, by its token


@pytest.mark.slow
@pytest.mark.skipif(not CODEX.exists(), reason="npm install --prefix tests/npm (codex)")
@pytest.mark.parametrize("exclusive", [False, True], ids=["additive", "exclusive"])
def test_codex_itself_parses_the_overrides_and_connects_to_the_gateway(start_daemon, tmp_path, exclusive):
    home = _codex_home(tmp_path)
    daemon, _pid, flags, env = _start(start_daemon, tmp_path, "codex", exclusive, f"CODEX_HOME={home}\n")
    listed = subprocess.run(
        [str(CODEX), *flags, "mcp", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    servers = {s["name"]: s for s in json.loads(listed.stdout)}
    harness = servers["harness"]
    assert harness["enabled"] and harness["transport"]["args"] == ["mcp"]
    assert Path(harness["transport"]["command"]).name == "harness"
    assert set(BRIDGE_ENV) <= set(harness["transport"]["env_vars"])
    assert servers["userserver"]["enabled"] is not exclusive
    prompt = subprocess.run(
        [str(CODEX), *flags, "debug", "prompt-input"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "mcp__harness" in prompt.stdout, prompt.stderr[-2000:]  # it started the bridge and listed tools
    opened = wait_until(lambda: [e for e in daemon.events("session.opened") if e["harness"] == "agent"])
    assert opened and os.environ.get("HARNESS_MCP_TOKEN") is None
