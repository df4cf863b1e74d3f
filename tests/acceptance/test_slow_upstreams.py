"""An upstream that is slow, hung or garbled at its handshake delays no one: `ready` and a reload wait
a few seconds at most and say which upstream has not answered, a late upstream's tools join the
sessions, and a garbled tools/list answer is reported as what it is. Real daemon, real SDK client."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from harness.gateway.upstream.supervised import FIRST_ANSWER_WAIT_S
from support import FAULTY_UPSTREAM, PY, bridge_params, idle_harnesses, running, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

MARGIN_S = 8.0
"""What a loaded machine may add to the bounded wait (starting Python, the store, the bridge)."""


def upstream(name: str, *flags: str) -> str:
    argv = json.dumps([PY, str(FAULTY_UPSTREAM), *flags])
    return f'[mcp.{name}]\nargv = {argv}\nread_tools = ["*"]\n\n'


def config(*tables: str, servers: list[str]) -> str:
    policy = f"[mcp_policy.p]\nservers = {json.dumps(servers)}\n\n"
    return "".join(tables) + policy + idle_harnesses({"agent": "p"})


def test_ready_does_not_wait_for_a_hung_upstream_and_a_late_one_joins_the_sessions(start_daemon):
    tables = upstream("good"), upstream("hung", "--slow-start", "600"), upstream("late", "--slow-start", "8")
    started = time.monotonic()
    daemon = start_daemon(config(*tables, servers=["good", "hung", "late"]))
    took = time.monotonic() - started
    assert took < FIRST_ANSWER_WAIT_S + MARGIN_S, took
    log = "".join(daemon.stderr_lines)
    assert "upstream hung: started, no answer to initialize yet; ready without it" in log
    env = daemon.harness_envs()["agent"]
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with Client(bridge_params(env), mode="legacy", cache=None) as client:
                seen["echo"] = (await client.call_tool("good__echo", {"text": "on time"})).content[0].text
                while "late__echo" not in {t.name for t in (await client.list_tools()).tools}:
                    await anyio.sleep(0.2)
                seen["late"] = (await client.call_tool("late__echo", {"text": "joined"})).content[0].text

    anyio.run(scenario)
    assert seen == {"echo": "on time", "late": "joined"}


def test_a_reload_adding_a_hung_upstream_says_it_has_not_answered_within_seconds(start_daemon):
    daemon = start_daemon(config(upstream("good"), servers=["good"]))
    Path(daemon.config).write_text(
        config(upstream("good"), upstream("hanginit", "--slow-start", "600"), servers=["good", "hanginit"])
    )
    started = time.monotonic()
    done = daemon.harness_cli("reload")
    took = time.monotonic() - started
    assert took < FIRST_ANSWER_WAIT_S + MARGIN_S, took
    assert "upstreams restarted or changed: hanginit;" in done.stdout
    assert "upstream hanginit is not up: started, no answer to initialize yet" in done.stdout


@pytest.mark.parametrize(
    ("mode", "why"),
    [("nan", "NaN is not a JSON number"), ("garbage", "")],
)
def test_a_garbled_tools_list_answer_is_reported_as_such_not_as_a_timeout(start_daemon, mode, why):
    daemon = start_daemon(
        config(upstream("good"), upstream("garbled", "--bad-tools-list", mode), servers=["good"])
    )
    log_file = Path(daemon.state) / "upstreams" / "garbled.log"
    expected = "[harness] start failed: tools/list answer was not valid JSON-RPC: "
    line = wait_until(
        lambda: next((ln for ln in log_file.read_text().splitlines() if ln.startswith(expected)), None), 60
    )
    assert why in line and "no answer" not in line


def test_a_call_held_for_an_upstreams_first_start_is_refused_when_its_timeout_passes(start_daemon, tmp_path):
    """A `shared = false` upstream whose catalogue the store kept is listed at once, and its
    instance starts on the harness's first call, which waits for that start. When the start outlasts
    the upstream's `timeout`, the held call is refused naming the upstream's state once the timeout
    passes, and the daemon does not spin meanwhile."""
    unshared = 'shared = false\ntimeout = "2s"\n\n'
    with running(tmp_path, config(upstream("slow") + unshared, servers=["slow"])) as first:
        wait_until(lambda: "slow__echo" in first.harness_cli("tools", check=False).stdout, 30)
    slow = upstream("slow", "--slow-start", "600") + unshared
    daemon = start_daemon(config(slow, servers=["slow"]))
    env = daemon.harness_envs()["agent"]
    proc = psutil.Process(daemon.proc.pid)
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with Client(bridge_params(env), mode="legacy", cache=None) as client:
            cpu, started = sum(proc.cpu_times()[:2]), time.monotonic()
            with anyio.fail_after(20), pytest.raises(MCPError) as refused:
                await client.call_tool("slow__echo", {"text": "waits"})
            seen.update(
                error=refused.value.error,
                took=time.monotonic() - started,
                cpu=sum(proc.cpu_times()[:2]) - cpu,
            )

    anyio.run(scenario)
    assert seen["error"].code == -32010, seen
    assert "is starting" in seen["error"].message, seen
    assert 1.5 < seen["took"] < 2 + MARGIN_S, seen
    assert seen["cpu"] < 0.5 * seen["took"], f"the daemon spun while the call was held: {seen}"
