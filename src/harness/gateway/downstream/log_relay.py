"""``logging/setLevel`` and upstream log messages across many sessions on one upstream.

A session that sets a level gets the log messages (``notifications/message``) of the upstreams its
policy exposes, at that level or more severe, with ``logger`` prefixed by the upstream key
(``gitea`` or ``gitea.http``). A session that never set one gets none: on a shared upstream, one
agent's chattiness must not flood the others. Each upstream that declared ``logging`` is set to the
most verbose level any session asked of it (it is never made quieter than what some session still
wants; when the last such session leaves it stays where it was).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc

log = logging.getLogger(__name__)

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""RFC 5424 severities, least severe first (MCP's logging levels)."""
RANK = {level: rank for rank, level in enumerate(LEVELS)}


class Listener(Protocol):
    """A session as the relay sees it."""

    log_level: str | None

    def send(self, line: bytes) -> None:
        """Write one message line to the agent."""
        ...


class LogRelay:
    """Per-upstream levels and the fan-out of upstream log messages."""

    def __init__(self, audience: Callable[[UpstreamLink], Iterable[Listener]]) -> None:
        self._audience = audience
        """The live sessions a link's messages may reach (its policy exposes it, it runs for them)."""
        self._set: dict[UpstreamLink, str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def level_asked(self, links: Iterable[UpstreamLink]) -> None:
        """A session set its level: move each of its upstreams to the most verbose level wanted."""
        for link in links:
            if not link.serves("logging"):
                continue
            wanted = [s.log_level for s in self._audience(link) if s.log_level is not None]
            if not wanted:
                continue
            level = min(wanted, key=RANK.__getitem__)
            if self._set.get(link) != level:
                self._set[link] = level
                task = asyncio.ensure_future(
                    link.ask("logging/setLevel", {"level": level}, link.config.timeout)
                )
                self._tasks.add(task)
                task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("logging/setLevel upstream failed: %s", error)

    def message(self, link: UpstreamLink, params: Any) -> None:
        """An upstream's ``notifications/message``: to each session of its audience whose level it meets."""
        if not isinstance(params, dict) or params.get("level") not in RANK:
            return
        logger = params.get("logger")
        relayed = {
            **params,
            "logger": f"{link.name}.{logger}" if isinstance(logger, str) and logger else link.name,
        }
        line = jsonrpc.notification("notifications/message", relayed)
        rank = RANK[params["level"]]
        for session in self._audience(link):
            if session.log_level is not None and rank >= RANK[session.log_level]:
                session.send(line)
