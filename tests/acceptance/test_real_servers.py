"""Real third-party MCP servers (npm, tests/npm) through the gateway: tools, calls, tiers, progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import probe_argv, read_out, steps, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

BIN = Path(__file__).resolve().parents[1] / "npm" / "node_modules" / ".bin"
EVERYTHING, MEMORY = BIN / "mcp-server-everything", BIN / "mcp-server-memory"

needs_npm = pytest.mark.skipif(
    not (EVERYTHING.exists() and MEMORY.exists()),
    reason="real npm MCP servers not installed: run `npm install --prefix tests/npm` (.ci/run does)",
)


@needs_npm
def test_reference_servers_work_through_the_gateway_with_tiers_and_progress(start_daemon, tmp_path):
    out_file = tmp_path / "probe.json"
    plan = [
        {"op": "call", "name": "everything__echo", "arguments": {"message": "through the gateway"}},
        {"op": "call", "name": "everything__get-sum", "arguments": {"a": 40, "b": 2}},
        {
            "op": "call",
            "name": "everything__trigger-long-running-operation",
            "arguments": {"duration": 1, "steps": 4},
            "progress": True,
        },
        {
            "op": "call",
            "name": "memory__create_entities",
            "arguments": {
                "entities": [
                    {"name": "gateway", "entityType": "software", "observations": ["runs each server once"]}
                ]
            },
        },
        {"op": "call", "name": "memory__read_graph"},
    ]
    reader_out = tmp_path / "reader.json"
    reader_plan = [{"op": "call", "name": "memory__create_entities", "arguments": {"entities": []}}]
    daemon = start_daemon(
        f"[mcp.everything]\nargv = {toml_list([str(EVERYTHING)])}\n\n"
        f'[mcp.memory]\nargv = {toml_list([str(MEMORY)])}\nenv = {{ MEMORY_FILE_PATH = "{tmp_path / "memory.jsonl"}" }}\n\n'
        '[mcp_policy.p]\nservers = ["everything", "memory"]\n\n'
        f'[harness.writer]\nargv = {toml_list(probe_argv(out_file, "--steps", steps(*plan)))}\nmcp_policy = "p"\n'
        'mcp_allow = ["read", "write"]\n\n'
        f'[harness.reader]\nargv = {toml_list(probe_argv(reader_out, "--steps", steps(*reader_plan)))}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    assert "fatal" not in out, out
    assert {"everything__echo", "memory__read_graph", "memory__create_entities"} <= set(out["tools"])
    echo, total, long_run, created, graph = out["steps"]
    assert "through the gateway" in echo["result"]["content"][0]["text"]
    assert "42" in total["result"]["content"][0]["text"]
    assert long_run["progress"] and long_run["progress"] == sorted(long_run["progress"])
    assert "error" not in created, created
    assert "gateway" in json.dumps(graph["result"])
    refused = read_out(reader_out)["steps"][0]
    assert refused["error"].startswith("not_permitted:")  # create_entities has no readOnlyHint
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 6 and r, timeout=10)
    assert {(r["harness"], r["upstream"], r["tool"], r["tier"], r["outcome"]) for r in rows} >= {
        ("writer", "everything", "echo", "read", "ok"),
        ("writer", "memory", "create_entities", "write", "ok"),
        ("reader", "memory", "create_entities", "write", "denied"),
    }
