"""A downstream session in the 2026-07-28 era: envelope checks, discover, stamped results, listen
streams, and an upstream's elicitation turned into an ``input_required`` result and back (no process;
the acceptance test tests/acceptance/test_protocol_eras.py drives real clients and servers)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from connection_support import plain_session

from harness.events import SessionInitialized
from harness.gateway.calls.inflight import CallInflight
from harness.gateway.downstream.modern_era import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    ELICITATION_KEY,
    PROTOCOL_VERSION_KEY,
    SUBSCRIPTION_ID_KEY,
    ModernWire,
)
from harness.rules.exposure import Route

MODERN = "2026-07-28"


def envelope(version: Any = MODERN, capabilities: Any = None, **more: Any) -> dict[str, Any]:
    meta = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: {"name": "probe", "version": "9"},
        CLIENT_CAPABILITIES_KEY: capabilities if capabilities is not None else {},
        **more,
    }
    return {"_meta": meta}


def request(
    request_id: Any, method: str, params: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), **envelope(**meta)},
    }


def make_session(modern: bool = True):
    sent: list[bytes] = []
    events: list[Any] = []
    session = plain_session(sent.append, events, modern=modern)
    return session, sent, events


def answers(sent: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in sent]


def test_discover_settles_the_era_and_says_what_the_gateway_serves():
    session, sent, events = make_session()
    session.handle(request(1, "server/discover"))
    (reply,) = answers(sent)
    result = reply["result"]
    assert result["supportedVersions"] == [MODERN]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 0 and result["cacheScope"] == "private"
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "harness"
    (began,) = [e for e in events if isinstance(e, SessionInitialized)]
    assert (began.protocol_version, began.client_name, began.client_version) == (MODERN, "probe", "9")


def test_every_result_is_stamped_and_lists_carry_cache_keys():
    session, sent, _events = make_session()
    session.handle(request("two", "tools/list"))
    (listing,) = answers(sent)
    assert listing["result"]["resultType"] == "complete"
    assert listing["result"]["ttlMs"] == 0 and listing["result"]["cacheScope"] == "private"
    assert isinstance(listing["result"]["tools"], list)


def test_the_first_request_may_be_any_request_and_no_initialize_is_needed():
    session, sent, _events = make_session()
    session.handle(request(7, "tools/call", {"name": "nope", "arguments": {}}))
    (reply,) = answers(sent)
    assert reply["error"]["data"]["reason"] == "unknown_tool"
    assert session.protocol_version == MODERN


@pytest.mark.parametrize(
    ("params", "code", "words"),
    [
        ({"_meta": {PROTOCOL_VERSION_KEY: MODERN}}, -32602, "missing the required envelope key"),
        (envelope(version="2027-01-01"), -32022, "not supported"),
        (envelope(version=5), -32602, "must be a string"),
    ],
)
def test_a_bad_envelope_is_refused_and_settles_nothing(params, code, words):
    session, sent, _events = make_session()
    session.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
    (reply,) = answers(sent)
    assert reply["error"]["code"] == code and words in reply["error"]["message"]
    if code == -32022:
        assert reply["error"]["data"] == {"supported": [MODERN], "requested": "2027-01-01"}
    assert session.protocol_version == ""


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
)
def test_a_method_the_2026_revision_removed_is_not_found_in_a_2026_request(method):
    session, sent, _events = make_session()
    session.handle(request("r", method, {"uri": "file:///x", "level": "info", "protocolVersion": MODERN}))
    (reply,) = answers(sent)
    assert reply["id"] == "r" and reply["error"]["code"] == -32601
    assert method in reply["error"]["message"]


def test_the_eras_do_not_mix_on_one_session():
    modern, sent, _events = make_session()
    modern.handle(request(1, "server/discover"))
    modern.handle(
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    )
    refused = answers(sent)[1]["error"]
    assert refused["code"] == -32022 and refused["data"]["supported"] == [MODERN]

    old, sent, _events = make_session(modern=False)
    old.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    )
    old.handle(request(2, "tools/list"))
    assert answers(sent)[1]["error"]["code"] == -32600
    old.handle({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert answers(sent)[2]["result"] == {}  # handshake-era results are not stamped


def test_a_listen_stream_is_acknowledged_then_carries_only_what_it_asked_for():
    session, sent, _events = make_session()
    session.handle(request("listen-1", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    session.handle(
        request("listen-2", "subscriptions/listen", {"notifications": {"promptsListChanged": True}})
    )
    first, second = answers(sent)
    assert first["method"] == "notifications/subscriptions/acknowledged"
    assert first["params"] == {
        "_meta": {SUBSCRIPTION_ID_KEY: "listen-1"},
        "notifications": {"toolsListChanged": True},
    }
    assert second["params"]["_meta"] == {SUBSCRIPTION_ID_KEY: "listen-2"}
    sent.clear()
    session.send(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
    session.send(
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n'
    )
    changed, progress = answers(sent)
    assert changed == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUBSCRIPTION_ID_KEY: "listen-1"}},
    }
    assert progress["method"] == "notifications/progress"
    sent.clear()
    session.handle(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}}
    )
    session.send(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
    assert sent == []  # no stream asks for it now; unsolicited it is never sent in this era


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":"a\\"b","result":{"x":1}}\n', {"x": 1, "resultType": "complete"}),
        (b'{"jsonrpc":"2.0","id":"\xc3\xa9","result":{}}\n', {"resultType": "complete"}),
        (
            b'{"id":3,"jsonrpc":"2.0","result":{"x":"resultType"}}\n',
            {"x": "resultType", "resultType": "complete"},
        ),
        (
            b'{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required"}}\n',
            {"resultType": "input_required"},
        ),
    ],
)
def test_results_are_stamped_whatever_their_ids_and_key_order(line, expected):
    sent: list[bytes] = []
    ModernWire(sent.append).send(line)
    (out,) = sent
    assert json.loads(out)["result"] == expected


def test_errors_pass_unchanged():
    sent: list[bytes] = []
    line = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}\n'
    ModernWire(sent.append).send(line)
    assert sent == [line]


class FakeLink:
    def __init__(self) -> None:
        self.cancelled: list[int] = []

    def cancel_call(self, uid: int, reason: str) -> None:
        self.cancelled.append(uid)


def _in_flight(session: Any, link: FakeLink, request_id: Any) -> CallInflight:
    call = CallInflight(session, request_id, 41, Route("up__ask", "up", "ask", "read"), {}, None, 0.0)
    session.calls[request_id] = (link, call)
    return call


ELICIT = {"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": {"message": "name?"}}


def test_an_upstream_elicitation_becomes_input_required_and_the_retry_answers_it():
    session, sent, _events = make_session()
    session.handle(request(1, "server/discover", capabilities={"elicitation": {}}))
    link = FakeLink()
    call = _in_flight(session, link, 5)
    upstream_got: list[dict[str, Any]] = []
    session.relay_request(call, ELICIT, upstream_got.append)
    asked = answers(sent)[-1]
    assert asked["id"] == 5 and asked["result"]["resultType"] == "input_required"
    assert asked["result"]["inputRequests"] == {
        ELICITATION_KEY: {"method": "elicitation/create", "params": {"message": "name?"}}
    }
    state = asked["result"]["requestState"]
    assert 5 not in session.calls and upstream_got == []

    response = {"action": "accept", "content": {"name": "ann"}}
    retry = {
        "name": "up__ask",
        "arguments": {},
        "requestState": state,
        "inputResponses": {ELICITATION_KEY: response},
    }
    session.handle(request(6, "tools/call", retry))
    assert upstream_got == [{"result": response}]
    assert session.calls[6] == (link, call) and call.downstream_id == 6 and call.answerable
    sent.clear()
    call.answered({"jsonrpc": "2.0", "id": 41, "result": {"content": [], "isError": False}})
    (final,) = answers(sent)
    assert final["id"] == 6 and final["result"]["resultType"] == "complete"

    session.handle(request(7, "tools/call", retry))  # the state was used up
    assert answers(sent)[-1]["error"]["data"]["reason"] == "invalid_request"


def test_an_elicitation_is_refused_without_the_capability_and_a_suspended_call_ends_silently():
    session, sent, _events = make_session()
    session.handle(request(1, "server/discover"))
    link = FakeLink()
    upstream_got: list[dict[str, Any]] = []
    session.relay_request(_in_flight(session, link, 5), ELICIT, upstream_got.append)
    assert upstream_got[0]["error"]["code"] == -32021

    session.handle(request(2, "tools/list", capabilities={"elicitation": {}}))
    call = _in_flight(session, link, 8)
    session.relay_request(call, ELICIT, upstream_got.append)
    sent.clear()
    call.failed("timeout", "too slow")  # the deadline passed while the client was away
    assert sent == [] and call.done and session.modern is not None and session.modern.suspended == {}


def test_closing_a_modern_session_cancels_its_suspended_calls_upstream():
    session, _sent, _events = make_session()
    session.handle(request(1, "server/discover", capabilities={"elicitation": {}}))
    link = FakeLink()
    upstream_got: list[dict[str, Any]] = []
    session.relay_request(_in_flight(session, link, 5), ELICIT, upstream_got.append)
    session.close("disconnected")
    assert link.cancelled == [41] and upstream_got[0]["error"]["code"] == -32021
