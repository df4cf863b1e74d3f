"""What the gateway says to an upstream spoken to in 2026-07-28 and makes of its answers
(``harness.gateway.upstream.modern``), without a process: a call declares the capabilities the
agent's client declared, of those the gateway relays; a complete result loses ``resultType`` (a
2026-07-28 session's wire puts it back without parsing the line), an input-required one is told
apart."""

from __future__ import annotations

from typing import Any

from harness.gateway.upstream.modern import GATEWAY_CAPABILITIES, ModernUpstream, input_required
from harness.gateway.wire.revisions import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY

ERA = ModernUpstream("2026-07-28")


def test_a_call_declares_the_agents_capabilities_that_the_gateway_relays_and_only_those():
    declared = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {"form": {}}}
    stamped = ERA.stamp({"name": "t", "_meta": {CLIENT_CAPABILITIES_KEY: declared, "progressToken": 7}})
    meta = stamped["_meta"]
    assert meta[CLIENT_CAPABILITIES_KEY] == {"elicitation": {"form": {}}}
    assert meta[PROTOCOL_VERSION_KEY] == "2026-07-28" and meta["progressToken"] == 7
    assert (
        ERA.stamp({"_meta": {CLIENT_CAPABILITIES_KEY: {"sampling": {}}}})["_meta"][CLIENT_CAPABILITIES_KEY]
        == {}
    )


def test_a_request_of_the_gateways_own_declares_what_the_gateway_relays():
    assert ERA.stamp({})["_meta"][CLIENT_CAPABILITIES_KEY] == GATEWAY_CAPABILITIES


def test_a_complete_result_loses_its_result_type_and_an_input_required_one_is_told_apart():
    complete: dict[str, Any] = {"id": 1, "result": {"content": [], "resultType": "complete"}}
    assert input_required(complete) is None
    assert complete["result"] == {"content": []}
    asking = {"id": 2, "result": {"resultType": "input_required", "inputRequests": {}, "requestState": "s"}}
    assert input_required(asking) is asking["result"]
    assert input_required({"id": 3, "error": {"code": -1, "message": "no"}}) is None
