"""A policy's ``tools`` and ``deny`` narrow an upstream's prompts, resources and completions as they
narrow its tools (the real `@modelcontextprotocol/server-everything`, the real SDK client): a prompt
is reachable only if its ``<upstream>__<prompt>`` name passes them, an upstream's resources only if
the policy leaves it at least one tool; what is hidden answers as unknown."""

from __future__ import annotations

from typing import Any

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

pytestmark = [pytest.mark.acceptance, pytest.mark.slow, needs_everything]

DOC = "demo://resource/static/document/architecture.md"
POLICIES = (
    '[mcp_policy.demo-tools]\nservers = ["everything", "demo"]\ntools = ["demo__*"]\n\n'
    '[mcp_policy.echo-only]\nservers = ["everything", "demo"]\ntools = ["everything__echo"]\n\n'
    '[mcp_policy.no-simple]\nservers = ["everything"]\ndeny = ["everything__simple-*"]\n\n'
)


async def _outcome(call: Any) -> str:
    try:
        return str(await call)
    except Exception as exc:
        return f"refused: {exc}"


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_tools_and_deny_narrow_prompts_resources_and_completions_on_list_and_use(start_daemon):
    daemon = start_daemon(
        everything_upstream()
        + f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        + POLICIES
        + idle_harnesses({"wide": "demo-tools", "echo": "echo-only", "nosimple": "no-simple"})
    )
    envs = daemon.harness_envs()
    seen: dict[str, Any] = {}

    def client(name: str) -> Client:
        return Client(bridge_params(envs[name]), mode="legacy", cache=None)

    async def scenario() -> None:
        async with client("wide") as demo, client("echo") as echo, client("nosimple") as nosimple:
            seen["demo_prompts"] = [p.name for p in (await demo.list_prompts()).prompts]
            seen["demo_get"] = await _outcome(demo.get_prompt("everything__simple-prompt", {}))
            seen["demo_complete"] = await _outcome(
                demo.complete(
                    {"type": "ref/prompt", "name": "everything__completable-prompt"},
                    {"name": "department", "value": "Eng"},
                )
            )
            seen["demo_resources"] = await _outcome(demo.list_resources())
            seen["demo_templates"] = await _outcome(demo.list_resource_templates())
            seen["demo_read"] = await _outcome(demo.read_resource(DOC))
            seen["demo_subscribe"] = await _outcome(demo.subscribe_resource(DOC))
            seen["echo_prompts"] = [p.name for p in (await echo.list_prompts()).prompts]
            seen["echo_resources"] = [str(r.uri) for r in (await echo.list_resources()).resources]
            seen["nosimple_prompts"] = [p.name for p in (await nosimple.list_prompts()).prompts]
            seen["nosimple_get"] = await _outcome(nosimple.get_prompt("everything__simple-prompt", {}))

    anyio.run(scenario)
    assert not any(p.startswith("everything__") for p in seen["demo_prompts"])
    assert "no prompt named" in seen["demo_get"] and "no prompt named" in seen["demo_complete"]
    assert "resources=[]" in seen["demo_resources"] and "resource_templates=[]" in seen["demo_templates"]
    assert seen["demo_read"].startswith("refused") and seen["demo_subscribe"].startswith("refused")
    assert not any(p.startswith("everything__") for p in seen["echo_prompts"])  # echo names no prompt
    assert DOC in seen["echo_resources"]  # the policy leaves everything a tool: its resources too
    assert "everything__simple-prompt" not in seen["nosimple_prompts"]
    assert "everything__args-prompt" in seen["nosimple_prompts"]
    assert "no prompt named" in seen["nosimple_get"]
    assert daemon.proc.poll() is None
