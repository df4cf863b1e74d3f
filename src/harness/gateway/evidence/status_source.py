"""What the status page shows, gathered on the metrics listener's thread: the daemon's status
(computed on the loop, which owns it), the newest call-log rows (a read-only store connection) and
the schema bytes per harness (the metrics registry)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.gateway.evidence.metrics import REGISTRY
from harness.gateway.evidence.status_page import RECENT_CALLS, render

STATUS_TIMEOUT_S = 2.0


def schema_bytes_per_harness() -> dict[str, float]:
    """``harness_mcp_tool_schema_bytes`` by harness ("" for unattributed sessions)."""
    return {
        sample.labels["harness"]: sample.value
        for metric in REGISTRY.collect()
        if metric.name == "harness_mcp_tool_schema_bytes"
        for sample in metric.samples
    }


def recent_calls(db: Path, limit: int = RECENT_CALLS) -> list[dict[str, Any]]:
    """The newest ``limit`` call-log rows, oldest first ([] before the store exists)."""
    from harness.reading import open_store

    if not db.exists():
        return []
    with open_store(db) as view:
        return view.calls(limit=limit)


@dataclass(frozen=True)
class StatusPage:
    """The listener's ``page``: one rendering per request, from the loop's status and the store."""

    loop: Callable[[], asyncio.AbstractEventLoop | None]
    status: Callable[[], Coroutine[Any, Any, dict[str, Any]]]
    db: Path
    scrub: Callable[[Any], Any] = lambda value: value
    """Redacts the daemon's held secrets from the store's rows (``status`` answers redacted)."""

    def __call__(self) -> bytes:
        loop = self.loop()
        if loop is None or loop.is_closed():
            raise RuntimeError("the daemon is not running")
        status = asyncio.run_coroutine_threadsafe(self.status(), loop).result(STATUS_TIMEOUT_S)
        return render(status, self.scrub(recent_calls(self.db)), schema_bytes_per_harness())
