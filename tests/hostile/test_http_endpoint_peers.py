"""The loopback HTTP endpoint checks who is on the other end of each TCP connection, as the control
socket does (second trial N2): a process in one harness's tree cannot present another harness's
token, stolen from /proc; the harness itself and the operator (outside the daemon's tree) can."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_support import PY, running, toml_list, wait_until

from devtools.http_fuzz import post
from support import DEMO_UPSTREAM, INITIALIZE, free_port

AGENT = Path(__file__).with_name("http_agent.py")


def _agent(tmp_path: Path, port: int, name: str, steps: list[list[str]]) -> str:
    argv = [PY, str(AGENT), "--out", str(tmp_path / f"{name}.json"), "--state", str(tmp_path / "state")]
    return toml_list([*argv, "--port", str(port), "--steps", json.dumps(steps)])


def _config(tmp_path: Path, port: int) -> str:
    return (
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n'
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        f"[harness.a]\nargv = {_agent(tmp_path, port, 'a', [['own', 'own']])}\n"
        'mcp_policy = "p"\nmcp_allow = ["read", "write"]\n\n'
        f"[harness.thief]\nargv = {_agent(tmp_path, port, 'thief', [['stolen', 'stolen:a']])}\n"
        'mcp_policy = "p"\nmcp_allow = ["read"]\n'
    )


def _out(tmp_path: Path, name: str) -> dict:
    path = tmp_path / f"{name}.json"
    wait_until(path.exists, timeout=60)
    return json.loads(path.read_text())


@pytest.mark.slow  # a daemon, two harness agents and the CLI: about 5 s
def test_a_token_stolen_by_another_harness_is_refused_over_http_and_its_owner_and_the_operator_get_through(
    tmp_path,
):
    port = free_port()
    with running(tmp_path, _config(tmp_path, port)) as daemon:
        own = _out(tmp_path, "a")["own"]
        assert own["initialize"]["status"] == 200, own
        assert own["call"]["status"] == 200 and "own" in own["call"]["body"], own

        stolen = _out(tmp_path, "thief")["stolen"]
        refused = stolen["initialize"]
        assert refused["status"] == 403, stolen
        assert "harness thief's process tree" in json.loads(refused["body"])["error"]
        assert stolen["call"]["status"] == 403, stolen

        # The operator, outside the daemon's tree, may present a harness's token (as on the socket).
        rows = json.loads(daemon.harness_cli("list", "--json").stdout)
        pid = next(r["pid"] for r in rows if r["name"] == "a")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        token = next(e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"HARNESS_MCP_TOKEN="))
        assert post(port, token, INITIALIZE)["status"] == 200

        calls = wait_until(daemon.calls, timeout=30)
        assert [(c["harness"], c["tool"]) for c in calls] == [("a", "echo")]  # nothing as A by the thief
        wait_until(
            lambda: any("harness thief's process tree" in line for line in daemon.stderr_lines), timeout=30
        )
        assert not any("Traceback" in line for line in daemon.stderr_lines)
