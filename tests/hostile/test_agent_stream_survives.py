"""An agent's stream through a real `harness mcp` bridge and daemon, in both bridge modes (the daemon
reads the agent's own pipes, or the bridge copies): an oversized message costs one answer, never the
session, and a 2025-03-26 batch gets one array answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from daemon_support import RawSession, env_dumper, faulty, harness_env, running, toml_list

from harness.gateway.wire import jsonrpc

MODES = {"fd": {}, "copy": {"HARNESS_BRIDGE_COPY": "1"}}


@pytest.fixture(scope="module")
def agent_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp_path = tmp_path_factory.mktemp("stream")
    dump = tmp_path / "agent.env"
    config = (
        f'[mcp.up]\nargv = {toml_list(faulty())}\n\n[mcp_policy.p]\nservers = ["up"]\n\n'
        f'[harness.agent]\nargv = {toml_list(env_dumper(dump))}\nmcp_policy = "p"\n'
    )
    with running(tmp_path, config):
        yield harness_env(dump)


@pytest.fixture(params=sorted(MODES))
def session(request: pytest.FixtureRequest, agent_env: dict[str, str]) -> Iterator[RawSession]:
    raw = RawSession({**agent_env, **MODES[request.param]})
    try:
        yield raw
    finally:
        raw.close()


def _echo(text: str) -> dict[str, Any]:
    return {"name": "up__echo", "arguments": {"text": text}}


@pytest.mark.slow
def test_a_17_mib_message_is_answered_as_invalid_and_the_next_call_is_served(session: RawSession) -> None:
    session.initialize()
    session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _echo("x" * (17 << 20))})
    refusal = session.receive(timeout=30)
    assert refusal["id"] is None and refusal["error"]["code"] == jsonrpc.INVALID_REQUEST
    assert "longer than 16777216 bytes" in refusal["error"]["message"]
    answer = session.request(2, "tools/call", _echo("after"), timeout=30)
    assert answer["result"]["content"][0]["text"] == "after"


def test_a_2025_03_26_batch_gets_one_array_answer_once_its_upstream_call_is_answered(
    session: RawSession,
) -> None:
    session.initialize("2025-03-26")
    session.send(
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"b"}}},'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}]\n'
    )
    answer = session.receive(timeout=30)
    assert isinstance(answer, list)
    by_id = {entry["id"]: entry for entry in answer}
    assert sorted(by_id) == [1, 2] and by_id[1]["result"]["content"][0]["text"] == "b"
    assert session.request(3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}
