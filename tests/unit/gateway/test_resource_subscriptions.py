"""Resource subscriptions are reference-counted per (upstream, URI): one upstream subscription for
any number of sessions, updates to exactly the subscribed sessions, the upstream unsubscribed when
the last session leaves or disconnects."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.gateway.downstream.resource_proxy import Subscriptions


class Link:
    """An upstream wire that records what the gateway asked of it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[tuple[str, str]] = []
        self.available = True
        self.config = type("C", (), {"timeout": 5.0})()

    async def ask(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.asked.append((method, params["uri"]))
        return {"result": {}}


class Session:
    def __init__(self) -> None:
        self.lines: list[dict] = []

    def send(self, line: bytes) -> None:
        self.lines.append(json.loads(line))


def test_one_upstream_subscription_for_many_sessions_updates_fanned_out_unsubscribed_by_the_last():
    async def scenario() -> None:
        subs = Subscriptions()
        up, other = Link("up"), Link("other")
        a, b, c = Session(), Session(), Session()
        await subs.subscribe(a, up, "x")
        await subs.subscribe(b, up, "x")
        await subs.subscribe(c, other, "x")  # the same URI on another upstream
        assert up.asked == [("resources/subscribe", "x")] and subs.count(up, "x") == 2
        subs.updated(up, "x")
        assert [m["params"]["uri"] for m in a.lines] == ["x"] and len(b.lines) == 1 and c.lines == []
        await subs.unsubscribe(a, up, "x")
        assert up.asked == [("resources/subscribe", "x")]  # b still holds it
        await subs.leave(b)  # b disconnects: the last one
        assert up.asked == [("resources/subscribe", "x"), ("resources/unsubscribe", "x")]
        subs.updated(up, "x")
        assert len(a.lines) == 1 and len(b.lines) == 1
        assert other.asked == [("resources/subscribe", "x")]

    asyncio.run(scenario())
