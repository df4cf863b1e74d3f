"""Telemetry export (``[mcp] export_telemetry = true``): each call a span and a log record, sent
over OTLP/HTTP to the collector the standard ``OTEL_EXPORTER_OTLP_*`` variables name (default
``http://localhost:4318``). Needs the optional extra ``harness-gateway[otel]``.

The span carries the call's trace id (the run's W3C trace context) and span id, its times, its
attribution, upstream, tool, tier and outcome — never its arguments. The loop only appends the call
event to a queue; a worker thread builds the spans and log records and exports them in batches, so a
slow or absent collector costs the calls nothing (what it refuses is dropped and counted).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import random
import threading
import time
from collections import deque
from typing import Any

from harness import __version__
from harness.events import Event, ToolCallCompleted

log = logging.getLogger("harness.telemetry")

EXTRA_HINT = "needs the optional extra: pip install 'harness-gateway[otel]'"
FLUSH_INTERVAL_S = 1.0
MAX_BATCH = 512
MAX_QUEUED = 65_536
WARN_INTERVAL_S = 60.0
EXPORT_TIMEOUT_S = 3.0


def available() -> bool:
    """Whether the OpenTelemetry SDK and its OTLP/HTTP exporter are installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
    )


def _hex_id(text: str, digits: int) -> int:
    """A trace/span id from its hex text; a random one when the text is not such an id."""
    try:
        value = int(text, 16) if len(text) == digits else 0
    except ValueError:
        value = 0
    return value or random.getrandbits(digits * 4)


