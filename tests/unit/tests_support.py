"""Builders shared by unit tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.events import HarnessExited, HarnessSpawned, ToolCallCompleted, ToolCatalogFetched


def call_event(
    i: int, *, harness: str | None = "h", outcome: str = "ok", ts: float | None = None
) -> ToolCallCompleted:
    """A plausible call event number ``i``."""
    return ToolCallCompleted(
        ts=ts if ts is not None else 1_796_000_000.0 + i,
        session_id=f"s{i % 3}",
        latency_ms=1.0 + i % 7,
        harness=harness,
        run_id="run" if harness else None,
        adapter="generic" if harness else None,
        model="m" if harness else None,
        config_hash="c" if harness else None,
        upstream="demo",
        tool=f"tool{i % 4}",
        tier="read",
        args_hash=f"{i:064x}",
        args=None,
        outcome=outcome,  # type: ignore[arg-type]
        error_reason=None,
        response_bytes=100 + i,
        response_tokens_est=(103 + i) // 4,
        trace_id="t" * 32,
        span_id=f"{i:016x}",
        exposed_name=f"demo__tool{i % 4}",
        via_call_tool=False,
        request_id=str(i),
    )


def catalog(
    upstream: str, tools: Sequence[dict[str, Any]] | str, ts: float = 1_796_000_000.0
) -> ToolCatalogFetched:
    """An upstream's catalogue event listing ``tools`` (or ``tools`` as raw ``tools_json`` text)."""
    text = tools if isinstance(tools, str) else json.dumps(list(tools))
    return ToolCatalogFetched(
        ts=ts,
        upstream=upstream,
        protocol_version="2025-11-25",
        server_name=upstream,
        server_version="1",
        tools_json=text,
        tool_count=0 if isinstance(tools, str) else len(tools),
    )


T0 = 1_796_000_000.0


def spawn_event(run_id: str, ts: float, restarted: str | None = None) -> HarnessSpawned:
    """Harness ``h`` spawned as run ``run_id``."""
    return HarnessSpawned(
        ts=ts,
        harness="h",
        run_id=run_id,
        pid=10,
        adapter="generic",
        model="m",
        config_hash="c",
        trace_id="t" * 32,
        workdir="/w",
        restarted_run_id=restarted,
    )


def exit_event(run_id: str, ts: float, code: int) -> HarnessExited:
    """Run ``run_id`` of harness ``h`` exited with ``code``."""
    return HarnessExited(ts=ts, harness="h", run_id=run_id, pid=10, returncode=code)


def run_call(i: int, run_id: str, outcome: str, ts: float) -> ToolCallCompleted:
    """``call_event(i)`` made by run ``run_id``."""
    return call_event(i, outcome=outcome, ts=ts).model_copy(update={"run_id": run_id})
