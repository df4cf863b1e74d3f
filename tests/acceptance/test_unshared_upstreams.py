"""``shared = false`` through a real daemon: each harness gets its own instance, in its own workdir,
started on its first call and stopped when the harness exits; the tool list is there before."""

from __future__ import annotations

import json
import time

import psutil
import pytest

from support import DEMO_UPSTREAM, probe_argv, read_out, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


def _instances(daemon) -> list[psutil.Process]:
    """The demo upstream processes under the daemon."""
    return daemon.descendants_running("harness.demo.upstream")


def test_two_harnesses_get_two_instances_in_their_workdirs_that_stop_with_them(start_daemon, tmp_path):
    go = tmp_path / "go"
    harnesses = ""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        steps = [
            {"op": "call", "name": "solo__echo", "arguments": {"text": name}},
            {"op": "touch", "path": str(tmp_path / f"{name}.called")},
            {"op": "wait_file", "path": str(go), "timeout": 60},
        ]
        argv = probe_argv(tmp_path / f"{name}.json", "--steps", json.dumps(steps))
        harnesses += (
            f'[harness.{name}]\nargv = {toml_list(argv)}\nworkdir = "{tmp_path / name}"\nmcp_policy = "p"\n\n'
        )
    config = (
        f"[mcp.solo]\nargv = {toml_list(DEMO_UPSTREAM)}\nshared = false\n\n"
        f'[mcp_policy.p]\nservers = ["solo"]\n\n{harnesses}'
    )
    daemon = start_daemon(config)
    assert daemon.events("upstream.tool_catalog_fetched")  # a probe read the catalogue at start
    wait_until(lambda: (tmp_path / "a.called").exists() and (tmp_path / "b.called").exists(), timeout=30)
    instances = wait_until(lambda: len(found := _instances(daemon)) == 2 and found, timeout=10)
    assert sorted(p.cwd() for p in instances) == [str(tmp_path / "a"), str(tmp_path / "b")]
    go.touch()
    for name in ("a", "b"):
        out = read_out(tmp_path / f"{name}.json")
        assert "solo__echo" in out["tools"]
        assert out["steps"][0]["result"]["content"][0]["text"] == name
    wait_until(lambda: _instances(daemon) == [], timeout=20)  # both stopped with their harnesses
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) == 2 and r)
    assert sorted((r["harness"], r["upstream"], r["tool"], r["outcome"]) for r in rows) == [
        ("a", "solo", "echo", "ok"),
        ("b", "solo", "echo", "ok"),
    ]
    started = daemon.events("upstream.started")
    assert len(started) == 3  # the probe, then one instance per harness
    assert daemon.stop() == 0

    again = start_daemon(
        config.replace("[harness.a]", "[harness.a]\nautostart = false").replace(
            "[harness.b]", "[harness.b]\nautostart = false"
        )
    )
    status = json.loads(again.harness_cli("status", "--json").stdout)
    assert status["upstreams"]["solo"]["state"] == "unshared" and status["upstreams"]["solo"]["tools"] == 0
    assert len(again.events("upstream.started")) == 3  # the kept catalogue: no second probe
    tools = json.loads(again.harness_cli("tools", "--harness", "a", "--json").stdout)
    assert any(t["name"] == "solo__echo" for t in tools["tools"])


def test_a_daemon_stopped_while_it_stops_a_harness_instance_exits_at_once(start_daemon, tmp_path):
    (tmp_path / "a").mkdir()
    steps = [{"op": "call", "name": "solo__echo", "arguments": {"text": "a"}}]
    argv = probe_argv(tmp_path / "a.json", "--steps", json.dumps(steps))
    config = (
        f"[mcp.solo]\nargv = {toml_list(DEMO_UPSTREAM)}\nshared = false\n\n"
        f'[mcp_policy.p]\nservers = ["solo"]\n\n'
        f'[harness.a]\nargv = {toml_list(argv)}\nworkdir = "{tmp_path / "a"}"\nmcp_policy = "p"\n\n'
    )
    daemon = start_daemon(config)
    read_out(tmp_path / "a.json")  # the harness called and is exiting: its instance is being stopped
    started = time.monotonic()
    assert daemon.stop(timeout=20) == 0
    assert time.monotonic() - started < 5
