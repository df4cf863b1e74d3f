"""An upstream that speaks both eras (the python-sdk everything server, mcp 2.3) behind a real daemon,
over Streamable HTTP and stdio: each session reaches it in its own era, as it would reach the server
directly. A handshake-era client's tool that elicits by a request of the server's (``ctx.elicit``)
and a 2026-07-28 client's multi-round tool (input-required results, SEP-2322) run at once, one
call-log row per call; over stdio the 2026-07-28 calls start exactly one more upstream process, and
only once a 2026-07-28 client calls. An upstream that speaks only the handshake (the npm everything
server) keeps converting its elicitations into input-required results for a 2026-07-28 client, its
second process stopped once it failed discovery."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client, types

from support import (
    EVERYTHING,
    bridge_params,
    everything_upstream,
    idle_harnesses,
    needs_everything,
    python_everything_server,
    wait_until,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

TWIN = "everything~2026-07-28"
POLICY = '[mcp_policy.p]\nservers = ["everything"]\n\n' + idle_harnesses({"new": "p", "legacy": "p"})


def _answers(asked: list[str]):
    """An elicitation callback that records each message and answers what each step asks."""

    async def on_elicit(context, params) -> types.ElicitResult:
        asked.append(params.message)
        content = {"color": "green"} if "color" in params.message else {"name": "Ada", "response": "yes"}
        return types.ElicitResult(action="accept", content=content)

    return on_elicit


def _upstream_processes(daemon, marker: str) -> int:
    return len(daemon.descendants_running(marker))


@pytest.mark.parametrize(
    ("transport", "shared"),
    [("http", True), ("stdio", True), ("stdio", False)],
    ids=["http", "stdio", "unshared"],
)
def test_a_dual_era_upstream_serves_each_session_in_its_own_era_legacy_elicitation_and_input_rounds_at_once(
    start_daemon, tmp_path: Path, transport: str, shared: bool
):
    with python_everything_server(transport, tmp_path) as where:
        table = f'[mcp.everything]\n{where}shared = {str(shared).lower()}\nread_tools = ["*"]\n\n'
        daemon = start_daemon(table + POLICY)
        envs = daemon.harness_envs()
        asked: dict[str, list[str]] = {"new": [], "legacy": []}
        seen: dict[str, object] = {}

        async def scenario() -> None:
            async with (
                Client(
                    bridge_params(envs["new"]), cache=None, elicitation_callback=_answers(asked["new"])
                ) as new,
                Client(
                    bridge_params(envs["legacy"]),
                    mode="legacy",
                    cache=None,
                    elicitation_callback=_answers(asked["legacy"]),
                ) as legacy,
            ):
                seen["versions"] = (new.session.protocol_version, legacy.session.protocol_version)
                await new.list_tools()
                await legacy.call_tool("everything__test_simple_text", {})
                seen["processes before"] = _upstream_processes(daemon, "stdio.py")

                async def legacy_calls() -> None:
                    for i in range(3):
                        result = await legacy.call_tool(
                            "everything__test_elicitation", {"message": f"old {i}"}
                        )
                        seen[f"legacy {i}"] = result.content[0].text

                async def new_calls() -> None:
                    for i in range(3):
                        result = await new.call_tool("everything__test_input_required_result_multi_round", {})
                        seen[f"new {i}"] = result.content[0].text
                    result = await new.call_tool("everything__test_input_required_result_elicitation", {})
                    seen["new single"] = result.content[0].text

                async with anyio.create_task_group() as group:
                    group.start_soon(legacy_calls)
                    group.start_soon(new_calls)
                seen["processes after"] = _upstream_processes(daemon, "stdio.py")

        anyio.run(scenario)
        status = json.loads(daemon.harness_cli("status", "--json").stdout)  # while the server runs

    assert seen["versions"] == ("2026-07-28", "2025-11-25")
    for i in range(3):
        assert seen[f"legacy {i}"] == 'User response: action=accept, content={"response":"yes"}'
        assert seen[f"new {i}"] == "Ada likes green."
    assert seen["new single"] == "Hello, Ada!"
    assert asked["legacy"] == ["old 0", "old 1", "old 2"]
    assert asked["new"] == ["Step 1: What is your name?", "Step 2: What is your favorite color?"] * 3 + [
        "What is your name?"
    ]
    # Over stdio the twin is one more process, started by the first 2026-07-28 call (shared = false:
    # the new harness's own instance starts on that call too); over HTTP none.
    processes = (seen["processes before"], seen["processes after"])
    assert (
        processes
        == {"http": (0, 0), "stdio": (1, 2), "unshared": (1, 3)}[transport if shared else "unshared"]
    )
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 8 and r, timeout=20)
    assert sorted((r["harness"], r["upstream"], r["tool"], r["outcome"]) for r in rows) == sorted(
        [("legacy", "everything", "test_simple_text", "ok")]
        + [("legacy", "everything", "test_elicitation", "ok")] * 3
        + [("new", "everything", "test_input_required_result_multi_round", "ok")] * 3
        + [("new", "everything", "test_input_required_result_elicitation", "ok")]
    )
    twin = TWIN if shared else "everything@new~2026-07-28"
    states = wait_until(
        lambda: (
            (s := {(e["upstream"], e["state"]) for e in daemon.events("upstream.state_changed")})
            >= {(twin, "up"), ("everything", "up")}
            and s
        ),
        timeout=10,
        message="both instances up",
    )
    assert (twin, "stopped") not in states
    assert {e["upstream"] for e in daemon.events("upstream.tool_catalog_fetched")} == {"everything"}
    upstreams = status["upstreams"]
    rows = upstreams if shared else upstreams["everything"]["instances"]
    assert rows[twin.removeprefix("everything@")]["state"] == "up"


@needs_everything
def test_a_handshake_only_upstream_still_converts_elicitation_for_a_2026_client_its_second_process_stopped(
    start_daemon,
):
    daemon = start_daemon(everything_upstream() + POLICY)
    envs = daemon.harness_envs()
    asked: list[str] = []
    seen: dict[str, object] = {}

    async def calls(first: int) -> None:
        async with Client(
            bridge_params(envs["new"]), cache=None, elicitation_callback=_answers(asked)
        ) as new:
            for i in range(first, first + 2):
                result = await new.call_tool("everything__trigger-elicitation-request", {})
                seen[f"call {i}"] = result.content[0].text

    anyio.run(calls, 0)
    assert seen["call 0"] == seen["call 1"] and len(asked) == 2

    def stopped() -> list[str]:
        events = daemon.events("upstream.state_changed")
        return [e["reason"] for e in events if e["upstream"] == TWIN and e["state"] == "stopped"]

    wait_until(stopped, timeout=10, message="the twin's stop recorded")
    assert stopped() == ["handshake only"]  # discovered once, then remembered
    wait_until(lambda: _upstream_processes(daemon, str(EVERYTHING)) == 1, timeout=10, message="one process")
    daemon.harness_cli("restart", "everything")  # forgotten when its instance starts again
    anyio.run(calls, 2)
    assert seen["call 2"] == seen["call 0"] and len(asked) == 4
    wait_until(lambda: len(stopped()) == 2, timeout=10, message="the second twin's stop recorded")
    assert stopped() == ["handshake only", "handshake only"]
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 4 and r, timeout=20)
    assert [(r["harness"], r["outcome"]) for r in rows] == [("new", "ok")] * 4
