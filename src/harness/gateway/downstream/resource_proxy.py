"""``resources/*`` for a session, from the upstreams its policy exposes that declared ``resources``
and run for it now.

URIs are passed through unchanged (they name things outside the gateway: files, database rows);
what a session listed tells which upstream serves a URI, and a URI it never listed (one made from a
template) is asked of each exposed upstream in policy order until one has it. Subscriptions are
reference-counted per (upstream, URI) by :class:`Subscriptions`: one upstream subscription however
many sessions subscribe, each ``notifications/resources/updated`` fanned out to exactly the sessions
subscribed, the upstream unsubscribed when the last one leaves or disconnects. None of this is a
tool call: no call-log row.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from harness.gateway.upstream.link import UpstreamLink, list_all
from harness.gateway.wire import jsonrpc

log = logging.getLogger(__name__)

LIST_TIMEOUT_S = 10.0
RESOURCE_NOT_FOUND = -32002

Links = Callable[[str], UpstreamLink | None]
Reading = Callable[[str, UpstreamLink], Awaitable[UpstreamLink]]
"""Where a session's ``prompts/get`` or ``resources/read`` of an upstream (its name, the wire its
listing came from) goes: that wire, or for a 2026-07-28 session the upstream's twin
(``UpstreamDirectory.reading``)."""


async def same_link(_server: str, link: UpstreamLink) -> UpstreamLink:
    """A handshake session's gets and reads go where its listings go."""
    return link


class Subscriber(Protocol):
    """A session that can be told a resource changed."""

    def send(self, line: bytes) -> None:
        """Write one message line to the agent."""
        ...


class Subscriptions:
    """Every session's resource subscriptions, one upstream subscription per (upstream, URI)."""

    def __init__(self) -> None:
        self._subscribers: dict[tuple[UpstreamLink, str], set[Subscriber]] = {}

    def count(self, link: UpstreamLink, uri: str) -> int:
        """Sessions subscribed to ``uri`` on ``link``."""
        return len(self._subscribers.get((link, uri), ()))

    async def subscribe(self, session: Subscriber, link: UpstreamLink, uri: str) -> dict[str, Any]:
        """Subscribe a session; the upstream is asked only for the first one (its reply returned)."""
        key = (link, uri)
        sessions = self._subscribers.get(key)
        if sessions:
            sessions.add(session)
            return {"result": {}}
        reply = await link.ask("resources/subscribe", {"uri": uri}, link.config.timeout)
        if "error" not in reply:
            self._subscribers.setdefault(key, set()).add(session)
        return reply

    async def unsubscribe(self, session: Subscriber, link: UpstreamLink, uri: str) -> None:
        """Unsubscribe a session; the upstream is told when the last one leaves."""
        key = (link, uri)
        sessions = self._subscribers.get(key)
        if not sessions or session not in sessions:
            return
        sessions.discard(session)
        if not sessions:
            del self._subscribers[key]
            if link.available:
                await link.ask("resources/unsubscribe", {"uri": uri}, link.config.timeout)

    async def leave(self, session: Subscriber) -> None:
        """A session closed: drop every subscription it held."""
        held = [key for key, sessions in self._subscribers.items() if session in sessions]
        await asyncio.gather(*(self.unsubscribe(session, *key) for key in held), return_exceptions=True)

    def updated(self, link: UpstreamLink, uri: str) -> None:
        """The upstream said ``uri`` changed: tell exactly the sessions subscribed to it there."""
        line = jsonrpc.notification("notifications/resources/updated", {"uri": uri})
        for session in list(self._subscribers.get((link, uri), ())):
            session.send(line)


class ResourceView:
    """One session's resources: the URIs it listed, by the upstream that serves them."""

    def __init__(
        self,
        servers: Callable[[], Sequence[str]],
        links: Links,
        subscriptions: Subscriptions,
        reading: Reading = same_link,
    ) -> None:
        self._servers, self._links, self._reading = servers, links, reading
        self._subscriptions = subscriptions
        self.listed: dict[str, str] = {}

    def serving(self) -> list[tuple[str, UpstreamLink]]:
        """The exposed upstreams that serve resources now, in policy order."""
        return [
            (s, link)
            for s in self._servers()
            if (link := self._links(s)) is not None and link.serves("resources")
        ]

    async def _merged(self, method: str, key: str) -> list[dict[str, Any]]:
        serving = self.serving()
        found = await asyncio.gather(
            *(list_all(link, method, key, LIST_TIMEOUT_S) for _s, link in serving), return_exceptions=True
        )
        merged: list[dict[str, Any]] = []
        for (server, _link), items in zip(serving, found, strict=True):
            if isinstance(items, BaseException):
                log.warning("upstream %s: %s failed: %s", server, method, items)
                continue
            for item in items:
                if key == "resources" and isinstance(item.get("uri"), str):
                    self.listed.setdefault(item["uri"], server)
                merged.append(item)
        return merged

    async def _read(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            return {"error": {"code": jsonrpc.INVALID_PARAMS, "message": "resources/read needs params.uri"}}
        serving = dict(self.serving())
        known = self.listed.get(uri)
        order = [known] if known is not None and known in serving else list(serving)
        reply: dict[str, Any] = {
            "error": {"code": RESOURCE_NOT_FOUND, "message": f"no exposed upstream has {uri}"}
        }
        for server in order:
            link = await self._reading(server, serving[server])
            reply = await link.ask("resources/read", params, link.config.timeout)
            if "error" not in reply:
                self.listed[uri] = server
                return reply
        return reply

    def owner(self, uri: Any, guess: bool = False) -> UpstreamLink | None:
        """The upstream serving ``uri`` as this session listed it (``guess``: else the one exposed
        upstream that serves resources, if only one does)."""
        serving = dict(self.serving())
        server = self.listed.get(uri) if isinstance(uri, str) else None
        if server is None and guess and len(serving) == 1:
            return next(iter(serving.values()))
        return serving.get(server) if server is not None else None

    async def _locate(self, uri: Any) -> UpstreamLink | None:
        """The owner of a URI this session has not listed: found by listing resources (a URI only a
        template makes: the one exposed upstream that serves resources, if only one does)."""
        if not isinstance(uri, str):
            return None
        await self._merged("resources/list", "resources")
        return self.owner(uri, guess=True)

    async def answer(self, session: Subscriber, request_id: Any, method: str, params: Any) -> bytes:
        """The answer line to one ``resources/*`` request."""
        params = params if isinstance(params, dict) else {}
        try:
            if method == "resources/list":
                return jsonrpc.result(request_id, {"resources": await self._merged(method, "resources")})
            if method == "resources/templates/list":
                templates = await self._merged(method, "resourceTemplates")
                return jsonrpc.result(request_id, {"resourceTemplates": templates})
            if method == "resources/read":
                reply = await self._read(params)
            else:
                uri = params.get("uri")
                link = self.owner(uri) or await self._locate(uri)
                if link is None:
                    detail = f"no exposed upstream serves {uri!r}"
                    return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, detail)
                if method == "resources/subscribe":
                    reply = await self._subscriptions.subscribe(session, link, uri)
                else:
                    await self._subscriptions.unsubscribe(session, link, uri)
                    reply = {"result": {}}
        except TimeoutError:
            return jsonrpc.error(
                request_id, jsonrpc.INTERNAL_ERROR, f"an upstream did not answer {method} in time"
            )
        return jsonrpc.relayed(request_id, reply)
