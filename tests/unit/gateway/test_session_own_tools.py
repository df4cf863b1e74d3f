"""A session's gateway tools on a real loop with a stand-in tool backend: tier check before the
backend runs, at most MAX_OWN_CALLS in flight, a cancelled call unanswered but recorded, a backend
failure a tool error, prompts served only when there are some."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from connection_support import plain_session

from harness.events import ToolCallCompleted
from harness.events.attribution import Attribution
from harness.gateway.downstream.own_calls import MAX_OWN_CALLS
from harness.gateway.downstream.session import DownstreamSession
from harness.gateway.library.prompts import PromptLibrary
from harness.rules.access import NotPermitted
from harness.rules.routing import Identity


class Backend:
    """Gateway tools whose answers the test releases."""

    def __init__(self, prompts: PromptLibrary | None = None) -> None:
        self.prompts = prompts or PromptLibrary()
        self.release = asyncio.Event()
        self.started: list[str] = []

    async def call(self, name: str, arguments: Mapping[str, Any], identity: Identity) -> dict[str, Any]:
        self.started.append(name)
        await self.release.wait()
        if name == "harness_describe":
            raise ValueError("no harness or upstream named 'x'")
        if name == "harness_logs":
            raise RuntimeError("a bug")
        if name == "harness_restart":
            raise NotPermitted("not_permitted: restart")
        return {"harnesses": []}


def _session(backend: Backend, allow: frozenset[str] = frozenset({"read"})) -> tuple:
    sent: list[dict] = []
    events: list[Any] = []
    identity = Identity(Attribution(harness="h", run_id="r"), "0" * 32, "", allow)
    session = plain_session(lambda data: sent.append(json.loads(data)), events, identity, own=backend)
    session.handle(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    )
    return session, sent, events


def _call(session: DownstreamSession, request_id: int, name: str) -> None:
    session.handle({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name}})


def _rows(events: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(e.tool, e.outcome, e.error_reason) for e in events if isinstance(e, ToolCallCompleted)]


def test_a_write_facade_tool_is_refused_before_the_backend_runs_and_a_full_session_refuses_more_calls():
    async def scenario() -> None:
        backend = Backend()
        session, sent, events = _session(backend)
        assert "prompts" not in sent[0]["result"]["capabilities"]  # no prompts configured
        _call(session, 1, "harness_stop")
        assert sent[-1]["error"]["data"]["reason"] == "not_permitted" and backend.started == []
        for i in range(MAX_OWN_CALLS + 1):
            _call(session, 100 + i, "harness_list")
        await asyncio.sleep(0)
        assert len(backend.started) == MAX_OWN_CALLS
        assert sent[-1]["id"] == 100 + MAX_OWN_CALLS and "already in flight" in sent[-1]["error"]["message"]
        backend.release.set()
        await asyncio.sleep(0.01)
        answers = [m for m in sent if isinstance(m.get("id"), int) and m["id"] >= 100 and "result" in m]
        assert len(answers) == MAX_OWN_CALLS
        rows = _rows(events)
        assert rows[0] == ("harness_stop", "denied", "not_permitted")
        assert rows.count(("harness_list", "ok", None)) == MAX_OWN_CALLS

    asyncio.run(scenario())


def test_cancelled_failed_and_refused_backend_calls_each_end_in_one_row():
    async def scenario() -> None:
        backend = Backend()
        session, sent, events = _session(backend, frozenset({"read", "write"}))
        _call(session, 1, "harness_list")
        session.handle({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        _call(session, 2, "harness_describe")
        _call(session, 3, "harness_logs")
        _call(session, 4, "harness_restart")
        sent.clear()
        backend.release.set()
        await asyncio.sleep(0.01)
        by_id = {m["id"]: m for m in sent}
        assert 1 not in by_id  # cancelled: no answer
        assert by_id[2]["result"]["isError"] and "no harness" in by_id[2]["result"]["content"][0]["text"]
        assert by_id[3]["result"]["content"][0]["text"] == "harness_logs failed inside the gateway"
        assert by_id[4]["error"]["data"]["reason"] == "not_permitted"
        assert _rows(events) == [
            ("harness_list", "cancelled", None),
            ("harness_describe", "tool_error", None),
            ("harness_logs", "tool_error", None),
            ("harness_restart", "denied", "not_permitted"),
        ]

    asyncio.run(scenario())
