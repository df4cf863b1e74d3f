"""The per-call Prometheus series, counted on the event loop without locks and read at scrape time.

``prometheus_client``'s ``Counter.inc`` and ``Histogram.observe`` take a lock per value (a histogram
observation: one per bucket it passes, plus the sum), a large share of recording a call
(bench/README.md). The loop is the only writer of these series, so plain integers do:
:class:`CallSeries` keeps the counts in dicts the loop updates, and :class:`CallSeriesCollector`
turns a copy of them into the same metric families (names, labels, buckets, ``_created``) when
``/metrics`` is scraped from the listener's thread. Copying a dict is one C call, so a scrape never
sees one half-updated.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Sequence

from prometheus_client import utils
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

DURATION_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, float("inf"),
)  # fmt: skip
"""Upper bounds of ``harness_mcp_call_duration_seconds`` (prometheus_client's default buckets)."""

RESPONSE_BUCKETS: tuple[float, ...] = (256, 1024, 4096, 16384, 65536, 262144, 1048576, float("inf"))
"""Upper bounds of ``harness_mcp_response_bytes``."""

_le: Callable[[float], str] = utils.floatToGoString
"""A bound as prometheus_client writes it in ``le`` (``256.0``, ``1.048576e+06``, ``+Inf``)."""


class Observations:
    """One histogram child: a count per bucket (not cumulative), their sum, when it was created."""

    __slots__ = ("bounds", "counts", "created", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.total = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        """Count ``value`` in the first bucket whose bound is at least it (Prometheus's ``le``)."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value


class Count:
    """One counter child."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0
        self.created = time.time()


class CallSeries:
    """The call counter and the two call histograms, keyed by their label values (loop thread only)."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str, str, str], Count] = {}
        self.durations: dict[tuple[str, str], Observations] = {}
        self.sizes: dict[tuple[str, str], Observations] = {}

    def children(
        self, harness: str, upstream: str, tool: str, outcome: str
    ) -> tuple[Count, Observations, Observations]:
        """The counter and histogram children for these labels, made on first use."""
        key = (harness, upstream, tool, outcome)
        count = self.calls.get(key)
        if count is None:
            count = self.calls[key] = Count()
        pair = (upstream, tool)
        duration = self.durations.get(pair)
        if duration is None:
            duration = self.durations[pair] = Observations(DURATION_BUCKETS)
        size = self.sizes.get(pair)
        if size is None:
            size = self.sizes[pair] = Observations(RESPONSE_BUCKETS)
        return count, duration, size


def _histogram(name: str, documentation: str, children: dict[tuple[str, str], Observations]) -> Metric:
    family = HistogramMetricFamily(name, documentation, labels=("upstream", "tool"))
    for labels, child in children.copy().items():
        counts = list(child.counts)
        running = 0
        buckets = []
        for bound, n in zip(child.bounds, counts, strict=True):
            running += n
            buckets.append((_le(bound), running))
        family.add_metric(list(labels), buckets, child.total)
        family.samples.append(family.samples[-1]._replace(name=f"{name}_created", value=child.created))
    return family


class CallSeriesCollector(Collector):
    """Exposes a :class:`CallSeries` as ``harness_mcp_calls``, ``harness_mcp_call_duration_seconds``
    and ``harness_mcp_response_bytes``."""

    def __init__(self, series: CallSeries) -> None:
        self._series = series

    def collect(self) -> Iterator[Metric]:
        """The three families, from a copy of the counts taken now."""
        labels = ("harness", "upstream", "tool", "outcome")
        calls = CounterMetricFamily("harness_mcp_calls", "Tool calls through the gateway", labels=labels)
        for values, count in self._series.calls.copy().items():
            calls.add_metric(list(values), count.value, created=count.created)
        yield calls
        yield _histogram("harness_mcp_call_duration_seconds", "Tool call latency", self._series.durations)
        yield _histogram("harness_mcp_response_bytes", "Bytes of each tool call response", self._series.sizes)
