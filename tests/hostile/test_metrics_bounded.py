"""Issue 10's metrics bar with a real daemon: 1,000 distinct tool names called on one upstream and
1,000 made-up names from an unattributed caller leave the Prometheus page valid (parsed) and
bounded: at most 101 ``tool`` values per upstream (100, then ``__other__``), every made-up name in
``upstream="harness", tool="__unknown__"``, no new ``upstream``."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from daemon_support import RawSession, env_dumper, faulty, harness_env, running, toml_list
from prometheus_client.parser import text_string_to_metric_families

from support import free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # a real daemon, ~3 s

TOOLS = 1000


def _call_each(session: RawSession, names: list[str]) -> list[dict[str, Any]]:
    """Pipelined: every request written, then every answer read."""
    session.initialize()
    for n, name in enumerate(names, start=1):
        session.send(
            {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": {}}}
        )
    return [session.receive(30) for _ in names]


def test_1000_tool_names_and_1000_made_up_names_leave_the_metrics_page_bounded(tmp_path):
    port = free_port()
    config = (
        f'[mcp]\nmetrics_listen = "127.0.0.1:{port}"\n\n'
        f"[mcp.big]\nargv = {toml_list(faulty('--numbered-tools', str(TOOLS)))}\n\n"
        '[mcp_policy.p]\nservers = ["big"]\nexposure = "lazy"\n\n'
        f'[harness.agent]\nargv = {toml_list(env_dumper(tmp_path / "agent.env"))}\nmcp_policy = "p"\n'
    )
    with running(tmp_path, config) as daemon:
        agent_env = harness_env(tmp_path / "agent.env")
        agent = RawSession(agent_env)
        stranger = RawSession({k: v for k, v in agent_env.items() if k != "HARNESS_MCP_TOKEN"})
        try:
            answers = _call_each(agent, [f"big__t{i:04d}" for i in range(TOOLS)])
            assert all("result" in a and not a["result"].get("isError") for a in answers), answers[:3]
            refused = _call_each(stranger, [f"made{i}__up{i}" for i in range(TOOLS)])
            assert all("error" in a for a in refused)
        finally:
            agent.close()
            stranger.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
            text = page.read().decode()
        assert len(daemon.calls()) == 2 * TOOLS
    families = {f.name: f for f in text_string_to_metric_families(text)}  # raises on invalid text
    assert {
        "harness_mcp_calls",
        "harness_mcp_call_duration_seconds",
        "harness_mcp_upstream_up",
        "harness_mcp_upstream_restarts",
        "harness_mcp_call_log_dropped",
        "harness_mcp_tool_schema_bytes",
        "harness_mcp_circuit_open",
        "harness_mcp_response_bytes",
    } <= set(families)
    tools: dict[str, set[str]] = {}
    for family in families.values():
        for sample in family.samples:
            if "tool" in sample.labels:
                tools.setdefault(sample.labels["upstream"], set()).add(sample.labels["tool"])
    assert set(tools) <= {"big", "harness"}, set(tools)
    assert len(tools["big"]) == 101 and "__other__" in tools["big"]
    assert tools["harness"] == {"__unknown__"}  # every made-up name in one series
