"""Upstream prompts through the gateway (the real `@modelcontextprotocol/server-everything`): listed
as ``<upstream>__<prompt>`` beside the side-loaded ones, served with the upstream's own name, and
their arguments completed; only the upstreams a harness's policy exposes."""

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


def test_upstream_prompts_are_listed_namespaced_served_and_completed_within_the_policy(
    start_daemon, tmp_path
):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "review.md").write_text("Review it.\n")
    daemon = start_daemon(
        '[mcp]\nprompt_paths = ["prompts"]\n\n'
        + everything_upstream(read_all=False)
        + f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.all]\nservers = ["everything", "demo"]\n\n[mcp_policy.demo-only]\nservers = ["demo"]\n\n'
        + idle_harnesses({"wide": "all", "narrow": "demo-only"})
    )
    envs = daemon.harness_envs()
    seen: dict = {}

    async def scenario() -> None:
        async with Client(bridge_params(envs["wide"]), mode="legacy", cache=None) as client:
            seen["capabilities"] = client.server_capabilities
            seen["wide"] = [p.name for p in (await client.list_prompts()).prompts]
            got = await client.get_prompt("everything__args-prompt", {"city": "Lisbon"})
            seen["text"] = got.messages[0].content.text
            seen["side"] = (await client.get_prompt("harness__review", {})).messages[0].content.text
            try:
                await client.get_prompt("everything__no-such-prompt", {})
            except Exception as exc:
                seen["missing"] = str(exc)
            seen["completion"] = await client.complete(
                {"type": "ref/prompt", "name": "everything__completable-prompt"},
                {"name": "department", "value": "Eng"},
            )
        async with Client(bridge_params(envs["narrow"]), mode="legacy", cache=None) as client:
            seen["narrow"] = [p.name for p in (await client.list_prompts()).prompts]
            try:
                await client.get_prompt("everything__simple-prompt", {})
            except Exception as exc:
                seen["narrow_get"] = str(exc)

    anyio.run(scenario)
    assert seen["capabilities"].prompts is not None and seen["capabilities"].completions is not None
    assert seen["wide"][0] == "harness__review"
    assert {"everything__simple-prompt", "everything__args-prompt", "everything__completable-prompt"} <= set(
        seen["wide"]
    )
    assert "Lisbon" in seen["text"]
    assert seen["side"] == "Review it.\n"
    assert "no-such-prompt not found" in seen["missing"]  # the upstream's own error, unchanged
    assert "Engineering" in seen["completion"].completion.values
    assert seen["narrow"] == ["harness__review"]  # its policy does not expose everything
    assert "no prompt named" in seen["narrow_get"]
