"""A downstream session's answers to handshake, listing and refused calls (no upstream needed)."""

from __future__ import annotations

import json

import pytest
from connection_support import plain_session

from harness.config import Config, PolicyConfig, UpstreamConfig
from harness.gateway.downstream.session import HANDSHAKE_VERSIONS
from harness.gateway.evidence.recording import CallRecorder
from harness.rules.exposure import EMPTY_VIEW, ToolView, build_view


def make_session(initialized: str | None = "2025-11-25", view: ToolView = EMPTY_VIEW):
    sent: list[dict] = []
    events: list = []
    session = plain_session(lambda data: sent.append(json.loads(data)), events, view=view)
    if initialized:
        session.handle(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": initialized}}
        )
        sent.clear()
        events.clear()
    return session, sent, events


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_initialize_answers_the_revision_the_client_asked_for(version):
    session, sent, _ = make_session(initialized=None)
    session.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": version}}
    )
    assert sent[0]["result"]["protocolVersion"] == version
    assert session.protocol_version == version


def test_initialize_with_an_unknown_revision_answers_the_newest_handshake_revision():
    session, sent, _ = make_session(initialized=None)
    session.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}
    )
    assert sent[0]["result"]["protocolVersion"] == HANDSHAKE_VERSIONS[-1]


def test_an_unknown_tool_is_a_structured_error_and_a_denied_call_event():
    session, sent, events = make_session()
    session.handle(
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
    )
    error = sent[0]["error"]
    assert error["message"].startswith("unknown_tool: ")
    assert error["data"] == {"reason": "unknown_tool"}
    call = events[-1]
    assert (call.outcome, call.error_reason, call.harness) == ("denied", "unknown_tool", None)


def test_malformed_messages_get_json_rpc_errors_and_the_session_goes_on():
    session, sent, _ = make_session()
    session.handle([1, 2])
    session.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "x"})
    session.handle({"jsonrpc": "2.0", "id": 3, "method": "resources/list"})
    session.handle({"jsonrpc": "2.0", "id": 4, "method": "ping"})
    assert [m.get("error", {}).get("code") for m in sent] == [-32600, -32602, -32601, None]
    assert sent[-1] == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_tools_list_returns_the_views_pre_encoded_tools():
    config = Config(upstreams={"gitea": UpstreamConfig(name="gitea", argv=("x",))}, policies={})
    catalog = [
        {"name": "get_issue", "description": "Read an issue.", "inputSchema": {"type": "object"}},
        {"name": "merge_pr", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    ]
    view = build_view(PolicyConfig(name="p", servers=("gitea",)), config, {"gitea": catalog})
    session, sent, _ = make_session(view=view)
    session.handle({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    (answer,) = sent
    assert answer["id"] == 7
    assert answer["result"]["tools"] == json.loads(view.listing_json)
    assert [t["name"] for t in answer["result"]["tools"][:2]] == ["gitea__get_issue", "gitea__merge_pr"]


def test_a_request_id_that_is_not_a_string_or_integer_is_an_invalid_request():
    session, sent, _ = make_session()
    session.handle({"jsonrpc": "2.0", "id": [1], "method": "tools/call", "params": {"name": "x"}})
    session.handle({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})
    assert [m["error"]["code"] for m in sent] == [-32600, -32600]


def test_arguments_that_are_not_an_object_are_invalid_params():
    session, sent, _ = make_session()
    session.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": [1]}}
    )
    assert sent[0]["error"]["code"] == -32602


def test_inside_an_input_callback_a_call_is_recorded_only_after_its_answer_went_out():
    from connection_support import FakeTransport

    from harness.gateway.wire.outbox import OUTBOX

    transport = FakeTransport()
    written_when_recorded: list[bytes] = []
    events: list = []
    session = plain_session(lambda data: OUTBOX.write(transport, data), events)
    session.recorder = CallRecorder(lambda _event: written_when_recorded.append(transport.written), "none")
    session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    with OUTBOX:
        session.handle(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
        )
        assert written_when_recorded == []
    [written] = written_when_recorded
    assert json.loads(written.splitlines()[-1])["error"]["data"] == {"reason": "unknown_tool"}
