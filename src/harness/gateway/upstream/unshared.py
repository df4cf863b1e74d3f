"""Upstreams declared ``shared = false``: one supervised instance per harness, started on that
harness's first call in its workdir and stopped when the harness exits (a project's upstream too:
its harnesses' workdir is the project's folder).

Each instance is a full :class:`SupervisedUpstream` (its own breaker, supervisor, restarts, log
``upstreams/<name>@<harness>.log``), filtered and logged like a shared one and given only its own
table's environment. Their catalogues feed the same upstream key, so the tool list a harness sees
does not depend on whether its instance runs yet: before any instance ran, the daemon takes the
catalogue the store kept from an earlier instance, else starts one instance in the configuration's
folder just to read it (a probe) and stops it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from harness.config import UpstreamConfig
from harness.gateway.upstream.link import UpstreamLink
from harness.gateway.upstream.supervised import StopsUnderWay, SupervisedUpstream
from harness.vocabulary import StopReason

log = logging.getLogger(__name__)

PROBE = ""
"""The harness key of an instance started only to read the catalogue."""

Make = Callable[[UpstreamConfig, Path, str], SupervisedUpstream]
"""Builds an instance: (table, working directory, label for its log and actors)."""
Stop = Callable[[SupervisedUpstream, StopReason], Awaitable[None]]


def label(upstream: str, harness: str) -> str:
    """An instance's name in logs and files: ``<upstream key>@<harness>`` (``@probe`` for a probe)."""
    return f"{upstream}@{harness or 'probe'}"


class UnsharedUpstreams:
    """The per-harness instances of every ``shared = false`` upstream, by (upstream key, harness)."""

    def __init__(self, make: Make, stop: Stop, workdir: Callable[[str], Path]) -> None:
        self._make = make
        self._stop = stop
        self._workdir = workdir
        self.instances: dict[tuple[str, str], SupervisedUpstream] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = StopsUnderWay()

    def link(self, config: UpstreamConfig, harness: str | None) -> UpstreamLink | None:
        """The harness's own instance's wire, started now if it has none (None: no harness)."""
        if harness is None:
            return None
        key = (config.key, harness)
        instance = self.instances.get(key)
        if instance is not None and instance.config != config:  # a reload changed the table
            self._stopping.begin(self._stop(instance, "reload"))
            instance = None
        if instance is None:
            instance = self.instances[key] = self._make(config, self._workdir(harness), label(*key))
            self._spawn(instance.start())
            log.info("upstream %s: started for harness %s (shared = false)", config.key, harness)
        return instance.link

    async def probe(self, config: UpstreamConfig, cwd: Path) -> None:
        """Start one instance only to fetch (and publish) its catalogue, then stop it."""
        instance = self._make(config, cwd, label(config.key, PROBE))
        try:
            await instance.start()
        finally:
            await self._stopping.run(self._stop(instance, "catalogue probed"))

    async def stop_harness(self, harness: str) -> None:
        """Stop every instance of a harness (it exited, or is being stopped)."""
        await self._stop_where(lambda key: key[1] == harness, "harness exited")

    async def stop_upstream(self, upstream: str) -> None:
        """Stop every instance of an upstream, by key (a reload changed or removed its table)."""
        await self._stop_where(lambda key: key[0] == upstream, "reload")

    async def stop_all(self) -> None:
        """Stop every instance (daemon shutdown), and wait for the stops already under way."""
        await self._stop_where(lambda _key: True, "daemon stopping")
        await self._stopping.wait()
        for task in list(self._tasks):
            task.cancel()

    async def _stop_where(self, chosen: Callable[[tuple[str, str]], bool], reason: StopReason) -> None:
        """Stop the chosen instances in a future of their own (``StopsUnderWay``): cancelling this
        wait (a harness-exit task the stopping daemon cancels) would otherwise leave a process and
        its actors running; :meth:`stop_all` waits for it instead."""
        going = [self.instances.pop(key) for key in list(self.instances) if chosen(key)]
        await self._stopping.run(*(self._stop(instance, reason) for instance in going))

    def of(self, upstream: str) -> dict[str, SupervisedUpstream]:
        """The running instances of one upstream (by key), by harness."""
        return {h: inst for (u, h), inst in self.instances.items() if u == upstream}

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
