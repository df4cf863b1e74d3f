"""An upstream that announces a new tool list which comes back the same (the faulty fixture's
``announce``; the python-sdk everything server's ``test_trigger_tool_change`` adds a tool and removes
it again before it announces): the gateway re-reads the list, records no new catalogue, and still
passes the announcement on to the sessions that list that upstream's tools, as the upstream alone
would have told them; a session whose policy does not expose the upstream hears nothing. Real
processes: a daemon, the fixture on stdio, SDK clients over `harness mcp`."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from support import DEMO_UPSTREAM, FAULTY_UPSTREAM, PY, bridge_params, idle_harnesses, toml_list

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

CHANGED = "notifications/tools/list_changed"


def test_an_upstreams_tool_list_announcement_reaches_the_sessions_that_list_its_tools(start_daemon):
    upstreams = f"[mcp.faulty]\nargv = {toml_list([PY, FAULTY_UPSTREAM])}\n\n[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
    policies = '[mcp_policy.all]\nservers = ["faulty"]\n\n[mcp_policy.other]\nservers = ["demo"]\n\n'
    daemon = start_daemon(upstreams + policies + idle_harnesses({"lister": "all", "outsider": "other"}))
    envs = daemon.harness_envs()
    heard: dict[str, list[str]] = {"lister": [], "outsider": []}

    def client(name: str) -> Client:
        async def on_message(message: object) -> None:
            if getattr(message, "method", None) == CHANGED:
                heard[name].append(CHANGED)

        return Client(bridge_params(envs[name]), mode="legacy", cache=None, message_handler=on_message)

    async def scenario() -> None:
        async with client("lister") as lister, client("outsider") as outsider:
            before = {t.name for t in (await lister.list_tools()).tools}
            await outsider.list_tools()
            result = await lister.call_tool("faulty__announce", {})
            assert not result.is_error, result.content
            with anyio.fail_after(20):
                while not heard["lister"]:
                    await anyio.sleep(0.05)
            assert {t.name for t in (await lister.list_tools()).tools} == before
            await outsider.list_tools()  # a round trip after the announcement, which would come first

    anyio.run(scenario)
    assert heard == {"lister": [CHANGED], "outsider": []}
    catalogues = [e["upstream"] for e in daemon.events("upstream.tool_catalog_fetched")]
    assert sorted(catalogues) == ["demo", "faulty"], "the same catalogue is not recorded again"
