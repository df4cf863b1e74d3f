"""The log relay: each upstream set to the most verbose level its sessions asked for, and each log
message to exactly the sessions whose level it meets, its logger prefixed with the upstream key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.gateway.downstream.log_relay import LogRelay


class Link:
    def __init__(self, name: str) -> None:
        self.name = name
        self.capabilities = {"logging": {}}
        self.available = True
        self.config = type("C", (), {"timeout": 5.0})()
        self.levels: list[str] = []

    def serves(self, capability: str) -> bool:
        return self.available and capability in self.capabilities

    async def ask(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert method == "logging/setLevel"
        self.levels.append(params["level"])
        return {"result": {}}


class Session:
    def __init__(self, level: str | None) -> None:
        self.log_level = level
        self.lines: list[dict] = []

    def send(self, line: bytes) -> None:
        self.lines.append(json.loads(line))


def test_levels_and_messages():
    async def scenario() -> None:
        link = Link("gitea")
        quiet, warn, chatty = Session(None), Session("warning"), Session("info")
        relay = LogRelay(lambda _link: [quiet, warn, chatty])
        relay.level_asked([link])
        relay.level_asked([link])  # unchanged: not asked again
        await asyncio.sleep(0)
        assert link.levels == ["info"]
        relay.message(link, {"level": "info", "logger": "http", "data": "GET /"})
        relay.message(link, {"level": "error", "data": "boom"})
        relay.message(link, {"level": "loud", "data": "not a level: dropped"})
        assert quiet.lines == []
        assert [m["params"]["data"] for m in warn.lines] == ["boom"]
        assert [(m["params"]["logger"], m["params"]["data"]) for m in chatty.lines] == [
            ("gitea.http", "GET /"),
            ("gitea", "boom"),
        ]

    asyncio.run(scenario())
