"""Upstream log messages through the gateway (the real `@modelcontextprotocol/server-everything`):
a session that set a level gets them, marked with the upstream's key; one that did not gets none."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from support import bridge_params, everything_upstream, idle_harnesses, needs_everything

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.slow,
    needs_everything,
]


# logging/setLevel is a handshake-era method (deprecated by SEP-2577 in 2026-07-28): the SDK warns.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_log_messages_reach_the_sessions_that_asked_for_them_with_the_upstream_named(start_daemon):
    harnesses = idle_harnesses(dict.fromkeys(("a", "b"), "p"))
    daemon = start_daemon(everything_upstream() + f'[mcp_policy.p]\nservers = ["everything"]\n\n{harnesses}')
    envs = daemon.harness_envs()
    logs: dict[str, list[tuple[str, str]]] = {"a": [], "b": []}

    def collector(name: str):
        async def on_log(params) -> None:
            logs[name].append((params.level, params.logger))

        return on_log

    async def scenario() -> None:
        async with (
            Client(bridge_params(envs["a"]), mode="legacy", cache=None, logging_callback=collector("a")) as a,
            Client(bridge_params(envs["b"]), mode="legacy", cache=None, logging_callback=collector("b")) as b,
        ):
            assert a.server_capabilities.logging is not None
            await a.set_logging_level("debug")  # every level from now on
            await b.list_tools()  # b never sets a level
            await a.call_tool("everything__toggle-simulated-logging", {})  # one message at once
            with anyio.fail_after(15):
                while not logs["a"]:
                    await anyio.sleep(0.05)
            await a.call_tool("everything__toggle-simulated-logging", {})

    anyio.run(scenario)
    assert logs["a"] and all(logger.startswith("everything") for _level, logger in logs["a"])
    assert logs["b"] == []
