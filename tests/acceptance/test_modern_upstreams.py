"""An upstream that speaks only the 2026-07-28 revision (tests/fixtures/modern_upstream.py: it
refuses ``initialize``) behind a real daemon, over stdio and Streamable HTTP, shared and
``shared = false``: a 2026-07-28 client and a handshake-era client use it at once, its tool that asks
for input takes two rounds for each (the modern client gets the input-required results, the older
one ``elicitation/create`` requests), and each call is one call-log row; the modern client's retries
reach the right call beside the gateway's own elicitation relay; the upstream's tool-list changes
reach the gateway on the ``subscriptions/listen`` stream it opened; cancellations, the round cap,
malformed rounds and a retry that never comes end a call with one row."""

from __future__ import annotations

import subprocess

import anyio
import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from support import (
    FIXTURES,
    PY,
    await_until,
    bridge_params,
    clients_of_both_eras,
    everything_upstream,
    idle_harnesses,
    needs_everything,
    wait_until,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

MODERN_UPSTREAM = FIXTURES / "modern_upstream.py"
STDIO = f'argv = ["{PY}", "{MODERN_UPSTREAM}"]'
"""The fixture over stdio, as an upstream table's command."""


def modern_config(where: str, harnesses: list[str], extra: str = "") -> str:
    """One ``modern`` upstream (``where``: its argv or url line, plus ``extra`` keys) under policy
    ``p``, with an idle harness of that policy per name."""
    return (
        f'[mcp.modern]\n{where}\nread_tools = ["*"]\n{extra}\n'
        '[mcp_policy.p]\nservers = ["modern"]\n\n' + idle_harnesses(dict.fromkeys(harnesses, "p"))
    )


def where_for(request: pytest.FixtureRequest, transport: str) -> str:
    """The upstream table's command line for ``transport``: the HTTP fixture's url, or stdio."""
    return f'url = "{request.getfixturevalue("modern_http")}"' if transport == "http" else STDIO


@pytest.fixture
def modern_http(tmp_path):
    """The fixture over Streamable HTTP (recording to tmp_path / "record.jsonl"); its URL."""
    argv = [PY, str(MODERN_UPSTREAM), "--http", "--record", str(tmp_path / "record.jsonl")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    yield f"http://127.0.0.1:{line.split()[1]}/mcp"
    proc.terminate()
    proc.wait(10)
    proc.stdout.close()


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "unshared"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_2026_only_upstream_serves_a_2026_client_and_a_handshake_client_at_once_input_rounds_included(
    start_daemon, request, transport, shared
):
    config = modern_config(
        where_for(request, transport), ["new", "legacy"], f"shared = {str(shared).lower()}\n"
    )
    daemon = start_daemon(config)
    envs = daemon.harness_envs()
    asked: dict[str, list[str]] = {"new": [], "legacy": []}
    seen: dict[str, object] = {}

    def answer_as(who: str):
        async def on_elicit(context, params) -> types.ElicitResult:
            asked[who].append(params.message)
            return types.ElicitResult(action="accept", content={"name": f"{who}{len(asked[who])}"})

        return on_elicit

    async def use(client: Client, who: str) -> None:
        for i in range(10):
            echoed = await client.call_tool("modern__echo", {"text": f"{who}-{i}"})
            assert echoed.content[0].text == f"{who}-{i}"
        seen[who] = (await client.call_tool("modern__ask", {"tag": who, "rounds": 2})).content[0].text
        seen[f"{who} poll"] = (await client.call_tool("modern__poll", {})).content[0].text
        seen[f"{who} region"] = (await client.call_tool("modern__region", {"region": "eu-1"})).content[0].text
        try:
            await client.call_tool("modern__sample", {})
        except MCPError as exc:
            seen[f"{who} sample"] = exc.error.message

    async def scenario() -> None:
        async with clients_of_both_eras(envs, answer_as) as (new, legacy):
            seen["versions"] = (new.session.protocol_version, legacy.session.protocol_version)
            async with anyio.create_task_group() as group:
                group.start_soon(use, new, "new")
                group.start_soon(use, legacy, "legacy")

    anyio.run(scenario)
    assert seen["versions"] == ("2026-07-28", "2025-11-25")
    assert seen["new"] == "new:new1,new2" and seen["legacy"] == "legacy:legacy1,legacy2"
    assert asked == {"new": ["new", "new"], "legacy": ["legacy", "legacy"]}
    assert seen["new poll"] == seen["legacy poll"] == "polled"  # a round with only a requestState
    assert seen["new region"] == seen["legacy region"] == "eu-1"  # over HTTP, with its Mcp-Param-Region
    for who in ("new", "legacy"):
        assert "does not forward sampling/createMessage" in str(seen[f"{who} sample"])
    fetched = daemon.events("upstream.tool_catalog_fetched")
    assert {e["protocol_version"] for e in fetched} == {"2026-07-28"}
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 28 and r, timeout=20)
    by_tool = sorted((r["harness"], r["tool"], r["outcome"]) for r in rows if r["tool"] != "echo")
    assert by_tool == [
        ("legacy", "ask", "ok"),
        ("legacy", "poll", "ok"),
        ("legacy", "region", "ok"),
        ("legacy", "sample", "tool_error"),
        ("new", "ask", "ok"),
        ("new", "poll", "ok"),
        ("new", "region", "ok"),
        ("new", "sample", "tool_error"),
    ]  # one row per call, however many rounds
    assert len(rows) == 28


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_2026_only_upstreams_tool_list_change_reaches_the_gateway_on_its_listen_stream(
    start_daemon, request, transport
):
    config = modern_config(where_for(request, transport), ["new"])
    daemon = start_daemon(config)
    env = daemon.harness_envs()["new"]

    async def scenario() -> str:
        async with Client(bridge_params(env), cache=None) as client:
            assert (await client.call_tool("modern__grow", {})).content[0].text == "grown1"
            with anyio.fail_after(20):
                while "modern__grown1" not in {t.name for t in (await client.list_tools()).tools}:
                    await anyio.sleep(0.05)
            return (await client.call_tool("modern__grown1", {})).content[0].text

    assert anyio.run(scenario) == "grown1"
    counts = [e["tool_count"] for e in daemon.events("upstream.tool_catalog_fetched")]
    assert len(counts) == 2 and counts[1] == counts[0] + 1  # fetched at start, then once more


def test_input_rounds_stop_at_ten_a_malformed_round_ends_its_call_and_a_2026_client_that_never_calls_again_times_out(
    start_daemon,
):
    config = modern_config(STDIO, ["new", "legacy"], 'timeout = "2s"\n')
    daemon = start_daemon(config)
    envs = daemon.harness_envs()
    asked: list[str] = []
    seen: dict[str, object] = {}

    async def on_elicit(context, params) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "x"})

    async def scenario() -> None:
        async with (
            Client(bridge_params(envs["new"]), cache=None, elicitation_callback=on_elicit) as new,
            Client(
                bridge_params(envs["legacy"]), mode="legacy", cache=None, elicitation_callback=on_elicit
            ) as legacy,
        ):
            try:
                await legacy.call_tool("modern__ask", {"tag": "many", "rounds": 12})
            except MCPError as exc:
                seen["legacy"] = exc.error.message
            for who, client in (("new", new), ("legacy", legacy)):
                try:
                    await client.call_tool("modern__garble", {})
                except MCPError as exc:
                    seen[f"{who} garble"] = exc.error.message
            first = await new.session.call_tool("modern__ask", {"tag": "left"}, allow_input_required=True)
            seen["new"] = first
            # the client never calls again, and stays connected until the call is recorded
            seen["rows"] = await await_until(lambda: (r := daemon.calls()) and len(r) == 4 and r, timeout=20)

    anyio.run(scenario)
    assert len(asked) == 10 and "asked for input more than 10 times" in str(seen["legacy"])
    assert isinstance(seen["new"], types.InputRequiredResult)
    assert list(seen["new"].input_requests) == ["name"]  # as the upstream keyed it
    rows = seen["rows"]
    assert (
        seen["new garble"]
        == seen["legacy garble"]
        == "the upstream's inputRequests is not an object of requests"
    )
    assert sorted((r["harness"], r["tool"], r["outcome"]) for r in rows) == [
        ("legacy", "ask", "tool_error"),
        ("legacy", "garble", "tool_error"),
        ("new", "ask", "timeout"),
        ("new", "garble", "tool_error"),
    ]


