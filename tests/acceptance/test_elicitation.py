"""Elicitation through the gateway (the real `@modelcontextprotocol/server-everything`): relayed to
the one session whose call is in flight, refused to a client that did not declare the capability,
and refused when several calls are in flight on the upstream (nothing says whose it is)."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client, types

from support import bridge_params, everything_upstream, idle_harnesses, needs_everything

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,
    needs_everything,
]

TOOL = "everything__trigger-elicitation-request"


def test_an_elicitation_reaches_only_the_session_whose_call_asked_and_is_refused_when_ambiguous(
    start_daemon, tmp_path
):
    harnesses = idle_harnesses(dict.fromkeys(("a", "b", "c"), "p"))
    daemon = start_daemon(everything_upstream() + f'[mcp_policy.p]\nservers = ["everything"]\n\n{harnesses}')
    envs = daemon.harness_envs()
    asked: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    seen: dict = {}

    def asker(name: str):
        async def on_elicit(context, params) -> types.ElicitResult:
            asked[name].append(params.message)
            return types.ElicitResult(action="decline")

        return on_elicit

    async def scenario() -> None:
        async with (
            Client(bridge_params(envs["a"]), mode="legacy", cache=None, elicitation_callback=asker("a")) as a,
            Client(bridge_params(envs["b"]), mode="legacy", cache=None) as b,
            Client(bridge_params(envs["c"]), mode="legacy", cache=None, elicitation_callback=asker("c")) as c,
        ):
            assert TOOL in [t.name for t in (await a.list_tools()).tools]
            seen["a"] = await a.call_tool(TOOL, {})
            seen["b"] = await _outcome(b.call_tool(TOOL, {}))  # its client has no elicitation capability
            async with anyio.create_task_group() as group:  # a long call in flight, then c asks
                group.start_soon(
                    a.call_tool, "everything__trigger-long-running-operation", {"duration": 2, "steps": 2}
                )
                await anyio.sleep(0.5)
                seen["c"] = await _outcome(c.call_tool(TOOL, {}))

    anyio.run(scenario)
    assert len(asked["a"]) == 1 and asked["a"][0].startswith("Please provide inputs")
    assert "decline" in json.dumps(seen["a"].model_dump(mode="json")).lower()
    assert asked["b"] == [] and "did not declare elicitation" in seen["b"]
    assert asked["c"] == [] and "2 calls are in flight" in seen["c"]


async def _outcome(call) -> str:
    """What a call came back with, as text: its result's content, or the error it raised."""
    try:
        result = await call
    except Exception as exc:
        return str(exc)
    return json.dumps(result.model_dump(mode="json"))
