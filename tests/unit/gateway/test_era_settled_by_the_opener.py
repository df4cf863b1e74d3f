"""A session's era is settled by whoever opens it, before the session is built: the bridge connection
from its first message, the HTTP endpoint from a POST's headers and envelope. A 2026-07-28 session
answers the methods that revision removed with -32601."""

from __future__ import annotations

import json
from typing import Any

import pytest
from connection_support import FakeDoor, connect, run

from harness.gateway.downstream.eras import opens_modern
from harness.gateway.downstream.http_posts import is_modern
from harness.gateway.downstream.modern_era import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY

MODERN = "2026-07-28"
ENVELOPE = {"_meta": {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {}}}
PREAMBLE = b'{"harness_bridge": 1, "kind": "mcp", "token": ""}\n'


def _request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


@pytest.mark.parametrize(
    ("message", "modern"),
    [
        (_request(1, "server/discover", ENVELOPE), True),
        (_request(1, "ping", ENVELOPE), True),
        (_request(1, "initialize", {**ENVELOPE, "protocolVersion": MODERN}), False),
        (_request(1, "initialize", {"protocolVersion": "2025-11-25"}), False),
        (_request(1, "tools/list"), False),
        (_request(1, "tools/list", {"_meta": {CLIENT_CAPABILITIES_KEY: {}}}), False),
        ([_request(1, "tools/list", ENVELOPE)], False),
        ("garbage", False),
    ],
)
def test_only_a_request_carrying_the_envelope_opens_a_session_in_the_2026_era(message, modern):
    assert opens_modern(message) is modern


@pytest.mark.parametrize(
    ("version", "message", "modern"),
    [
        (MODERN, _request(1, "server/discover"), True),  # no envelope: still the 2026 era's to refuse
        ("v999.0.0", _request(1, "server/discover"), True),  # unknown: the 2026 era answers -32022
        (MODERN, _request(1, "initialize", ENVELOPE), True),  # removed in 2026: -32601 there
        ("2025-11-25", _request(1, "tools/list", ENVELOPE), False),
        (None, _request(1, "tools/list", ENVELOPE), True),
        (None, _request(1, "initialize", {"protocolVersion": "2025-11-25"}), False),
    ],
)
def test_a_post_without_a_session_id_is_a_2026_request_by_its_version_header_else_its_envelope(
    version, message, modern
):
    headers = {} if version is None else {"mcp-protocol-version": version}
    assert is_modern(headers, message) is modern


def _bridge(*messages: Any) -> tuple[FakeDoor, list[dict[str, Any]]]:
    async def scenario() -> tuple[FakeDoor, list[dict[str, Any]]]:
        door = FakeDoor()
        connection, transport = connect(door)
        connection.data_received(PREAMBLE)
        assert door.sessions == []  # no session before the first message: its era is not known
        connection.data_received(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        return door, transport.lines()

    return run(scenario())


def test_a_bridge_connections_first_message_opens_its_session_in_that_messages_era():
    door, answers = _bridge(_request(1, "server/discover", ENVELOPE), _request(2, "tools/list", ENVELOPE))
    (session,) = door.sessions
    assert session.modern is not None and session.protocol_version == MODERN
    assert [a["result"]["resultType"] for a in answers] == ["complete", "complete"]

    door, answers = _bridge(_request(1, "initialize", {"protocolVersion": "2025-06-18"}))
    (session,) = door.sessions
    assert session.modern is None and answers[0]["result"]["protocolVersion"] == "2025-06-18"


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
)
def test_a_2026_bridge_session_answers_a_removed_method_with_method_not_found(method):
    params = {**ENVELOPE, "uri": "file:///x", "level": "info"}
    _door, answers = _bridge(_request(1, "server/discover", ENVELOPE), _request(7, method, params))
    refused = answers[1]
    assert refused["id"] == 7 and refused["error"]["code"] == -32601


def test_a_handshake_bridge_session_refuses_a_request_carrying_the_envelope():
    door, answers = _bridge(
        _request(1, "initialize", {"protocolVersion": "2025-11-25"}), _request(2, "tools/list", ENVELOPE)
    )
    assert door.sessions[0].modern is None
    assert answers[1]["id"] == 2 and answers[1]["error"]["code"] == -32600
