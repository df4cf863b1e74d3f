"""A real ``Daemon`` run on the test's own event loop, for tests that reach into it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from harness.config import load_config
from harness.gateway.daemon import Daemon

WAIT_S = 30.0


@contextlib.asynccontextmanager
async def running_daemon(config_path: Path, state: Path) -> AsyncIterator[Daemon]:
    """The daemon of ``config_path``, ready; when the block ends, stopped and its run awaited."""
    daemon = Daemon(load_config(config_path), state, config_path)
    ready = asyncio.Event()
    running = asyncio.create_task(daemon.run(ready=ready.set))
    try:
        await asyncio.wait_for(ready.wait(), WAIT_S)
        yield daemon
    finally:
        daemon.request_stop()
        await asyncio.wait_for(running, WAIT_S)
