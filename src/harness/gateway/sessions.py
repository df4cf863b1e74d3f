"""The live downstream sessions: made for a bridge connection or an HTTP client, each given the
routing snapshot the policy actor publishes, and told what the upstreams they reach announce."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.actors.snapshots import Published
from harness.events import Event, SessionOpened
from harness.gateway.downstream.features import ServerFeatures
from harness.gateway.downstream.log_relay import LogRelay
from harness.gateway.downstream.resource_proxy import Subscriptions, same_link
from harness.gateway.downstream.session import DownstreamSession, PolicyPublished
from harness.gateway.evidence.metrics import TOOL_SCHEMA_BYTES
from harness.gateway.evidence.recording import CallRecorder
from harness.gateway.facade import GatewayTools
from harness.gateway.store_reader import StoreReader
from harness.gateway.upstream.directory import LinkHooks, UpstreamDirectory
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.wire import jsonrpc
from harness.rules.exposure import Route
from harness.rules.routing import RoutingSnapshot


@dataclass(eq=False, kw_only=True)
class SessionRoster:
    """Makes sessions and keeps the live ones."""

    routing: Published[RoutingSnapshot]
    upstreams: UpstreamDirectory
    recorder: CallRecorder
    emit: Callable[[Event], None]
    reader: StoreReader
    own: GatewayTools
    live: set[DownstreamSession] = field(default_factory=set, init=False)
    subscriptions: Subscriptions = field(default_factory=Subscriptions, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.log_relay = LogRelay(self._audience)

    def link_hooks(self) -> LinkHooks:
        """What an upstream's wire tells the sessions it serves (resource updates, list changes, logs)."""
        return LinkHooks(
            self.subscriptions.updated, self._resources_changed, self.log_relay.message, self._tools_announced
        )

    def new_session(
        self,
        token: str | None,
        send: Any,
        bridge_version: int,
        modern: bool,
        transport: str = "stdio-bridge",
    ) -> DownstreamSession:
        """A session for a bridge connection (or an HTTP client) presenting ``token``, in the era its
        opener settled (``modern``: 2026-07-28)."""
        snapshot = self.routing.current
        identity = snapshot.identify(token)
        upstreams = self.upstreams
        session = DownstreamSession(
            identity=identity,
            view=snapshot.view_for(identity),
            links=lambda name: upstreams.link(name, identity.harness, modern),
            running=lambda name: upstreams.running_link(name, identity.harness),
            reading=(lambda name, link: upstreams.reading(name, identity.harness, link))
            if modern
            else same_link,
            recorder=self.recorder,
            emit=self.emit,
            send=send,
            on_close=self.live.discard,
            known=lambda name: self._known(name, token),
            search=lambda query, k, allowed, done: self.reader.search(
                query, k, allowed, done, upstreams=upstreams.reach(identity.harness)
            ),
            token=token if identity.harness else None,
            own=self.own,
            subscriptions=self.subscriptions,
            log_relay=self.log_relay,
            modern=modern,
        )
        TOOL_SCHEMA_BYTES.labels(identity.harness or "").set(len(session.listing))
        self.emit(session_opened_event(session, transport, bridge_version))
        return session

    def http_session(self, token: str, send: Any, modern: bool) -> DownstreamSession:
        """A live session for an HTTP client."""
        session = self.new_session(token, send, 0, modern, transport="http")
        self.live.add(session)
        return session

    def _known(self, name: str, token: str | None) -> Route | None:
        """A tool some upstream the token's harness could reach has, whatever its policy (the newest
        snapshot: a refusal then says ``not_permitted``, else ``unknown_tool``)."""
        snapshot = self.routing.current
        return snapshot.known_route(name, snapshot.identify(token).project)

    def serve_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the sessions live on (snapshots published on other threads are handed to it)."""
        self._loop = loop

    def published(self, snapshot: RoutingSnapshot) -> None:
        """Called on the policy actor's thread: each live session's mailbox gets it on the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._deliver_snapshot, snapshot)

    def _deliver_snapshot(self, snapshot: RoutingSnapshot) -> None:
        message = PolicyPublished(snapshot)
        for session in self.live:
            session.deliver(message)

    def _served(self, link: UpstreamLink) -> list[DownstreamSession]:
        """The live sessions an upstream instance serves (its policy exposes it, it runs for them)."""
        running = self.upstreams.running_link
        return [
            s
            for s in self.live
            if link.name in s.view.servers and running(link.name, s.identity.harness) is link
        ]

    def _audience(self, link: UpstreamLink) -> list[ServerFeatures]:
        return [s.features for s in self._served(link)]

    def _tools_announced(self, link: UpstreamLink) -> None:
        """An upstream announced a new tool list that came back the same (a tool added and removed
        again): the sessions that list its tools hear the announcement anyway, as they would from the
        upstream itself (a list that did change reaches them as a new view, :meth:`published`)."""
        line = jsonrpc.notification("notifications/tools/list_changed")
        for session in self._served(link):
            if session.view.exposure == "full":
                session.send(line)

    def _resources_changed(self, link: UpstreamLink) -> None:
        """An upstream's resource list changed: tell the sessions it serves."""
        line = jsonrpc.notification("notifications/resources/list_changed")
        for session in self._audience(link):
            session.send(line)

    def close_all(self, why: str) -> None:
        """Close every live session."""
        for session in list(self.live):
            session.close(why)


def session_opened_event(session: DownstreamSession, transport: str, bridge_version: int) -> SessionOpened:
    """The event for a newly opened session."""
    ident = session.identity
    return SessionOpened(
        ts=time.time(),
        session_id=session.session_id,
        harness=ident.harness,
        run_id=ident.run_id,
        transport=transport,
        bridge_version=bridge_version,
    )