def test_a_cancelled_call_to_a_2026_only_http_upstream_closes_its_post(start_daemon, modern_http, tmp_path):
    config = modern_config(f'url = "{modern_http}"', ["legacy"])
    daemon = start_daemon(config)
    env = daemon.harness_envs()["legacy"]

    async def scenario() -> None:
        async with Client(bridge_params(env), mode="legacy", cache=None) as client:
            with anyio.move_on_after(0.5):  # the SDK sends notifications/cancelled
                await client.call_tool("modern__sleep", {"ms": 20000})

    anyio.run(scenario)
    recorded = tmp_path / "record.jsonl"
    closed = wait_until(
        lambda: [line for line in recorded.read_text().splitlines() if '"closed"' in line], timeout=10
    )
    assert len(closed) == 1
    rows = wait_until(daemon.calls, timeout=10)
    assert [(r["tool"], r["outcome"]) for r in rows] == [("sleep", "cancelled")]


def test_a_handshake_client_that_cancels_while_asked_for_input_ends_the_call_cancelled(start_daemon):
    config = modern_config(STDIO, ["legacy"])
    daemon = start_daemon(config)
    env = daemon.harness_envs()["legacy"]
    asked, release = anyio.Event(), anyio.Event()

    async def on_elicit(context, params) -> types.ElicitResult:
        asked.set()
        await release.wait()  # answers after the call was given up
        return types.ElicitResult(action="accept", content={"name": "late"})

    async def scenario() -> str:
        async with Client(
            bridge_params(env), mode="legacy", cache=None, elicitation_callback=on_elicit
        ) as client:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool("modern__ask", {"tag": "t"})

                group.start_soon(call)
                with anyio.fail_after(20):
                    await asked.wait()
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            await await_until(daemon.calls, timeout=20)
            release.set()  # the late answer arrives and goes nowhere
            return (await client.call_tool("modern__echo", {"text": "still here"})).content[0].text

    assert anyio.run(scenario) == "still here"
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) == 2 and r, timeout=10)
    assert sorted((r["tool"], r["outcome"]) for r in rows) == [("ask", "cancelled"), ("echo", "ok")]


