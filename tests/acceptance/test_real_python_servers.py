"""Real third-party Python MCP servers behind the gateway (PyPI: mcp-server-time, mcp-server-git),
called by the official SDK client through a daemon-spawned harness."""

from __future__ import annotations

import importlib.util
import json
import subprocess

import pytest

from support import PY, probe_argv, read_out, toml_list, wait_until

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("mcp_server_time") is None
        or importlib.util.find_spec("mcp_server_git") is None,
        reason="pip install mcp-server-time mcp-server-git (the test extra has them)",
    ),
]


def test_time_and_git_servers_answer_through_the_gateway_and_each_call_is_a_row(start_daemon, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n")
    steps = [
        {"op": "call", "name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
        {
            "op": "call",
            "name": "time__convert_time",
            "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        },
        {"op": "call", "name": "git__git_status", "arguments": {"repo_path": str(repo)}},
    ]
    out_file = tmp_path / "probe.json"
    daemon = start_daemon(
        f"[mcp.time]\nargv = {toml_list([PY, '-m', 'mcp_server_time', '--local-timezone', 'UTC'])}\n"
        'read_tools = ["*"]\n\n'
        f"[mcp.git]\nargv = {toml_list([PY, '-m', 'mcp_server_git', '--repository', str(repo)])}\n\n"
        '[mcp_policy.p]\nservers = ["time", "git"]\n\n'
        f"[harness.probe]\nargv = {toml_list(probe_argv(out_file, '--steps', json.dumps(steps)))}\n"
        'mcp_policy = "p"\nmcp_allow = ["read", "write"]\n'
    )
    out = read_out(out_file)
    assert {"time__get_current_time", "time__convert_time", "git__git_status", "git__git_log"} <= set(
        out["tools"]
    )
    now, converted, status = (step["result"] for step in out["steps"])
    assert not now.get("isError") and json.loads(now["content"][0]["text"])["timezone"] == "UTC"
    assert converted["structuredContent"]["target"]["datetime"].endswith("T21:00:00+09:00")
    assert "README.md" in status["content"][0]["text"]  # untracked in the fresh repository
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) == 3 and r)
    assert [(r["upstream"], r["tool"], r["outcome"]) for r in rows] == [
        ("time", "get_current_time", "ok"),
        ("time", "convert_time", "ok"),
        ("git", "git_status", "ok"),
    ]
