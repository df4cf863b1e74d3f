"""The facade, trajectory, skill and prompt tools through a real daemon, each harness's own token
(read from its process) and the official SDK client."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from support import DEMO_UPSTREAM, FACADE_READ, bridge_params, process_env, toml_list, wait_until

pytestmark = pytest.mark.acceptance

SKILL = """---
name: release-notes
description: Write the release notes for a version from the merged pull requests and the changelog.
---
# Release notes

1. List merged pull requests since the last tag.
2. Group them by label.
"""

PROMPT = """---
description: Review a change for one concern.
arguments:
  - name: concern
    description: What to look for.
    required: true
---
Review the staged change for {{ concern }} only.
"""


def _config(tmp_path) -> str:
    (tmp_path / "skills" / "release-notes").mkdir(parents=True)
    (tmp_path / "skills" / "release-notes" / "SKILL.md").write_text(SKILL)
    (tmp_path / "skills" / "triage").mkdir()
    (tmp_path / "skills" / "triage" / "SKILL.md").write_text(
        "---\nname: triage\ndescription: Label and prioritise new issues in the tracker.\n---\nSteps.\n"
    )
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "review.md").write_text(PROMPT)
    sleeper = '["sleep", "600"]'
    return (
        '[mcp]\nskill_paths = ["skills"]\nprompt_paths = ["prompts"]\n\n'
        f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        f'[harness.reader]\nargv = {sleeper}\nmcp_policy = "p"\n\n'
        f'[harness.boss]\nargv = {sleeper}\nmcp_policy = "p"\nmcp_allow = ["read", "write"]\n\n'
        f"[harness.sibling]\nargv = {sleeper}\n"
    )


def _structured(result) -> dict:
    assert not result.is_error, result
    return result.structured_content


async def _error_of(client: Client, name: str, arguments: dict) -> str:
    try:
        await client.call_tool(name, arguments)
    except Exception as exc:
        return str(exc)
    raise AssertionError(f"{name} was not refused")


@pytest.mark.slow
def test_a_read_harness_reads_the_fleet_and_is_refused_writes_a_write_harness_restarts_a_sibling(
    start_daemon, tmp_path
):
    daemon = start_daemon(_config(tmp_path))
    before = wait_until(daemon.running)
    reader_env = process_env(before["reader"]["pid"])
    boss_env = process_env(before["boss"]["pid"])
    sibling_token = process_env(before["sibling"]["pid"])["HARNESS_MCP_TOKEN"]
    seen: dict = {}

    async def scenario() -> None:
        async with Client(bridge_params(reader_env), mode="legacy", cache=None) as reader:
            names = [t.name for t in (await reader.list_tools()).tools]
            assert set(FACADE_READ) <= set(names) and "harness_stop" not in names
            assert {"search_skills", "get_skill"} <= set(names)
            listed = _structured(await reader.call_tool("harness_list", {}))["harnesses"]
            assert [row["name"] for row in listed] == ["reader"]  # a read-only harness sees itself
            described = _structured(await reader.call_tool("harness_describe", {"name": "reader"}))
            assert described["state"] == "running" and described["policy"] == "p"
            sibling = await reader.call_tool("harness_describe", {"name": "sibling"})
            assert sibling.is_error and "named 'sibling' that this session may see" in sibling.content[0].text
            seen["stop_refused"] = await _error_of(reader, "harness_stop", {"name": "sibling"})
            bad = await reader.call_tool("harness_describe", {"name": "nobody"})
            assert bad.is_error and "no harness or upstream named 'nobody'" in bad.content[0].text
            unknown_arg = await reader.call_tool("harness_list", {"all": True})
            assert unknown_arg.is_error and "unknown argument 'all'" in unknown_arg.content[0].text
        async with Client(bridge_params(boss_env), mode="legacy", cache=None) as boss:
            names = [t.name for t in (await boss.list_tools()).tools]
            assert {"harness_start", "harness_stop", "harness_restart"} <= set(names)
            seen["restarted"] = _structured(await boss.call_tool("harness_restart", {"name": "sibling"}))

    anyio.run(scenario)
    assert seen["stop_refused"].startswith("not_permitted:"), seen["stop_refused"]
    assert "write tool" in seen["stop_refused"]
    after = daemon.harnesses()
    assert seen["restarted"]["kind"] == "harness" and seen["restarted"]["pid"] == after["sibling"]["pid"]
    assert after["sibling"]["pid"] != before["sibling"]["pid"]
    assert after["sibling"]["run_id"] != before["sibling"]["run_id"]
    new_token = process_env(after["sibling"]["pid"])["HARNESS_MCP_TOKEN"]
    assert new_token != sibling_token  # a new token was minted; the old one identifies nobody now

    async def old_token() -> list[str]:
        env = {**reader_env, "HARNESS_MCP_TOKEN": sibling_token}
        async with Client(bridge_params(env), mode="legacy", cache=None) as stale:
            return [t.name for t in (await stale.list_tools()).tools]

    # unattributed: the skill tools only (no facade or trajectory tool)
    assert anyio.run(old_token) == ["search_skills", "get_skill"]

    rows = wait_until(
        lambda: (r := [x for x in daemon.calls() if x["upstream"] == "harness"]) and len(r) >= 6 and r
    )
    by_tool = {(r["harness"], r["tool"], r["outcome"]) for r in rows}
    assert ("reader", "harness_list", "ok") in by_tool
    assert ("reader", "harness_stop", "denied") in by_tool
    assert ("reader", "harness_describe", "tool_error") in by_tool
    assert ("boss", "harness_restart", "ok") in by_tool
    restart = next(r for r in rows if r["tool"] == "harness_restart")
    assert restart["tier"] == "write" and restart["error_reason"] is None


@pytest.mark.slow
def test_skills_prompts_and_trajectory_tools_answer_and_every_tool_call_is_a_row(start_daemon, tmp_path):
    daemon = start_daemon(_config(tmp_path))
    harnesses = wait_until(daemon.running)
    env = process_env(harnesses["reader"]["pid"])
    seen: dict = {}

    async def scenario() -> None:
        async with Client(bridge_params(env), mode="legacy", cache=None) as client:
            found = _structured(
                await client.call_tool("search_skills", {"query": "write notes for a release"})
            )
            seen["search"] = [s["name"] for s in found["skills"]]
            skill = _structured(await client.call_tool("get_skill", {"name": "release-notes"}))
            seen["skill"] = skill
            missing = await client.call_tool("get_skill", {"name": "nope"})
            seen["missing"] = missing.is_error
            prompts = await client.list_prompts()
            seen["prompts"] = [(p.name, [a.name for a in p.arguments or []]) for p in prompts.prompts]
            got = await client.get_prompt("harness__review", {"concern": "error handling"})
            seen["prompt_text"] = got.messages[0].content.text
            seen["prompt_missing_arg"] = await _prompt_error(client)
            refused = await _error_of(client, "demo__delete_note", {"title": "x"})  # a write tool
            assert refused.startswith("not_permitted:")
            calls = await _until_rows(client, "harness_run_calls", {}, 5)
            seen["run_calls"] = calls
            failures = await _until_rows(client, "harness_recent_failures", {"since": "1h"}, 2)
            seen["failures"] = failures

    anyio.run(scenario)
    assert seen["search"][0] == "release-notes"
    assert (
        seen["skill"]["body"].startswith("# Release notes")
        and "Group them by label." in seen["skill"]["body"]
    )
    assert seen["skill"]["description"].startswith("Write the release notes")
    assert seen["missing"] is True
    assert seen["prompts"] == [("harness__review", ["concern"])]
    assert seen["prompt_text"] == "Review the staged change for error handling only.\n"
    assert "needs argument 'concern'" in seen["prompt_missing_arg"]
    tools = [c["tool"] for c in seen["run_calls"]["calls"]]
    assert tools[:3] == ["search_skills", "get_skill", "get_skill"], tools
    assert seen["run_calls"]["run_id"] == harnesses["reader"]["run_id"]
    failed = {(c["tool"], c["outcome"]) for c in seen["failures"]["calls"]}
    assert ("delete_note", "denied") in failed and ("get_skill", "tool_error") in failed
    assert all(c["harness"] == "reader" for c in seen["failures"]["calls"])
    rows = wait_until(lambda: (r := daemon.calls()) and len(r) >= 7 and r)
    retrievals = [r for r in rows if r["tool"] in ("search_skills", "get_skill")]
    assert [(r["tool"], r["outcome"]) for r in retrievals] == [
        ("search_skills", "ok"),
        ("get_skill", "ok"),
        ("get_skill", "tool_error"),
    ]
    assert all(r["upstream"] == "harness" and r["harness"] == "reader" for r in retrievals)

    (tmp_path / "skills" / "rotate").mkdir()
    (tmp_path / "skills" / "rotate" / "SKILL.md").write_text(
        "---\ndescription: Rotate a service's signing keys.\n---\n"
    )
    daemon.harness_cli("reload")  # skills are read again; live sessions search the new set

    async def after_reload() -> list[str]:
        async with Client(bridge_params(env), mode="legacy", cache=None) as client:
            found = _structured(await client.call_tool("search_skills", {"query": "rotate keys", "k": 1}))
            return [s["name"] for s in found["skills"]]

    assert anyio.run(after_reload) == ["rotate"]


async def _prompt_error(client: Client) -> str:
    try:
        await client.get_prompt("harness__review", {})
    except Exception as exc:
        return str(exc)
    raise AssertionError("a prompt with a missing required argument was served")


async def _until_rows(client: Client, tool: str, arguments: dict, count: int) -> dict:
    """Call a trajectory tool until it shows ``count`` calls (rows land within a second)."""
    with anyio.fail_after(10):
        while True:
            result = _structured(await client.call_tool(tool, arguments))
            if len(result["calls"]) >= count:
                return result
            await anyio.sleep(0.05)
