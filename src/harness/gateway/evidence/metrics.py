"""The Prometheus series of ADR-0035 and the process's own (``process_*``, ``python_info``), in one
registry per process, served on ``metrics_listen`` with ``/healthz`` and the status page."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import choose_encoder

from harness.events import CircuitClosed, CircuitOpened, Event, UpstreamStateChanged
from harness.gateway.downstream.http_wire import loopback_hosts
from harness.gateway.evidence.call_metrics import CallSeries, CallSeriesCollector
from harness.rules.gateway_tools import CALL_TOOL, GATEWAY_TOOL_TIERS, SEARCH_TOOLS

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)  # process_cpu_seconds_total, process_resident_memory_bytes, ...
PlatformCollector(registry=REGISTRY)  # python_info

CALL_SERIES = CallSeries()
"""``harness_mcp_calls``, ``harness_mcp_call_duration_seconds``, ``harness_mcp_response_bytes``:
counted by the recorder on the loop without locks (see :mod:`call_metrics`)."""
REGISTRY.register(CallSeriesCollector(CALL_SERIES))
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


TOOL_LABELS_PER_UPSTREAM = 100
"""Distinct ``tool`` label values per upstream before the rest collapse into ``__other__``."""

OWN_UPSTREAM = "harness"
"""The ``upstream`` label of the gateway's own tools, and of calls naming a tool that does not exist."""
UNKNOWN_TOOL = "__unknown__"
"""The one ``tool`` label of every call naming no tool the gateway knows (never its own label)."""
_OWN_TOOLS = frozenset({*GATEWAY_TOOL_TIERS, SEARCH_TOOLS, CALL_TOOL})

_tool_labels: dict[str, set[str]] = {}
"""Per upstream label value, the tool labels given out so far: one cap for the whole registry."""


def tool_label(upstream: str, tool: str) -> str:
    """The ``tool`` label for a call: under ``harness``, a gateway tool's name or ``__unknown__``;
    elsewhere the tool's name while the upstream has fewer than ``TOOL_LABELS_PER_UPSTREAM`` of them,
    else ``__other__`` (called on the loop only)."""
    if upstream == OWN_UPSTREAM:
        return tool if tool in _OWN_TOOLS else UNKNOWN_TOOL
    seen = _tool_labels.setdefault(upstream, set())
    if tool in seen:
        return tool
    if len(seen) < TOOL_LABELS_PER_UPSTREAM:
        seen.add(tool)
        return tool
    return "__other__"


class _Routes(BaseHTTPRequestHandler):
    """``/metrics``: the Prometheus text, or OpenMetrics when the scraper's ``Accept`` asks for it;
    ``/healthz``: 200 while the daemon runs; ``/``: the status page, when the listener has one; 421
    for a ``Host`` other than the listener's own loopback name and port, as on ``/mcp``."""

    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        host = self.headers.get("Host", "")
        if host not in self.server.hosts:  # DNS rebinding: a page under another name read as 127.0.0.1
            text = f"Host {host[:100]!r} is not this loopback listener (DNS rebinding protection)\n"
            self._send(421, "text/plain; charset=utf-8", text.encode())
        elif path == "/metrics":
            encode, content_type = choose_encoder(self.headers.get("Accept", ""))
            self._send(200, content_type, encode(REGISTRY))
        elif path == "/healthz":
            self._send(200, "text/plain; charset=utf-8", b"ok\n")
        elif path == "/" and self.server.page is not None:
            try:
                body = self.server.page()
            except Exception as exc:  # the page must never take the listener down
                self._send(503, "text/plain; charset=utf-8", f"status unavailable: {exc}\n".encode())
                return
            self._send(200, "text/html; charset=utf-8", body)
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics, /healthz or /\n")

    def _send(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged (a scraper every 15 s would fill the daemon's stderr)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    page: Callable[[], bytes] | None = None
    hosts: frozenset[str] = frozenset()
    """The ``Host`` values answered: this listener's loopback names and port."""


class _Server6(_Server):
    address_family = socket.AF_INET6  # metrics_listen = "[::1]:PORT"


class MetricsListener:
    """Serves /metrics (Prometheus text or OpenMetrics), /healthz and / (the status page ``page``
    renders) on a loopback address from a thread; can move or stop."""

    def __init__(self, page: Callable[[], bytes] | None = None) -> None:
        self.address: tuple[str, int] | None = None
        self._page = page
        self._server: _Server | None = None

    def serve(self, address: tuple[str, int] | None) -> None:
        """Listen on ``address`` (None: not at all), closing a previous listener first if it differs."""
        if address == self.address:
            return
        self.close()
        if address is not None:
            server = (_Server6 if ":" in address[0] else _Server)(address, _Routes)
            server.page = self._page
            server.hosts = loopback_hosts(*address)
            threading.Thread(target=server.serve_forever, name="metrics-listener", daemon=True).start()
            self._server = server
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
