"""The Prometheus series of ADR-0035, in one registry per process."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
