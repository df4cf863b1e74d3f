"""2026-07-28 instances beside handshake ones: a 2026-07-28 session reaches a dual-era upstream in
its own era, as it would reach the server directly.

An upstream that answers ``initialize`` may speak 2026-07-28 too (every mcp 2.3 SDK server does),
but one connection serves one era: a handshake session keeps its server→client requests
(``ctx.elicit``), which that revision has not, and a 2026-07-28 one its input-required results
(SEP-2322), which the handshake cannot carry. So the first call (``tools/call``, ``prompts/get``,
``resources/read``) of a 2026-07-28 session to such an upstream starts its *twin*: the same table
opened with ``server/discover`` (a Streamable HTTP upstream: the same URL, spoken to without a
session; a stdio one: a second process). Its own supervisor and breaker guard it; its events and log
go by ``<key>~2026-07-28``; its catalogue is read, not published (the handshake instance's is the
upstream's). When discovery fails the twin is stopped and the upstream remembered as handshake-only
until its handshake instance starts again: 2026-07-28 sessions then use the handshake instance, whose
elicitations reach them as input-required results (``tool_calls.py``). Listings, resource
subscriptions, logging and completion stay on the handshake instance; the twin's list changes are
the handshake instance's to fetch and announce.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from harness.gateway.upstream.link import INIT_TIMEOUT_S, UpstreamLink
from harness.gateway.upstream.supervised import StopsUnderWay, SupervisedUpstream
from harness.gateway.wire.revisions import MODERN_VERSIONS
from harness.vocabulary import StopReason

log = logging.getLogger(__name__)

ERA: Final = MODERN_VERSIONS[-1]
"""The revision a twin speaks."""

MakeTwin = Callable[[SupervisedUpstream], SupervisedUpstream]
"""Builds the twin of a handshake instance (not started)."""
Stop = Callable[[SupervisedUpstream, StopReason], Awaitable[None]]


def twin_name(name: str) -> str:
    """A twin's name in events, logs and status: ``<key>~2026-07-28`` (``<key>@<harness>~…`` for a
    ``shared = false`` instance's)."""
    return f"{name}~{ERA}"


class EraTwins:
    """The twin of each handshake instance a 2026-07-28 session reached, by that instance."""

    def __init__(self, make: MakeTwin, stop: Stop) -> None:
        self._make = make
        self._stop = stop
        self.twins: dict[SupervisedUpstream, SupervisedUpstream] = {}
        self._handshake_only: set[SupervisedUpstream] = set()
        """Handshake instances whose twin could not be opened (until they start again)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = StopsUnderWay()

    def link(self, base: SupervisedUpstream) -> UpstreamLink:
        """The wire a 2026-07-28 session's call to ``base``'s upstream goes to: its twin (started
        now if it has none; a call waits for its first start), else ``base``'s own when ``base``
        speaks 2026-07-28 already, is down, or is handshake-only."""
        twin = self.twins.get(base)
        if twin is not None:
            return twin.link
        if base.link.modern is not None or not base.link.available or base in self._handshake_only:
            return base.link
        twin = self.twins[base] = self._make(base)
        own = twin.link.on_list_changed

        def list_changed() -> None:
            """An SDK server announces list changes only on 2026-07-28 listen streams: the twin
            reads its own tools again, and the handshake instance fetches the upstream's catalogue
            and announces it as if it had heard it."""
            own()
            base.link.on_list_changed()

        twin.link.on_list_changed = list_changed
        twin.link.on_resources_changed = lambda _twin: base.link.on_resources_changed(base.link)
        self._spawn(self._open(base, twin))
        log.info("upstream %s: a 2026-07-28 session called it: starting %s", base.name, twin.name)
        return twin.link

    async def settled(self, base: SupervisedUpstream) -> UpstreamLink:
        """:meth:`link`, once a twin started now has had its first start (a ``prompts/get`` or a
        ``resources/read`` waits for it, at most :data:`INIT_TIMEOUT_S`)."""
        link = self.link(base)
        if link is not base.link and not link.first_attempt.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(link.first_attempt.wait(), INIT_TIMEOUT_S)
            return self.link(base)
        return link

    async def _open(self, base: SupervisedUpstream, twin: SupervisedUpstream) -> None:
        """Start the twin; one whose first start fails (a handshake-only server) is stopped and its
        upstream remembered as handshake-only (before a call held for it goes on)."""
        await twin.start()
        if twin.failure and self.twins.get(base) is twin:
            del self.twins[base]
            self._handshake_only.add(base)
            log.info(
                "upstream %s: no 2026-07-28 (%s): its handshake instance serves both eras",
                base.name,
                twin.failure,
            )
            self._stopping.begin(self._stop(twin, "handshake only"))

    def restarted(self, base: SupervisedUpstream) -> None:
        """``base`` starts again: its twin stops, and whether the upstream speaks 2026-07-28 is
        asked again on the next 2026-07-28 call."""
        if base in self._handshake_only or base in self.twins:
            self._stopping.begin(self.forget(base, "restarted"))

    async def forget(self, base: SupervisedUpstream, reason: StopReason) -> None:
        """``base`` stops (or starts again): so does its twin."""
        self._handshake_only.discard(base)
        twin = self.twins.pop(base, None)
        if twin is not None:
            await self._stop(twin, reason)

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop_all(self) -> None:
        """The daemon stops: starts under way end, stops under way are waited for (the twins
        themselves stop with their handshake instances)."""
        for task in list(self._tasks):
            task.cancel()
        await self._stopping.wait()
