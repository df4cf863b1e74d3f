"""The loopback Streamable HTTP endpoint (``[mcp] listen``) through a real daemon: the official SDK
client over HTTP with a harness's token; progress reaches the right call; and the refusals: no
token (401), a foreign Host (421, DNS rebinding) or Origin (403), another token on a session (403)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support import (
    DEMO_UPSTREAM,
    EVERYTHING,
    INITIALIZE,
    everything_upstream,
    free_port,
    toml_list,
    wait_until,
)

pytestmark = pytest.mark.acceptance


def _config(port: int) -> str:
    upstreams = f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
    servers = '["demo"]'
    if EVERYTHING.exists():
        upstreams += everything_upstream()
        servers = '["demo", "everything"]'
    return (
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n{upstreams}[mcp_policy.p]\nservers = {servers}\n\n'
        '[harness.a]\nargv = ["sleep", "600"]\nmcp_policy = "p"\n\n'
        '[harness.b]\nargv = ["sleep", "600"]\nmcp_policy = "p"\n'
    )


def _tokens(daemon) -> dict[str, str]:
    return {name: env["HARNESS_MCP_TOKEN"] for name, env in daemon.harness_envs().items()}


def _post(url: str, body: dict | list, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_an_sdk_client_over_http_is_the_harness_its_token_names_and_gets_its_progress(
    start_daemon, mode, era
):
    port = free_port()
    daemon = start_daemon(_config(port))
    tokens = _tokens(daemon)
    seen: dict = {}

    async def scenario() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['a']}"})
        async with (
            http,
            Client(
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode=mode
            ) as client,
        ):
            seen["era"] = client.session.protocol_version
            names = [t.name for t in (await client.list_tools()).tools]
            seen["names"] = names
            seen["echo"] = (await client.call_tool("demo__echo", {"text": "over http"})).content[0].text
            run = await client.call_tool("harness_run_calls", {})
            seen["run_id"] = run.structured_content["run_id"]
            if "everything__trigger-long-running-operation" in names:
                progress: list[float] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append(value)

                result = await client.call_tool(
                    "everything__trigger-long-running-operation",
                    {"duration": 1, "steps": 4},
                    progress_callback=on_progress,
                )
                seen["progress"] = progress
                seen["long"] = result.is_error

    anyio.run(scenario)
    assert seen["era"] == era
    assert "demo__echo" in seen["names"] and "harness_list" in seen["names"]
    assert seen["echo"] == "over http"
    listed = {name: row["run_id"] for name, row in daemon.harnesses().items()}
    assert seen["run_id"] == listed["a"]  # attributed by its token
    if EVERYTHING.exists():
        assert (
            seen["long"] is False
            and len(seen["progress"]) == 4
            and seen["progress"] == sorted(seen["progress"])
        )
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 2 and r)
    assert {(r["harness"], r["tool"]) for r in rows} >= {("a", "echo"), ("a", "harness_run_calls")}
    opened = [json.loads(line) for line in daemon.harness_cli("calls", "--json").stdout.splitlines()]
    assert all(r["harness"] == "a" for r in opened)


def test_no_token_foreign_host_or_origin_and_another_tokens_session_are_refused(start_daemon):
    port = free_port()
    daemon = start_daemon(_config(port))
    tokens = _tokens(daemon)
    url = f"http://127.0.0.1:{port}/mcp"
    bearer_a = {"Authorization": f"Bearer {tokens['a']}"}

    status, headers, _ = _post(url, INITIALIZE, {})
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
    assert _post(url, INITIALIZE, {"Authorization": "Bearer not-a-token"})[0] == 401
    # DNS rebinding: a page on another name that resolves to 127.0.0.1 sends its own Host and Origin.
    assert _post(url, INITIALIZE, {**bearer_a, "Host": f"evil.example:{port}"})[0] == 421
    assert _post(url, INITIALIZE, {**bearer_a, "Origin": f"http://evil.example:{port}"})[0] == 403
    assert _post(url, INITIALIZE, {**bearer_a, "Origin": f"http://localhost:{port}"})[0] == 200

    status, headers, body = _post(url, INITIALIZE, bearer_a)
    assert status == 200 and json.loads(body)["result"]["serverInfo"]["name"] == "harness"
    session = headers["Mcp-Session-Id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert _post(url, listing, {**bearer_a, "Mcp-Session-Id": session})[0] == 200
    status, _, body = _post(
        url, listing, {"Authorization": f"Bearer {tokens['b']}", "Mcp-Session-Id": session}
    )
    assert status == 403 and b"another token" in body  # token B on A's session
    assert _post(url, listing, {**bearer_a, "Mcp-Session-Id": "no-such-session"})[0] == 404
    assert _post(url, listing, bearer_a)[0] == 400  # no session id
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(url, note, {**bearer_a, "Mcp-Session-Id": session})[0] == 202

    request = urllib.request.Request(url, method="DELETE", headers={**bearer_a, "Mcp-Session-Id": session})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    assert _post(url, listing, {**bearer_a, "Mcp-Session-Id": session})[0] == 404  # ended
    assert daemon.proc.poll() is None


@pytest.mark.slow
def test_past_sixteen_sessions_of_a_token_the_least_recently_used_idle_one_makes_room(start_daemon):
    port = free_port()
    daemon = start_daemon(_config(port))
    url = f"http://127.0.0.1:{port}/mcp"
    bearer = {"Authorization": f"Bearer {_tokens(daemon)['a']}"}
    opened = [_post(url, INITIALIZE, bearer)[1]["Mcp-Session-Id"] for _ in range(16)]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert _post(url, listing, {**bearer, "Mcp-Session-Id": opened[0]})[0] == 200  # now the newest use
    status, headers, _ = _post(url, INITIALIZE, bearer)  # a 17th: the idle session used longest ago ends
    assert status == 200
    assert _post(url, listing, {**bearer, "Mcp-Session-Id": opened[1]})[0] == 404
    for kept in [opened[0], *opened[2:], headers["Mcp-Session-Id"]]:
        assert _post(url, listing, {**bearer, "Mcp-Session-Id": kept})[0] == 200


@pytest.mark.slow
def test_a_2025_03_26_batch_over_http_gets_one_array_and_a_batch_of_notifications_gets_202(start_daemon):
    port = free_port()
    daemon = start_daemon(_config(port))
    url = f"http://127.0.0.1:{port}/mcp"
    bearer = {"Authorization": f"Bearer {_tokens(daemon)['a']}"}
    old = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-03-26"}}
    headers = {**bearer, "Mcp-Session-Id": _post(url, old, bearer)[1]["Mcp-Session-Id"]}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        note,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    status, _, body = _post(url, batch, headers)
    assert status == 200 and sorted(entry["id"] for entry in json.loads(body)) == [1, 2]
    assert _post(url, [note], headers)[0] == 202


MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
ENVELOPE = {VERSION_KEY: MODERN, CAPABILITIES_KEY: {}}


@pytest.mark.slow
def test_a_2026_request_is_answered_in_json_rpc_for_a_bad_envelope_an_unknown_version_or_a_removed_method(
    start_daemon,
):
    port = free_port()
    daemon = start_daemon(_config(port))
    url = f"http://127.0.0.1:{port}/mcp"
    bearer = {"Authorization": f"Bearer {_tokens(daemon)['a']}"}

    def ask(request_id: int, method: str, meta: dict | None, version: str = MODERN) -> tuple[int, dict]:
        params = {} if meta is None else {"_meta": meta}
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        status, _, answer = _post(
            url, body, {**bearer, "MCP-Protocol-Version": version, "Mcp-Method": method}
        )
        return status, json.loads(answer)

    # The version header settles the era: no or a partial envelope is the 2026 era's -32602, with the id.
    for request_id, meta in [(101, None), (102, {CAPABILITIES_KEY: {}}), (104, {VERSION_KEY: MODERN})]:
        status, reply = ask(request_id, "server/discover", meta)
        assert (status, reply["id"], reply["error"]["code"]) == (400, request_id, -32602), reply
    # A revision the gateway does not know is the era's -32022, naming what it serves.
    status, reply = ask(301, "server/discover", {**ENVELOPE, VERSION_KEY: "v999.0.0"}, version="v999.0.0")
    assert (status, reply["id"], reply["error"]["code"]) == (400, 301, -32022), reply
    assert reply["error"]["data"] == {"supported": [MODERN], "requested": "v999.0.0"}
    # What 2026-07-28 removed is not found there.
    for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
        status, reply = ask(500, method, ENVELOPE)
        assert (status, reply["id"], reply["error"]["code"]) == (404, 500, -32601), (method, reply)
    status, reply = ask(1, "server/discover", ENVELOPE)
    assert status == 200 and reply["result"]["supportedVersions"] == [MODERN]
    assert daemon.proc.poll() is None
