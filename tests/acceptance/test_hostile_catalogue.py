"""A hostile or broken upstream catalogue hurts no one else: tools an MCP client would refuse are
mended or dropped (logged, and named by `harness doctor`), every tool stays reachable by a name of
its own, a catalogue is capped and a large listing is paged. Real daemon, real SDK client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from harness.gateway.downstream.tool_pages import PAGE_BYTES
from harness.gateway.upstream.catalogue import MAX_TOOLS
from support import FAULTY_UPSTREAM, PY, bridge_params, idle_harnesses

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

SCHEMA = {"type": "object"}


def upstream(name: str, *flags: str) -> str:
    argv = json.dumps([PY, str(FAULTY_UPSTREAM), *flags])
    return f'[mcp.{name}]\nargv = {argv}\nread_tools = ["*"]\n\n'


def setup(start_daemon: Any, *tables: str, servers: list[str]) -> Any:
    policy = f"[mcp_policy.p]\nservers = {json.dumps(servers)}\n\n"
    return start_daemon("".join(tables) + policy + idle_harnesses({"agent": "p"}))


def upstream_log(daemon: Any, name: str) -> str:
    return (Path(daemon.state) / "upstreams" / f"{name}.log").read_text(errors="replace")


def test_an_sdk_client_lists_and_calls_good_tools_beside_a_schemaless_and_a_malformed_tool(start_daemon):
    extra = [
        {"name": "noschema", "description": "no input schema", "annotations": {"readOnlyHint": True}},
        {"name": "listy", "inputSchema": {"type": "array"}},
        {"name": "esc\x1b]0;PWNED\x07", "inputSchema": SCHEMA},
        {"name": "rtl\u202eelif_daer", "inputSchema": SCHEMA},
        {"name": ["not", "a", "string"], "inputSchema": SCHEMA},
    ]
    daemon = setup(start_daemon, upstream("names", "--extra-tools", json.dumps(extra)), servers=["names"])
    env = daemon.harness_envs()["agent"]
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with Client(bridge_params(env), mode="legacy", cache=None) as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                echoed = await client.call_tool("names__echo", {"text": "still here"})
                seen.update(listed=listed, echoed=echoed.content[0].text)

    anyio.run(scenario)
    listed = seen["listed"]
    assert seen["echoed"] == "still here"
    assert listed["names__noschema"].input_schema == SCHEMA
    assert not [n for n in listed if n.startswith(("names__listy", "names__esc", "names__rtl"))]
    log = upstream_log(daemon, "names")
    assert """[harness] mended tool 'noschema': no inputSchema, given {"type": "object"}""" in log
    assert "[harness] dropped tool 'listy': inputSchema.type: Input should be 'object'" in log
    assert "[harness] dropped tool 'esc\\x1b]0;PWNED\\x07': the name is not 1-128 characters" in log
    assert "[harness] dropped tool 'rtl\\u202eelif_daer': the name is not" in log
    assert "[harness] dropped a tool whose name is not a string" in log
    doctor = json.loads(daemon.harness_cli("doctor", "--json", check=False).stdout)
    notes = [f["text"] for f in doctor["findings"] if f["status"] == "note"]
    assert (
        "upstream names: dropped tool 'listy': inputSchema.type: Input should be 'object' (MCP 2025-11-25)"
        in notes
    )
    assert any(n.startswith("upstream names: mended tool 'noschema'") for n in notes)


@pytest.mark.parametrize("order", ["dotted first", "literal first"])
def test_a_tool_whose_name_shortens_onto_another_tools_name_leaves_both_reachable(start_daemon, order):
    tools = [{"name": "del.ete", "inputSchema": SCHEMA}, {"name": "del_ete_1ec454b0", "inputSchema": SCHEMA}]
    if order == "literal first":
        tools.reverse()
    daemon = setup(start_daemon, upstream("names", "--extra-tools", json.dumps(tools)), servers=["names"])
    env = daemon.harness_envs()["agent"]
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with Client(bridge_params(env), mode="legacy", cache=None) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                answers = {}
                for name in sorted(n for n in listed if n.startswith("names__del")):
                    try:
                        answers[name] = (await client.call_tool(name, {})).is_error
                    except MCPError as exc:  # the fixture knows neither tool: -32602 from the upstream
                        answers[name] = exc.error.message
                seen.update(listed=listed, answers=answers)

    anyio.run(scenario)
    assert set(seen["answers"]) == {"names__del_ete_1ec454b0", "names__del_ete_1ec454b0_f9e153d7"}
    calls = {(c["upstream"], c["tool"]) for c in daemon.calls()}
    assert {("names", "del.ete"), ("names", "del_ete_1ec454b0")} <= calls


def test_a_huge_catalogue_is_capped_and_an_sdk_client_pages_through_the_listing(start_daemon):
    listed_numbered = MAX_TOOLS + 100
    flags = ("--numbered-tools", str(listed_numbered), "--pad-schemas", "600")
    daemon = setup(start_daemon, upstream("many", *flags), servers=["many"])
    env = daemon.harness_envs()["agent"]
    pages: list[list[Any]] = []
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        with anyio.fail_after(120):
            async with Client(bridge_params(env), mode="legacy", cache=None) as client:
                cursor = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    pages.append(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                seen["called"] = (await client.call_tool("many__t1990", {})).content[0].text

    anyio.run(scenario)
    listed = [t.name for page in pages for t in page]
    upstream_tools = [n for n in listed if n.startswith("many__")]
    assert len(pages) >= 2 and len(upstream_tools) == MAX_TOOLS == len(set(upstream_tools))
    numbered = [n for n in upstream_tools if n.removeprefix("many__t").isdigit()]
    last = len(numbered) - 1  # the fixture's own tools come first, then t0000, t0001, ...
    assert numbered[-1] == f"many__t{last:04d}" and f"many__t{last + 1:04d}" not in upstream_tools
    assert len(numbered) < MAX_TOOLS, "the cap cut the numbered tools, not the fixture's own"
    sizes = [
        len(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in p], separators=(",", ":")))
        for p in pages
    ]
    assert max(sizes) <= PAGE_BYTES, sizes
    assert seen["called"] == "t1990"
    [fetched] = daemon.events("upstream.tool_catalog_fetched")
    assert fetched["tool_count"] == MAX_TOOLS
    listed_by_fixture = len(upstream_tools) - len(numbered) + listed_numbered  # its own + the numbered
    cap = f"dropped {listed_by_fixture - MAX_TOOLS} tools listed past the cap of {MAX_TOOLS} per upstream"
    assert f"[harness] {cap}" in upstream_log(daemon, "many")
    doctor = json.loads(daemon.harness_cli("doctor", "--json", check=False).stdout)
    assert {"section": "daemon", "status": "note", "text": f"upstream many: {cap}"} in doctor["findings"]
