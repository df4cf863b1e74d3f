"""A 2026-07-28 client over the HTTP endpoint, in front of a real upstream whose tool declares
``x-mcp-header`` parameters (tests/fixtures/routed_server.py): the annotations reach the client
through the gateway's listing unchanged, the SDK client's ``Mcp-Param-*`` headers are accepted, and
headers that disagree with the arguments are refused with -32020 and HTTP 400 before anything
reaches the upstream. Resource reads carry the cache keys lists carry."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support import FIXTURES, PY, free_port, idle_harnesses, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

MODERN = "2026-07-28"
TOOL = "routed__route"


def _config(port: int) -> str:
    return (
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n'
        f"[mcp.routed]\nargv = {toml_list([PY, str(FIXTURES / 'routed_server.py')])}\n"
        'read_tools = ["*"]\n\n'
        '[mcp_policy.p]\nservers = ["routed"]\nmax_description_chars = 20\n\n' + idle_harnesses({"a": "p"})
    )


def _call(url: str, token: str, arguments: dict[str, Any], params: dict[str, str]) -> tuple[int, Any]:
    """One raw 2026-07-28 ``tools/call`` with the routing headers right and ``params`` as the
    ``Mcp-Param-<name>`` headers; (HTTP status, the JSON body)."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": TOOL,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": TOOL,
        **{f"Mcp-Param-{name}": value for name, value in params.items()},
    }
    answer = httpx2.post(url, json=body, headers=headers, timeout=10)
    return answer.status_code, answer.json()


def test_mcp_param_headers_are_checked_against_the_arguments_of_a_tool_that_declares_them(start_daemon):
    port = free_port()
    daemon = start_daemon(_config(port))
    token = daemon.harness_envs()["a"]["HARNESS_MCP_TOKEN"]
    url = f"http://127.0.0.1:{port}/mcp"
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), cache=None) as client:
            seen["era"] = client.session.protocol_version
            (tool,) = [t for t in (await client.list_tools()).tools if t.name == TOOL]
            seen["tool"] = tool
            called = await client.call_tool(TOOL, {"region": "eu west", "priority": 3, "query": "q"})
            seen["called"] = called.content[0].text
            seen["reads"] = [
                await client.read_resource(uri) for uri in ("note://text", "note://binary", "note://item/9")
            ]

    anyio.run(scenario)
    assert seen["era"] == MODERN
    properties = seen["tool"].input_schema["properties"]
    assert properties["region"]["x-mcp-header"] == "Region"
    assert properties["priority"]["x-mcp-header"] == "Priority"
    assert len(seen["tool"].description) <= 20  # trimmed by the policy, the schema untouched
    assert seen["called"] == "region=eu west priority=3 query=q"
    for read in seen["reads"]:  # sent by the gateway, not the SDK's defaults
        assert {"ttl_ms", "cache_scope"} <= read.model_fields_set
        assert (read.ttl_ms, read.cache_scope) == (0, "private")

    good = {"region": "Zürich", "priority": 3, "query": "q"}
    zurich = "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    status, body = _call(url, token, good, {"Region": zurich, "Priority": "3.0"})
    assert status == 200 and body["result"]["content"][0]["text"] == "region=Zürich priority=3 query=q"
    refused = {
        "missing": {"Priority": "3"},
        "different": {"Region": "Bern", "Priority": "3"},
        "bad base64": {"Region": "=?base64?SGVs!!!bG8=?=", "Priority": "3"},
        "another priority": {"Region": zurich, "Priority": "4"},
    }
    for case, params in refused.items():
        status, body = _call(url, token, good, params)
        assert (status, body["error"]["code"], body["id"]) == (400, -32020, 7), (case, body)
        assert "Mcp-Param-" in body["error"]["message"], (case, body)
    status, body = _call(url, token, {"query": "q", "region": "x"}, {"Region": "x", "Priority": "1"})
    assert (status, body["error"]["code"]) == (400, -32020)  # a header for an absent argument
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 2 and r)
    assert [r["tool"] for r in rows] == ["route", "route"]  # no refused call reached the upstream
    assert json.dumps(rows).count("Bern") == 0
