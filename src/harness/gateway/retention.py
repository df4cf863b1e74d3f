"""Retention: events and call-log rows older than ``call_log_days`` go, at start and then hourly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pykka

from harness.actors.log_writer import Compact

RETENTION_INTERVAL_S = 3600.0


async def keep_retention(writer: pykka.ActorRef[Any], days: Callable[[], float]) -> None:
    """Tell the writer to compact what is older than ``days()`` (read each time: a reload applies);
    the writer runs each compaction in its own thread, draining calls between its steps."""
    while True:
        writer.tell(Compact(older_than=time.time() - days() * 86_400))
        await asyncio.sleep(RETENTION_INTERVAL_S)
