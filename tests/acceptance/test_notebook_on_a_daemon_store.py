"""docs/notebooks/call-log.ipynb on a store a real daemon is writing: agents through the official
SDK client make concurrent calls (a slow call starts first and lands last), searches, calls through
``call_tool``, a denied call and a tool error; the store is minutes old."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from notebook_support import execute_notebook, images, printed
from support import DEMO_UPSTREAM, bridge_params, process_env, toml_list, wait_until

pytestmark = pytest.mark.acceptance


def _config() -> str:
    sleeper = '["sleep", "600"]'
    return (
        f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.full]\nservers = ["demo"]\n\n'
        '[mcp_policy.lazy]\nservers = ["demo"]\nexposure = "lazy"\n\n'
        f'[harness.coder]\nargv = {sleeper}\nmcp_policy = "full"\n\n'
        f'[harness.triage]\nargv = {sleeper}\nmcp_policy = "lazy"\n'
    )


async def _coder(env: dict[str, str]) -> None:
    async with Client(bridge_params(env), mode="legacy", cache=None) as client:
        for round_ in range(3):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "demo__sleep", {"ms": 400})
                await anyio.sleep(0.05)
                for i in range(4):
                    tg.start_soon(client.call_tool, "demo__echo", {"text": f"r{round_} {i}"})
            await client.call_tool("demo__fail", {"message": "no"})
        with pytest.raises(Exception, match="not_permitted"):
            await client.call_tool("demo__write_note", {"title": "t", "body": "b"})


async def _triage(env: dict[str, str]) -> None:
    async with Client(bridge_params(env), mode="legacy", cache=None) as client:
        for _ in range(3):
            await client.call_tool("search_tools", {"query": "count the words in a text"})
            await client.call_tool("call_tool", {"name": "demo__word_count", "arguments": {"text": "a b"}})


@pytest.mark.slow
def test_the_notebook_runs_on_a_store_a_real_daemon_wrote_with_concurrent_calls(
    start_daemon, tmp_path, monkeypatch
):
    daemon = start_daemon(_config())
    envs = {name: process_env(row["pid"]) for name, row in wait_until(daemon.running).items()}

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_coder, envs["coder"])
            tg.start_soon(_triage, envs["triage"])

    anyio.run(scenario)
    rows = wait_until(lambda: len(r := daemon.calls()) >= 25 and r)
    positions = [row["position"] for row in rows]  # in start-time order
    assert positions != sorted(positions)  # concurrent calls landed out of start order
    outputs = execute_notebook(daemon.db, tmp_path, monkeypatch)
    text = printed(outputs)
    assert "calls from" in text and "3 searches, 3 followed by a call, hit rate 100.0%" in text
    assert images(outputs) >= 4
