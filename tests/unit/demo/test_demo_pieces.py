"""The demo's pieces in this process: its upstream server (through the official SDK client, in
memory), its configuration, and how its agent finds `harness mcp`."""

from __future__ import annotations

import sys

import anyio
from mcp import Client

from harness.config import load_config
from harness.demo import agent as demo_agent
from harness.demo.run import demo_config
from harness.demo.upstream import LONG_TOOL_NAME, build_server

WAIT = 10.0


def test_the_demo_upstream_lists_its_tools_with_tiers_and_answers_each_through_the_sdk():
    async def session() -> dict:
        with anyio.fail_after(WAIT):
            async with Client(build_server(test_tools=True), mode="legacy") as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}

                async def text(name: str, **arguments) -> tuple[str, bool]:
                    result = await client.call_tool(name, arguments)
                    return result.content[0].text, bool(result.is_error)  # type: ignore[union-attr]

                added = await client.call_tool("add", {"a": 2, "b": 40})
                return {
                    "tools": tools,
                    "echo": await text("echo", text="héllo"),
                    "sum": added.structured_content,
                    "words": await text("word_count", text="one two three"),
                    "empty": await text("list_notes"),
                    "write": await text("write_note", title="t", body="b"),
                    "notes": await text("list_notes"),
                    "deleted": await text("delete_note", title="t"),
                    "fail": await text("fail", message="no"),
                    "slept": await text("sleep", ms=1),
                    "long": await text(LONG_TOOL_NAME),
                    "unknown": await text("nope"),
                }

    seen = anyio.run(session)
    tools = seen["tools"]
    assert {"echo", "add", "word_count", "list_notes", "write_note", "fail", "sleep", "crash"} <= set(tools)
    assert tools["echo"].annotations.read_only_hint is True
    assert tools["write_note"].annotations.read_only_hint is False
    assert tools["delete_note"].annotations is None  # no hint: a write tool by default
    assert seen["echo"] == ("héllo", False)
    assert seen["sum"] == {"sum": 42.0}
    assert seen["words"] == ("3", False)
    assert seen["empty"] == ("(no notes)", False)
    assert seen["write"] == ("stored 't'", False)
    assert seen["notes"] == ("t", False)
    assert seen["deleted"] == ("deleted", False)
    assert seen["fail"] == ("no", True)
    assert seen["slept"] == ("slept 1", False)
    assert seen["long"] == ("60 characters", False)
    assert seen["unknown"] == ("unknown tool: nope", True)


def test_without_test_tools_the_demo_upstream_has_only_the_six_demo_tools():
    async def names() -> list[str]:
        with anyio.fail_after(WAIT):
            async with Client(build_server(test_tools=False), mode="legacy") as client:
                return [t.name for t in (await client.list_tools()).tools]

    assert anyio.run(names) == ["echo", "add", "word_count", "list_notes", "write_note", "fail"]


def test_the_demo_configuration_is_one_upstream_and_two_agents_one_of_them_read_only(tmp_path):
    path = tmp_path / "harness.toml"
    path.write_text(demo_config(calls=3))
    config = load_config(path)
    assert list(config.upstreams) == ["demo"]
    assert config.upstreams["demo"].argv == (sys.executable, "-m", "harness.demo.upstream")
    alice, bob = config.harnesses["alice"], config.harnesses["bob"]
    assert set(alice.mcp_allow) == {"read", "write"}
    assert set(bob.mcp_allow) == {"read"}
    assert alice.argv[-4:] == ("--calls", "3", "--pause", "0.5")


def test_the_demo_agent_runs_harness_mcp_from_path_else_through_this_python(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/opt/bin/harness" if name == "harness" else None)
    assert demo_agent.bridge_command() == ("/opt/bin/harness", ["mcp"])
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert demo_agent.bridge_command() == (sys.executable, ["-m", "harness", "mcp"])
