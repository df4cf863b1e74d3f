"""Arguments of the gateway's own tools outside their documented range get a clear refusal, never a
raw Python error: search_tools' ``k`` and harness_recent_failures' ``since``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest
from connection_support import plain_session

from harness.config import Config, PolicyConfig
from harness.events.attribution import Attribution
from harness.gateway.facade import GatewayTools
from harness.gateway.wire import jsonrpc
from harness.rules.exposure import build_view
from harness.rules.routing import UNATTRIBUTED


@pytest.mark.parametrize("k", [-1, 0, 51, 1_000_000_000])
def test_search_tools_with_k_outside_1_to_50_is_invalid_params_with_the_range(k: int) -> None:
    sent: list[dict[str, Any]] = []
    searched: list[int] = []
    policy = PolicyConfig(name="lazy", servers=(), exposure="lazy")
    session = plain_session(
        lambda line: sent.append(json.loads(line)),
        [],
        search=lambda _q, k, _a, _d: searched.append(k),
    )
    session.view = build_view(policy, Config(policies={"lazy": policy}), {})
    session.handle(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    )
    params = {"name": "search_tools", "arguments": {"query": "files", "k": k}}
    session.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    error = sent[-1]["error"]
    assert error["code"] == jsonrpc.INVALID_PARAMS and error["data"]["reason"] == "invalid_request"
    assert "'k' must be an integer from 1 to 50" in error["message"] and searched == []


class _NoCallLog:
    async def calls(self, **_query: Any) -> list[Any]:
        raise AssertionError("a refused since must not reach the call log")


def test_recent_failures_since_past_100_years_is_a_tool_error_naming_the_maximum() -> None:
    tools = GatewayTools((None, None), None, _NoCallLog(), lambda _identity: frozenset())  # type: ignore[arg-type]
    arguments = {"since": "99999999999d", "harness": "a"}
    harness_a = dataclasses.replace(UNATTRIBUTED, attribution=Attribution(harness="a", run_id="r"))
    with pytest.raises(ValueError, match=r"since: '99999999999d' is longer than .* 36500d \(100 years\)"):
        asyncio.run(tools.call("harness_recent_failures", arguments, harness_a))