def _span_context(event: ToolCallCompleted) -> Any:
    """The call's span context: the run's trace id, the call's span id, sampled."""
    from opentelemetry.trace import SpanContext, TraceFlags

    return SpanContext(
        trace_id=_hex_id(event.trace_id, 32),
        span_id=_hex_id(event.span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def call_attributes(event: ToolCallCompleted) -> dict[str, Any]:
    """The span's and log record's attributes (no arguments: they may hold secrets)."""
    attributes: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": f"{event.upstream}__{event.tool}",
        "mcp.session.id": event.session_id,
        "harness.upstream": event.upstream,
        "harness.tool": event.tool,
        "harness.tier": event.tier,
        "harness.outcome": event.outcome,
        "harness.latency_ms": event.latency_ms,
        "harness.response_bytes": event.response_bytes,
    }
    optional = {
        "harness.name": event.harness,
        "harness.run_id": event.run_id,
        "harness.adapter": event.adapter,
        "harness.model": event.model,
        "harness.config_hash": event.config_hash,
        "harness.error_reason": event.error_reason,
    }
    attributes.update({key: value for key, value in optional.items() if value is not None})
    return attributes


class TelemetryExport:
    """Subscribed to ``tool_call.completed`` on the bus; exports from its own thread."""

    def __init__(self) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        # The exporters log every retry; the daemon says it once a minute instead (_note_failure).
        logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
        # An export (retries included) gives up after EXPORT_TIMEOUT_S unless the operator set
        # OTEL_EXPORTER_OTLP_TIMEOUT: a collector that is down must not hold up the daemon's stop.
        timeout = None if "OTEL_EXPORTER_OTLP_TIMEOUT" in os.environ else EXPORT_TIMEOUT_S
        self._spans = OTLPSpanExporter(timeout=timeout)
        self._logs = OTLPLogExporter(timeout=timeout)
        self._last_warning = float("-inf")
        self._reachable = True
        self._resource = Resource.create({"service.name": "harness-gateway", "service.version": __version__})
        self._scope = InstrumentationScope("harness.gateway", __version__)
        self._queue: deque[ToolCallCompleted] = deque()
        self.dropped = 0
        """Calls the collector did not take (counted on the worker thread)."""
        self.overflowed = 0
        """Calls not queued because the queue was full (counted on the loop)."""
        self.exported = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="telemetry-export", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        """The bus subscriber (any thread; never blocks)."""
        if not isinstance(event, ToolCallCompleted):
            return
        if len(self._queue) >= MAX_QUEUED:
            self.overflowed += 1  # its own counter: ``dropped`` is the worker's
            return
        self._queue.append(event)
        if len(self._queue) >= MAX_BATCH:
            self._wake.set()

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(FLUSH_INTERVAL_S)
            self._wake.clear()
            self.flush()

    def flush(self) -> None:
        """Export what is queued (on the worker thread, or at close)."""
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(MAX_BATCH, len(self._queue)))]
            try:
                contexts = [_span_context(e) for e in batch]
                spans = self._spans.export([self._span(e, c) for e, c in zip(batch, contexts, strict=True)])
                sent: str = spans.name
                if sent == "SUCCESS":  # no second wait on a collector that just failed
                    records = [self._log_record(e, c) for e, c in zip(batch, contexts, strict=True)]
                    sent = self._logs.export(records).name
            except Exception as exc:  # a collector's failure must never reach the calls
                self._note_failure(len(batch), repr(exc))
                continue
            if sent != "SUCCESS":
                self._note_failure(len(batch), "the collector refused it or was unreachable")
            else:
                self._reachable = True
                self.exported += len(batch)

    def _note_failure(self, calls: int, why: str) -> None:
        """Count calls not exported; say so at most once a minute (a collector may be down for hours)."""
        self.dropped += calls
        self._reachable = False
        now = time.monotonic()
        if now - self._last_warning >= WARN_INTERVAL_S:
            self._last_warning = now
            log.warning("telemetry export failed (%s); %d calls not exported so far", why, self.dropped)

    def _span(self, event: ToolCallCompleted, context: Any) -> Any:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanKind, Status, StatusCode

        start = int(event.ts * 1e9)
        ok = event.outcome == "ok"
        return ReadableSpan(
            name=f"tools/call {event.upstream}__{event.tool}",
            context=context,
            resource=self._resource,
            attributes=call_attributes(event),
            kind=SpanKind.SERVER,
            status=Status(StatusCode.UNSET if ok else StatusCode.ERROR, None if ok else event.outcome),
            start_time=start,
            end_time=start + int(event.latency_ms * 1e6),
            instrumentation_scope=self._scope,
        )

    def _log_record(self, event: ToolCallCompleted, context: Any) -> Any:
        from opentelemetry._logs import LogRecord, SeverityNumber
        from opentelemetry.sdk._logs import ReadableLogRecord
        from opentelemetry.trace import NonRecordingSpan, set_span_in_context

        ok = event.outcome == "ok"
        end = int((event.ts + event.latency_ms / 1000) * 1e9)
        record = LogRecord(
            timestamp=end,
            observed_timestamp=end,
            context=set_span_in_context(NonRecordingSpan(context)),
            severity_text="INFO" if ok else "WARN",
            severity_number=SeverityNumber.INFO if ok else SeverityNumber.WARN,
            body=(
                f"{event.harness or '(unattributed)'} {event.upstream}__{event.tool} {event.outcome} "
                f"{event.latency_ms:.1f} ms"
            ),
            attributes=call_attributes(event),
            event_name="harness.tool_call",
        )
        return ReadableLogRecord(record, self._resource, self._scope)

    def close(self) -> None:
        """Export what is left (unless the collector was unreachable just now: then it is counted as
        not exported) and stop the worker and the exporters."""
        self._stopping = True
        self._wake.set()
        self._thread.join(2 * EXPORT_TIMEOUT_S + 1)
        if self._reachable:
            self.flush()
        else:
            self._note_failure(len(self._queue), "the collector was unreachable at stop")
            self._queue.clear()
        self._spans.shutdown()  # type: ignore[no-untyped-call]
        self._logs.shutdown()  # type: ignore[no-untyped-call]


class TelemetrySwitch:
    """The daemon's export, on or off as ``export_telemetry`` says (at start and on each reload);
    the bus hands it every call event."""

    def __init__(self) -> None:
        self._export: TelemetryExport | None = None

    def __call__(self, event: Event) -> None:
        export = self._export
        if export is not None:
            export(event)

    async def apply(self, enabled: bool) -> None:
        """Start the export, or stop it."""
        if not enabled:
            await self.stop()
        elif self._export is None:
            self._export = TelemetryExport()

    async def stop(self) -> None:
        """Send what is queued and stop (off the loop: it may wait for the collector)."""
        export, self._export = self._export, None
        if export is not None:
            await asyncio.to_thread(export.close)
