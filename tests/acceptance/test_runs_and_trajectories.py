"""Runs and trajectories through a real daemon: the real SDK client calls directly and through
``call_tool``; ``harness runs`` and ``open_store().trajectory`` say which name the agent called, how,
with which request id; a restarted run names the run it restarted; ``harness calls --json`` lines
carry ``position``, a cursor for ``--after``."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

import harness
from harness.demo.upstream import LONG_TOOL_NAME
from harness.naming import exposed_name
from support import DEMO_UPSTREAM, bridge_params, process_env, toml_list, wait_until

pytestmark = pytest.mark.acceptance

FAILS_ONCE = "if [ -e ran ]; then exec sleep 600; else touch ran; exit 3; fi"
LONG = exposed_name("demo", LONG_TOOL_NAME)


def _config(tmp_path) -> str:
    (tmp_path / "w").mkdir()
    sleeper = '["sleep", "600"]'
    return (
        f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.full]\nservers = ["demo"]\n\n'
        '[mcp_policy.lazy]\nservers = ["demo"]\nexposure = "lazy"\n\n'
        f'[harness.direct]\nargv = {sleeper}\nmcp_policy = "full"\n\n'
        f'[harness.lazy]\nargv = {sleeper}\nmcp_policy = "lazy"\n\n'
        f'[harness.flaky]\nargv = ["sh", "-c", "{FAILS_ONCE}"]\nworkdir = "{tmp_path / "w"}"\n'
    )


@pytest.mark.slow
def test_a_runs_trajectory_says_what_the_agent_called_how_and_under_which_request_id(start_daemon, tmp_path):
    daemon = start_daemon(_config(tmp_path))
    running = wait_until(lambda: (h := daemon.harnesses()) and all(r["pid"] for r in h.values()) and h)
    direct_env = process_env(running["direct"]["pid"])
    lazy_env = process_env(running["lazy"]["pid"])

    async def scenario() -> None:
        async with Client(bridge_params(direct_env), mode="legacy", cache=None) as client:
            await client.call_tool("demo__echo", {"text": "hi"})
            await client.call_tool(LONG, {})
            with pytest.raises(Exception, match="unknown_tool"):
                await client.call_tool("demo__nope", {})
        async with Client(bridge_params(lazy_env), mode="legacy", cache=None) as client:
            await client.call_tool("search_tools", {"query": "echo text"})
            await client.call_tool("call_tool", {"name": "demo__add", "arguments": {"a": 1, "b": 2}})
            await client.call_tool("call_tool", {"name": f"demo__{LONG_TOOL_NAME}", "arguments": {}})

    anyio.run(scenario)
    rows = wait_until(lambda: len(r := daemon.calls()) >= 6 and r)
    assert all(set(row) == set(rows[0]) and "position" in row for row in rows)  # one key set, a cursor
    last = max(row["position"] for row in rows)
    resumed = daemon.harness_cli("calls", "--json", "--after", str(rows[2]["position"])).stdout.splitlines()
    assert {json.loads(line)["position"] for line in resumed} == {
        r["position"] for r in rows if r["position"] > rows[2]["position"]
    }
    assert daemon.harness_cli("calls", "--json", "--after", str(last)).stdout == ""

    flaky = wait_until(
        lambda: len(r := [x for x in _runs(daemon) if x["harness"] == "flaky"]) == 2 and r, timeout=20
    )
    assert flaky[0]["exit_code"] == 3 and flaky[0]["ended"] is not None
    assert flaky[1]["restarted_run_id"] == flaky[0]["run_id"]

    with harness.open_store(daemon.db) as store:
        direct_run = running["direct"]["run_id"]
        steps = store.trajectory(direct_run).steps
        assert [(s.name, s.via_call_tool, s.outcome) for s in steps] == [
            ("demo__echo", False, "ok"),
            (LONG, False, "ok"),
            ("demo__nope", False, "denied"),
        ]
        assert [s.request_id for s in steps] == sorted({s.request_id for s in steps}, key=int)
        assert steps[0].arguments == '{"text":"hi"}' and steps[0].response_bytes > 0
        lazy = store.trajectory(running["lazy"]["run_id"]).steps
        assert [(s.name, s.upstream, s.tool, s.via_call_tool) for s in lazy] == [
            ("search_tools", "harness", "search_tools", False),
            ("demo__add", "demo", "add", True),
            (LONG, "demo", LONG_TOOL_NAME, True),
        ]
        [run] = store.runs(harness="direct")
        assert (run.calls, run.failures, run.denials, run.ended) == (3, 1, 1, None)
    table = daemon.harness_cli("runs", "--harness", "direct").stdout
    assert direct_run in table and "CALLS" in table


def _runs(daemon) -> list[dict]:
    out = daemon.harness_cli("runs", "--json").stdout
    return [json.loads(line) for line in out.splitlines()]
