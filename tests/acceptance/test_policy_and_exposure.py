"""Least privilege and context economy, end to end: policies, lazy search, names, metrics, reload."""

from __future__ import annotations

import urllib.request

import pytest

from harness.demo.upstream import LONG_TOOL_NAME
from harness.naming import exposed_name
from support import DEMO_UPSTREAM as UPSTREAM
from support import FACADE_READ, free_port, probe_argv, read_out, steps, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

HOSTILE_QUERIES = [
    "*",
    "gitea",
    '"gitea"',
    "gitea NEAR echo",
    "name:gitea",
    "gitea__echo",
    "echo",
    "{gitea}",
    "-wiki",
]


def test_a_policy_that_excludes_gitea_shows_no_gitea_tool_anywhere_and_refuses_calling_one(
    start_daemon, tmp_path
):
    out_file = tmp_path / "probe.json"
    plan = [
        {"op": "call", "name": "search_tools", "arguments": {"query": q, "k": 50}} for q in HOSTILE_QUERIES
    ]
    plan += [
        {"op": "call", "name": "call_tool", "arguments": {"name": "gitea__echo", "arguments": {"text": "x"}}},
        {"op": "call", "name": "gitea__echo", "arguments": {"text": "x"}},
        {
            "op": "call",
            "name": "call_tool",
            "arguments": {"name": "wiki__echo", "arguments": {"text": "via"}},
        },
    ]
    argv = probe_argv(out_file, "--steps", steps(*plan))
    daemon = start_daemon(
        f"[mcp.gitea]\nargv = {toml_list(UPSTREAM)}\n\n[mcp.wiki]\nargv = {toml_list(UPSTREAM)}\n\n"
        '[mcp_policy.wiki-only]\nservers = ["wiki"]\nexposure = "lazy"\n\n'
        f'[harness.reader]\nargv = {toml_list(argv)}\nmcp_policy = "wiki-only"\n'
    )
    out = read_out(out_file)
    assert "fatal" not in out, out
    assert out["tools"] == ["search_tools", "call_tool", *FACADE_READ]
    searches, refused_lazy, refused_direct, allowed = (
        out["steps"][: len(HOSTILE_QUERIES)],
        *out["steps"][len(HOSTILE_QUERIES) :],
    )
    found_any = set()
    for step in searches:
        assert "error" not in step, step
        names = [t["name"] for t in step["result"]["structuredContent"]["tools"]]
        assert not [n for n in names if n.startswith("gitea__")]
        found_any.update(names)
    assert "wiki__echo" in found_any  # the search works; it just never shows gitea
    assert refused_lazy["error"].startswith("not_permitted:")
    assert refused_direct["error"].startswith("not_permitted:")
    assert allowed["result"]["content"][0]["text"] == "via"
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= len(plan) and r, timeout=10)
    via = [r for r in rows if r["outcome"] == "ok" and r["upstream"] == "wiki"]
    assert [(r["tool"], r["harness"]) for r in via] == [("echo", "reader")]  # the real tool, not call_tool
    denied = [r for r in rows if r["outcome"] == "denied"]
    assert [(r["upstream"], r["tool"]) for r in denied] == [("gitea", "echo"), ("gitea", "echo")]


