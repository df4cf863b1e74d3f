"""Protocol revisions meet at the gateway: a 2026-07-28 client (the SDK's default ``Client``, which
probes ``server/discover``) and a 2025-11-25 client on one daemon at the same time, both calling a
2024-11-05 upstream and a 2025-era upstream whose elicitation reaches the modern client as an
``input_required`` result and the older client as a request; and a 2026-07-28 client over the HTTP
endpoint (no session id: a listen stream, an elicitation, a cancellation by closing the call's
stream). Real processes throughout."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from support import (
    FAULTY_UPSTREAM,
    PY,
    clients_of_both_eras,
    everything_upstream,
    free_port,
    idle_harnesses,
    needs_everything,
    wait_until,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.slow, needs_everything]

ELICIT = "everything__trigger-elicitation-request"
OLD_UPSTREAM = f'[mcp.old]\nargv = ["{PY}", "{FAULTY_UPSTREAM}", "--protocol", "2024-11-05"]\n\n'


def test_a_2026_client_and_a_2025_client_share_a_2024_upstream_and_an_eliciting_one(start_daemon):
    policy = '[mcp_policy.p]\nservers = ["old", "everything"]\n\n'
    daemon = start_daemon(
        OLD_UPSTREAM + everything_upstream() + policy + idle_harnesses({"new": "p", "legacy": "p"})
    )
    envs = daemon.harness_envs()
    asked: dict[str, list[str]] = {"new": [], "legacy": []}
    seen: dict[str, object] = {}

    def answer_as(name: str):
        async def on_elicit(context, params) -> types.ElicitResult:
            asked[name].append(params.message)
            return types.ElicitResult(action="decline")

        return on_elicit

    async def echo_many(client: Client, who: str) -> None:
        for i in range(20):
            result = await client.call_tool("old__echo", {"text": f"{who}-{i}"})
            assert result.content[0].text == f"{who}-{i}"

    async def scenario() -> None:
        async with clients_of_both_eras(envs, answer_as) as (new, legacy):
            seen["versions"] = (new.session.protocol_version, legacy.session.protocol_version)
            async with new.listen(tools_list_changed=True) as stream:
                seen["honored"] = stream.honored
                names = {t.name for t in (await new.list_tools()).tools}
                assert {"old__echo", ELICIT} <= names
                assert names == {t.name for t in (await legacy.list_tools()).tools}
                async with anyio.create_task_group() as group:  # both eras on the 2024 upstream at once
                    group.start_soon(echo_many, new, "new")
                    group.start_soon(echo_many, legacy, "legacy")
                seen["new"] = await new.call_tool(ELICIT, {})
                seen["legacy"] = await legacy.call_tool(ELICIT, {})

    anyio.run(scenario)
    assert seen["versions"] == ("2026-07-28", "2025-11-25")
    assert seen["honored"].tools_list_changed is True
    assert len(asked["new"]) == 1 and asked["new"][0].startswith("Please provide inputs")
    assert len(asked["legacy"]) == 1
    for name in ("new", "legacy"):
        result = seen[name]
        assert not result.is_error and "decline" in str(result.content).lower(), result

    upstreams = {e["upstream"]: e["protocol_version"] for e in daemon.events("upstream.tool_catalog_fetched")}
    assert upstreams["old"] == "2024-11-05"
    sessions = {e["protocol_version"] for e in daemon.events("session.initialized") if e["harness"]}
    assert sessions == {"2026-07-28", "2025-11-25"}
    elicited = [row for row in daemon.calls() if row["tool"] == "trigger-elicitation-request"]
    assert [row["outcome"] for row in elicited] == ["ok", "ok"]  # one row per call, its two rounds included


def test_a_2026_client_over_the_http_endpoint_elicits_listens_and_cancels_by_closing_its_stream(start_daemon):
    port = free_port()
    listen = f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n'
    policy = '[mcp_policy.p]\nservers = ["old", "everything"]\n\n'
    daemon = start_daemon(
        listen + OLD_UPSTREAM + everything_upstream() + policy + idle_harnesses({"new": "p"})
    )
    token = daemon.harness_envs()["new"]["HARNESS_MCP_TOKEN"]
    asked: list[str] = []
    seen: dict[str, object] = {}

    async def on_elicit(context, params) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async def scenario() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
        async with http, Client(transport, cache=None, elicitation_callback=on_elicit) as client:
            seen["version"] = client.session.protocol_version
            async with client.listen(tools_list_changed=True) as stream:
                seen["honored"] = stream.honored
                seen["echo"] = (await client.call_tool("old__echo", {"text": "over http"})).content[0].text
                seen["elicited"] = await client.call_tool(ELICIT, {})
                with anyio.move_on_after(0.5):  # the SDK closes the call's response stream: its cancel
                    await client.call_tool("old__sleep", {"ms": 20000})

    anyio.run(scenario)
    assert seen["version"] == "2026-07-28" and seen["honored"].tools_list_changed is True
    assert seen["echo"] == "over http"
    assert len(asked) == 1 and "decline" in str(seen["elicited"].content).lower()
    rows = wait_until(
        lambda: (r := daemon.calls()) and any(x["tool"] == "sleep" for x in r) and r, timeout=20
    )
    assert [r["outcome"] for r in rows if r["tool"] == "sleep"] == ["cancelled"]
    assert [r["outcome"] for r in rows if r["tool"] == "trigger-elicitation-request"] == ["ok"]
