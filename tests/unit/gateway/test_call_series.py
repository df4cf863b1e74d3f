"""The lock-free call series expose what prometheus_client's own Counter and Histograms would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness.gateway.evidence.call_metrics import (
    DURATION_BUCKETS,
    RESPONSE_BUCKETS,
    CallSeries,
    CallSeriesCollector,
)

CALLS = [
    ("alice", "git", "status", "ok", 0.004, 120),
    ("alice", "git", "status", "ok", 0.01, 1024),  # on a bucket bound: counted in it (le)
    ("alice", "git", "status", "tool_error", 3.0, 70_000),
    ("bob", "web", "fetch", "timeout", 30.0, 0),  # beyond every finite bound
    ("", "harness", "search_tools", "ok", 0.0005, 2_000_000),
]


def _samples(registry: CollectorRegistry) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_the_series_match_prometheus_clients_own_metrics():
    ours = CollectorRegistry()
    series = CallSeries()
    ours.register(CallSeriesCollector(series))
    reference = CollectorRegistry()
    calls = Counter("harness_mcp_calls", "c", ("harness", "upstream", "tool", "outcome"), registry=reference)
    durations = Histogram(
        "harness_mcp_call_duration_seconds",
        "d",
        ("upstream", "tool"),
        buckets=DURATION_BUCKETS,
        registry=reference,
    )
    sizes = Histogram(
        "harness_mcp_response_bytes", "s", ("upstream", "tool"), buckets=RESPONSE_BUCKETS, registry=reference
    )
    for harness, upstream, tool, outcome, seconds, size in CALLS:
        count, duration, response = series.children(harness, upstream, tool, outcome)
        count.value += 1
        duration.observe(seconds)
        response.observe(size)
        calls.labels(harness, upstream, tool, outcome).inc()
        durations.labels(upstream, tool).observe(seconds)
        sizes.labels(upstream, tool).observe(size)
    assert _samples(ours) == _samples(reference)
    created = [s for f in text_string_to_metric_families(generate_latest(ours).decode()) for s in f.samples]
    assert {s.name for s in created if s.name.endswith("_created")} == {
        "harness_mcp_calls_created",
        "harness_mcp_call_duration_seconds_created",
        "harness_mcp_response_bytes_created",
    }


def test_the_families_are_there_before_any_call():
    registry = CollectorRegistry()
    registry.register(CallSeriesCollector(CallSeries()))
    names = {f.name for f in text_string_to_metric_families(generate_latest(registry).decode())}
    assert names == {"harness_mcp_calls", "harness_mcp_call_duration_seconds", "harness_mcp_response_bytes"}
