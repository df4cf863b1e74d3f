"""The Prometheus series of ADR-0035, in one registry per process."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from harness.events import CircuitClosed, CircuitOpened, Event, UpstreamStateChanged

REGISTRY = CollectorRegistry(auto_describe=True)

CALLS = Counter(
    "harness_mcp_calls",
    "Tool calls through the gateway",
    ("harness", "upstream", "tool", "outcome"),
    registry=REGISTRY,
)
CALL_DURATION = Histogram(
    "harness_mcp_call_duration_seconds", "Tool call latency", ("upstream", "tool"), registry=REGISTRY
)
UPSTREAM_UP = Gauge(
    "harness_mcp_upstream_up", "1 while the upstream is initialized", ("upstream",), registry=REGISTRY
)
UPSTREAM_RESTARTS = Counter(
    "harness_mcp_upstream_restarts", "Upstream restarts", ("upstream",), registry=REGISTRY
)
CALL_LOG_DROPPED = Counter(
    "harness_mcp_call_log_dropped",
    "Events dropped because the log writer's intake was full",
    registry=REGISTRY,
)
TOOL_SCHEMA_BYTES = Gauge(
    "harness_mcp_tool_schema_bytes",
    "Bytes of the tools/list array the harness's newest session received",
    ("harness",),
    registry=REGISTRY,
)
CIRCUIT_OPEN = Gauge(
    "harness_mcp_circuit_open", "1 while the upstream's breaker is open", ("upstream",), registry=REGISTRY
)
RESPONSE_BYTES = Histogram(
    "harness_mcp_response_bytes",
    "Bytes of each tool call response",
    ("upstream", "tool"),
    buckets=(256, 1024, 4096, 16384, 65536, 262144, 1048576, float("inf")),
    registry=REGISTRY,
)


TOOL_LABELS_PER_UPSTREAM = 100
"""Distinct ``tool`` label values per upstream before the rest collapse into ``__other__``."""

_tool_labels: dict[str, set[str]] = {}
"""Per upstream label value, the tool labels given out so far: one cap for the whole registry."""


def tool_label(upstream: str, tool: str) -> str:
    """The ``tool`` label for a call: the tool's name while the upstream has fewer than
    ``TOOL_LABELS_PER_UPSTREAM`` of them, else ``__other__`` (called on the loop only)."""
    seen = _tool_labels.setdefault(upstream, set())
    if tool in seen:
        return tool
    if len(seen) < TOOL_LABELS_PER_UPSTREAM:
        seen.add(tool)
        return tool
    return "__other__"


class MetricsListener:
    """Serves /metrics (Prometheus text) on a loopback address from a thread; can move or stop."""

    def __init__(self) -> None:
        self.address: tuple[str, int] | None = None
        self._server: Any = None

    def serve(self, address: tuple[str, int] | None) -> None:
        """Listen on ``address`` (None: not at all), closing a previous listener first if it differs."""
        if address == self.address:
            return
        self.close()
        if address is not None:
            from prometheus_client import start_http_server

            self._server, _thread = start_http_server(address[1], addr=address[0], registry=REGISTRY)
            self.address = address

    def close(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.address = None


def follow_upstream_events(event: Event) -> None:
    """Keep the per-upstream gauges and the restart counter in step with the events that change
    them (subscribed on the bus: thread-safe, so it may run on whichever thread published)."""
    if isinstance(event, UpstreamStateChanged):
        UPSTREAM_UP.labels(event.upstream).set(1 if event.state == "up" else 0)
        if event.state in ("restarting", "starting"):  # after an exit, or `harness restart`
            UPSTREAM_RESTARTS.labels(event.upstream).inc()
    elif isinstance(event, CircuitOpened):
        CIRCUIT_OPEN.labels(event.upstream).set(1)
    elif isinstance(event, CircuitClosed):
        CIRCUIT_OPEN.labels(event.upstream).set(0)


UPSTREAM_EVENTS = (UpstreamStateChanged, CircuitOpened, CircuitClosed)
"""What :func:`follow_upstream_events` subscribes to."""
