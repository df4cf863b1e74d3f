"""The Streamable HTTP upstream client against a real SDK server (tests/fixtures/faulty_http_upstream.py):
the handshake, answers in SSE and in JSON, a server request delivered with the id of the call whose
stream carried it, and the end of the session when the server goes away."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.config import UpstreamConfig
from harness.gateway.upstream.http_client import HttpUpstream
from support import INITIALIZE, await_until, http_upstream

WAIT = 10.0
INITIALIZE = {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": {"elicitation": {}}}}


class Received:
    def __init__(self) -> None:
        self.messages: list[tuple[dict[str, Any], int | None]] = []
        self.closed: list[str] = []

    def on_message(self, message: dict[str, Any], related: int | None = None) -> None:
        self.messages.append((message, related))

    def on_closed(self, code: int | None, reason: str) -> None:
        self.closed.append(reason)

    def answer(self, request_id: int) -> dict[str, Any] | None:
        return next((m for m, _r in self.messages if m.get("id") == request_id and "method" not in m), None)


async def _session(port: int, got: Received) -> HttpUpstream:
    config = UpstreamConfig(name="web", url=f"http://127.0.0.1:{port}/mcp")
    client = HttpUpstream(config, got.on_message, got.on_closed)
    await client.open()
    client.send(INITIALIZE)
    await await_until(lambda: got.answer(1), timeout=WAIT, message="initialize answered")
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return client


@pytest.mark.parametrize("json_response", [False, True])
def test_an_elicitation_arrives_with_its_calls_id_and_the_answer_completes_the_call(json_response):
    proc, port = http_upstream("ok", json_response=json_response)
    got = Received()

    async def scenario() -> None:
        client = await _session(port, got)
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}},
            }
        )
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {"tag": "t3"}},
            }
        )
        await await_until(lambda: got.answer(2), timeout=WAIT, message="echo answered")
        if not json_response:  # a JSON-only server cannot send a request during a call
            asked = await await_until(
                lambda: next(
                    ((m, r) for m, r in got.messages if m.get("method") == "elicitation/create"), None
                ),
                timeout=WAIT,
                message="the elicitation",
            )
            message, related = asked
            assert related == 3 and message["params"]["message"] == "t3"
            client.send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"action": "accept", "content": {"name": "n"}},
                }
            )
            answer = await await_until(lambda: got.answer(3), timeout=WAIT, message="ask answered")
            assert answer["result"]["content"][0]["text"] == "t3:n"
        assert got.answer(2)["result"]["content"][0]["text"] == "x"
        await client.close()
        assert got.closed == ["closed"]

    try:
        asyncio.run(asyncio.wait_for(scenario(), WAIT * 2))
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()


def test_the_session_ends_when_the_server_goes_away():
    proc, port = http_upstream("ok")
    got = Received()

    async def scenario() -> None:
        client = await _session(port, got)
        proc.kill()
        proc.wait(10)
        client.send(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
        )
        await await_until(lambda: got.closed, timeout=WAIT, message="the session ended")
        assert got.closed == [got.closed[0]] and got.closed[0].startswith("transport error")

    try:
        asyncio.run(asyncio.wait_for(scenario(), WAIT * 2))
    finally:
        proc.stdout.close()