def test_search_tools_returns_full_untrimmed_descriptions_and_schemas(start_daemon, tmp_path):
    out_file = tmp_path / "probe.json"
    plan = [{"op": "call", "name": "search_tools", "arguments": {"query": "add two numbers", "k": 3}}]
    argv = probe_argv(out_file, "--steps", steps(*plan))
    start_daemon(
        f"[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n"
        '[mcp_policy.p]\nservers = ["demo"]\nexposure = "lazy"\nmax_description_chars = 20\n\n'
        f'[harness.h]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    top = out["steps"][0]["result"]["structuredContent"]["tools"][0]
    assert top["name"] == "demo__add"
    assert top["full_description"] == "Add two numbers and return the sum."
    assert top["inputSchema"]["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}


def test_lazy_mode_costs_fewer_schema_bytes_than_full_mode_for_the_same_servers(start_daemon, tmp_path):
    port = free_port()
    outs = {mode: tmp_path / f"{mode}.json" for mode in ("full", "lazy")}
    config = f'[mcp]\nmetrics_listen = "127.0.0.1:{port}"\n\n[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n'
    for mode, out in outs.items():
        config += f'[mcp_policy.{mode}]\nservers = ["demo"]\nexposure = "{mode}"\n\n'
        config += f'[harness.{mode}]\nargv = {toml_list(probe_argv(out))}\nmcp_policy = "{mode}"\n\n'
    start_daemon(config)
    listed = {mode: read_out(out)["tools"] for mode, out in outs.items()}
    assert listed["lazy"] == ["search_tools", "call_tool", *FACADE_READ]
    assert len(listed["full"]) > 5
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    gauge = {
        line.split('harness="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("harness_mcp_tool_schema_bytes{")
    }
    assert 0 < gauge["lazy"] < gauge["full"]
    assert "harness_mcp_calls_total" in metrics or "harness_mcp_call_log_dropped_total" in metrics


def test_a_60_character_tool_behind_a_20_character_key_is_exposed_within_50_and_callable(
    start_daemon, tmp_path
):
    key = "a-twenty-char-upstrm"
    assert len(key) == 20 and len(LONG_TOOL_NAME) == 60
    exposed = exposed_name(key, LONG_TOOL_NAME)
    out_file = tmp_path / "probe.json"
    plan = [
        {"op": "call", "name": exposed},
        {"op": "call", "name": "call_tool", "arguments": {"name": exposed}},
        {"op": "call", "name": "call_tool", "arguments": {"name": f"{key}__{LONG_TOOL_NAME}"}},
    ]
    argv = probe_argv(out_file, "--steps", steps(*plan))
    daemon = start_daemon(
        f'[mcp.{key}]\nargv = {toml_list(UPSTREAM)}\n\n[mcp_policy.p]\nservers = ["{key}"]\nexposure = "top_k"\n\n'
        f'[harness.h]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n'
    )
    out = read_out(out_file)
    assert len(exposed) <= 50
    assert out["tools"] == ["search_tools", "call_tool", *FACADE_READ]  # top_k, no history: the gateway's
    for step in out["steps"]:
        assert step["result"]["content"][0]["text"] == "60 characters", step
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 3 and r, timeout=10)
    assert [(r["upstream"], r["tool"], r["outcome"]) for r in rows] == [(key, LONG_TOOL_NAME, "ok")] * 3


def test_reload_applies_a_new_policy_to_a_live_session_through_list_changed(start_daemon, tmp_path):
    out_file = tmp_path / "probe.json"
    go, listed = tmp_path / "go", tmp_path / "listed"
    plan = [
        {"op": "touch", "path": str(listed)},
        {"op": "wait_file", "path": str(go)},
        {"op": "wait_list_changed"},
        {"op": "list"},
    ]
    argv = probe_argv(out_file, "--steps", steps(*plan))
    base = f'[mcp.demo]\nargv = {toml_list(UPSTREAM)}\n\n[harness.h]\nargv = {toml_list(argv)}\nmcp_policy = "p"\n\n'
    daemon = start_daemon(base + '[mcp_policy.p]\nservers = ["demo"]\ndeny = ["demo__e*"]\n')
    wait_until(listed.exists, timeout=30)
    daemon.config.write_text(
        base + '[mcp_policy.p]\nservers = ["demo"]\ndeny = ["demo__a*", "not valid toml = '
    )
    refused = daemon.harness_cli("reload", check=False)
    assert refused.returncode == 1 and "harness.toml" in refused.stderr
    daemon.config.write_text(base + '[mcp_policy.p]\nservers = ["demo"]\ndeny = ["demo__add"]\n')
    daemon.harness_cli("reload")
    go.write_text("")
    out = read_out(out_file)
    assert "demo__echo" not in out["tools"] and "demo__add" in out["tools"]
    assert out["steps"][2] == {"changed": True}
    after = out["steps"][3]["tools"]
    assert "demo__echo" in after and "demo__add" not in after
