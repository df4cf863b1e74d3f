"""Upstream resources through the gateway (the real `@modelcontextprotocol/server-everything`):
listed, templates listed, read (a listed URI, and one made from a template), subscribed with the
upstream's updates reaching exactly the subscribed sessions; nothing for a policy without it."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from support import (
    DEMO_UPSTREAM,
    bridge_params,
    everything_upstream,
    idle_harnesses,
    needs_everything,
    toml_list,
)

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,
    needs_everything,
]

DOC = "demo://resource/static/document/architecture.md"


# resources/subscribe is a handshake-era method (the 2026-07-28 era replaces it with listen): the SDK
# warns on each call, and these sessions are handshake-era.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_resources_are_listed_read_and_subscribed_and_updates_reach_only_subscribers(start_daemon):
    harnesses = idle_harnesses({"a": "all", "b": "all", "c": "all", "d": "demo-only"})
    daemon = start_daemon(
        everything_upstream() + f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.all]\nservers = ["everything", "demo"]\n\n[mcp_policy.demo-only]\nservers = ["demo"]\n\n'
        + harnesses
    )
    envs = daemon.harness_envs()
    updates: dict[str, list[str]] = {n: [] for n in "abcd"}
    seen: dict = {}

    def collector(name: str):
        async def on_message(message) -> None:
            if getattr(message, "method", None) == "notifications/resources/updated":
                updates[name].append(str(message.params.uri))

        return on_message

    def client(name: str) -> Client:
        return Client(bridge_params(envs[name]), mode="legacy", cache=None, message_handler=collector(name))

    async def scenario() -> None:
        async with client("a") as a, client("b") as b, client("c") as c, client("d") as d:
            seen["capability"] = a.server_capabilities.resources
            listed = [str(r.uri) for r in (await a.list_resources()).resources]
            seen["listed"] = listed
            seen["templates"] = [
                t.uri_template for t in (await a.list_resource_templates()).resource_templates
            ]
            seen["doc"] = (await a.read_resource(DOC)).contents[0].text
            seen["templated"] = (await a.read_resource("demo://resource/dynamic/text/7")).contents[0].text
            await b.list_resources()
            await a.subscribe_resource(DOC)
            await b.subscribe_resource(DOC)
            await c.list_resources()  # lists, never subscribes
            seen["d_capability"] = d.server_capabilities.resources
            seen["d_listed"] = await _outcome(d.list_resources())
            await a.call_tool("everything__toggle-subscriber-updates", {})  # updates start at once
            with anyio.fail_after(15):
                while not (updates["a"] and updates["b"]):
                    await anyio.sleep(0.05)
            await a.call_tool("everything__toggle-subscriber-updates", {})  # and stop

    anyio.run(scenario)
    assert seen["capability"] is not None and seen["capability"].subscribe is True
    assert DOC in seen["listed"]
    assert "demo://resource/dynamic/text/{resourceId}" in seen["templates"]
    assert seen["doc"].startswith("#")
    assert "7" in seen["templated"]
    assert set(updates["a"]) == {DOC} and set(updates["b"]) == {DOC}
    assert updates["c"] == [] and updates["d"] == []
    assert seen["d_capability"] is None  # its policy exposes no upstream that serves resources
    assert "resources=[]" in seen["d_listed"]  # nothing listed, whoever else serves resources
    assert daemon.proc.poll() is None


async def _outcome(call) -> str:
    try:
        result = await call
    except Exception as exc:
        return str(exc)
    return str(result)