@needs_everything
def test_a_2026_clients_retries_reach_the_right_place_when_the_gateways_own_relay_and_an_upstreams_rounds_interleave(
    start_daemon,
):
    config = (
        f'[mcp.modern]\n{STDIO}\nread_tools = ["*"]\n\n'
        + everything_upstream()
        + '[mcp_policy.p]\nservers = ["modern", "everything"]\n\n'
        + idle_harnesses({"new": "p"})
    )
    daemon = start_daemon(config)
    env = daemon.harness_envs()["new"]
    asked: list[str] = []

    async def on_elicit(context, params) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "n"})

    async def scenario() -> tuple[str, str]:
        async with Client(bridge_params(env), cache=None, elicitation_callback=on_elicit) as client:
            out: dict[str, str] = {}

            async def ask() -> None:
                result = await client.call_tool("modern__ask", {"tag": "mine", "rounds": 3})
                out["ask"] = result.content[0].text

            async def relayed() -> None:
                result = await client.call_tool("everything__trigger-elicitation-request", {})
                out["relayed"] = str(result.content)

            async with anyio.create_task_group() as group:
                group.start_soon(ask)
                group.start_soon(relayed)
            return out["ask"], out["relayed"]

    ask, relayed = anyio.run(scenario)
    assert ask == "mine:n,n,n"
    assert asked.count("mine") == 3 and len(asked) == 4
    assert "accept" in relayed.lower()
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) == 2 and r, timeout=20)
    assert sorted((r["upstream"], r["outcome"]) for r in rows) == [("everything", "ok"), ("modern", "ok")]
