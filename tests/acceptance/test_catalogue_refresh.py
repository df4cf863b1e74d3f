"""An upstream that changes its tools: the gateway re-reads them on ``notifications/tools/list_changed``,
records the new catalogue with the server's name and version from its handshake (the search index reads
the product words from them), and a session sees the new tool. Real processes."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from support import FAULTY_UPSTREAM, PY, bridge_params, idle_harnesses, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


def test_a_changed_tool_list_is_recorded_with_the_servers_name_and_served(start_daemon):
    upstream = f'[mcp.faulty]\nargv = ["{PY}", "{FAULTY_UPSTREAM}"]\n\n'
    policy = '[mcp_policy.p]\nservers = ["faulty"]\n\n'
    daemon = start_daemon(upstream + policy + idle_harnesses({"agent": "p"}))
    env = daemon.harness_envs()["agent"]
    seen: dict[str, object] = {}

    async def scenario() -> None:
        async with Client(bridge_params(env), mode="legacy", cache=None) as client:
            before = {t.name for t in (await client.list_tools()).tools}
            grown = await client.call_tool("faulty__grow", {})
            name = grown.content[0].text
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: len(daemon.events("upstream.tool_catalog_fetched")) >= 2, 30)
            )
            after = {t.name for t in (await client.list_tools()).tools}
            seen.update(before=before, after=after, name=name)

    anyio.run(scenario)
    assert seen["after"] == seen["before"] | {f"faulty__{seen['name']}"}
    first, second = daemon.events("upstream.tool_catalog_fetched")[:2]
    assert (first["server_name"], first["server_version"]) == ("faulty", "1")
    assert (second["server_name"], second["server_version"]) == ("faulty", "1")
    assert second["protocol_version"] == first["protocol_version"]
    assert second["tool_count"] == first["tool_count"] + 1
