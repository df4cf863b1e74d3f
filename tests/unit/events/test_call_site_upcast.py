"""Upcasting v2 call events and v1 spawn events to the fields trajectories read."""

from __future__ import annotations

import json
from pathlib import Path

from harness.events import HarnessSpawned, ToolCallCompleted, decode
from harness.naming import exposed_name

GOLDEN = Path(__file__).parent / "golden"


def _v2(upstream: str, tool: str) -> str:
    data = json.loads((GOLDEN / "tool_call.completed.v2.json").read_text())["data"]
    return json.dumps({**data, "upstream": upstream, "tool": tool})


def test_a_v2_call_reads_with_the_name_its_session_exposed_and_an_unknown_call_site():
    event = decode("tool_call.completed", 2, _v2("git", "git_status"))
    assert isinstance(event, ToolCallCompleted)
    assert (event.exposed_name, event.via_call_tool, event.request_id) == ("git__git_status", None, None)


def test_a_v2_call_of_a_long_tool_name_reads_with_its_shortened_exposed_name():
    tool = "summarize_every_open_issue_and_pull_request_in_the_repository"
    event = decode("tool_call.completed", 2, _v2("demo", tool))
    assert isinstance(event, ToolCallCompleted)
    assert event.exposed_name == exposed_name("demo", tool) != f"demo__{tool}"


def test_a_v2_gateway_tool_call_reads_with_the_unprefixed_name_agents_call():
    event = decode("tool_call.completed", 2, _v2("harness", "search_tools"))
    assert isinstance(event, ToolCallCompleted)
    assert event.exposed_name == "search_tools"


def test_a_v1_spawn_reads_as_a_start_that_restarted_no_run():
    data = json.loads((GOLDEN / "harness.spawned.v1.json").read_text())["data"]
    event = decode("harness.spawned", 1, json.dumps(data))
    assert isinstance(event, HarnessSpawned)
    assert event.restarted_run_id is None
