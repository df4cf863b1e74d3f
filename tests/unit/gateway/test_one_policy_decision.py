"""A session and ``harness policy what-if`` refuse the same calls for the same reason, because both
ask one function (:func:`harness.rules.decision.decide`) and answer from one table (``REFUSALS``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from connection_support import plain_session

import harness.cli.whatif as whatif
import harness.gateway.downstream.tool_calls as tool_calls
from harness.cli.whatif import reach
from harness.config import load_config
from harness.events.attribution import Attribution
from harness.naming import exposed_name
from harness.rules.decision import decide
from harness.rules.exposure import catalogue_routes
from harness.rules.refusals import REFUSALS
from harness.rules.routing import Identity

CONFIG = """
[mcp.git]
argv = ["mcp-server-git"]
read_tools = ["git_status"]
[mcp.fetch]
argv = ["mcp-server-fetch"]
read_tools = ["fetch"]

[mcp_policy.narrow]
servers = ["git"]
deny = ["git__git_reset"]

[harness.reader]
argv = ["agent"]
mcp_policy = "narrow"
[harness.writer]
argv = ["agent"]
mcp_policy = "narrow"
mcp_allow = ["read", "write"]
"""

CATALOGS = {
    "git": [
        {"name": n, "inputSchema": {"type": "object"}} for n in ("git_status", "git_commit", "git_reset")
    ],
    "fetch": [{"name": "fetch", "inputSchema": {"type": "object"}}],
}

CALLED = [
    ("git", "git_status"),
    ("git", "git_commit"),
    ("git", "git_reset"),
    ("fetch", "fetch"),
    ("git", "nope"),
]
"""A read tool, a write tool, a denied tool, a tool of an upstream outside the policy, an unknown one."""


@pytest.mark.parametrize("harness", ["reader", "writer"])
def test_the_session_and_policy_what_if_refuse_the_same_calls_with_the_same_reason_from_one_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, harness: str
) -> None:
    path = tmp_path / "harness.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    known, _aliases, _tools = catalogue_routes(config, CATALOGS)
    asked: dict[str, list[tuple[str, Any]]] = {"session": [], "what-if": []}

    def spy(who: str) -> Any:
        def spied(name: str, *args: Any) -> Any:
            decision = decide(name, *args)
            asked[who].append((name, decision))
            return decision

        return spied

    monkeypatch.setattr(tool_calls, "decide", spy("session"))
    monkeypatch.setattr(whatif, "decide", spy("what-if"))

    proposal = reach(config, harness, CATALOGS, ())
    sent: list[dict[str, Any]] = []
    identity = Identity(Attribution(harness=harness, run_id="r"), "0" * 32, "", frozenset(proposal.allow))
    session = plain_session(lambda line: sent.append(json.loads(line)), [], identity, known=known.get)
    session.view = proposal.views["full"]
    session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    sent.clear()

    for request_id, (upstream, tool) in enumerate(CALLED, 1):
        name = exposed_name(upstream, tool)
        denial = proposal.refusal(known, upstream, tool)
        session.handle({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name}})
        error = sent[-1]["error"]
        if denial is None:  # through the policy; refused only because no upstream runs here
            assert error["data"]["reason"] == "upstream_unavailable", name
        else:
            refusal = REFUSALS[denial]
            assert error["data"]["reason"] == refusal.reason, name
            assert error["message"] == refusal.text(name=name), name
            assert error["code"] == refusal.code, name

    assert asked["session"] == asked["what-if"]
    denials = {name: getattr(d, "denial", None) for name, d in asked["session"]}
    write = None if harness == "writer" else "write_tier"
    assert denials == {
        "git__git_status": None,
        "git__git_commit": write,
        "git__git_reset": "excluded",
        "fetch__fetch": "excluded",
        "git__nope": "unknown_tool",
    }
