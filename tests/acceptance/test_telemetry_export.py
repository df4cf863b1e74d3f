"""OTLP export (issue 10): with ``export_telemetry = true`` an in-process OTLP/HTTP collector
receives one span and one log record per call, each with the run's trace id and the call's span id
as the call log holds them, and never the call's arguments."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from support import DEMO_UPSTREAM, free_port, probe_argv, steps, toml_list, wait_until

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # a daemon, an agent, a 1 s export interval

SECRET_TEXT = "argument-text-that-must-not-leave-4417"


class Collector(ThreadingHTTPServer):
    """Accepts OTLP/HTTP protobuf exports and keeps what arrived."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Receive)
        self.spans: list = []
        self.logs: list = []
        self.raw = b""
        self.lock = threading.Lock()


class _Receive(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.raw += body
            if self.path == "/v1/traces":
                request, answer = ExportTraceServiceRequest(), ExportTraceServiceResponse()
                request.ParseFromString(body)
                self.server.spans += [
                    s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans
                ]
            elif self.path == "/v1/logs":
                request, answer = ExportLogsServiceRequest(), ExportLogsServiceResponse()
                request.ParseFromString(body)
                self.server.logs += [
                    x for r in request.resource_logs for sl in r.scope_logs for x in sl.log_records
                ]
            else:
                self.send_error(404)
                return
        data = answer.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _daemon_exporting_to(start_daemon, tmp_path, port: int, *calls: dict):
    """A daemon with ``export_telemetry`` on, sending to ``127.0.0.1:port``, whose agent makes
    ``calls`` (probe-agent steps) and then touches ``done``; returned once the agent is done."""
    done = tmp_path / "done"
    plan = steps(*calls, {"op": "touch", "path": str(done)})
    daemon = start_daemon(
        "[mcp]\nexport_telemetry = true\n\n"
        f"[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        f"[harness.agent]\nargv = {toml_list(probe_argv(tmp_path / 'agent.json', '--steps', plan))}\n"
        'mcp_policy = "p"\n',
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
    )
    wait_until(done.exists, timeout=60, message="the agent's calls")
    return daemon


def test_each_call_is_one_span_and_one_log_record_with_the_runs_trace_id(start_daemon, collector, tmp_path):
    echo = {"op": "call", "name": "demo__echo", "arguments": {"text": SECRET_TEXT}}
    nope = {"op": "call", "name": "demo__nope"}
    daemon = _daemon_exporting_to(start_daemon, tmp_path, collector.server_port, echo, echo, echo, nope)
    rows = wait_until(lambda: len(daemon.calls()) == 4 and daemon.calls(), timeout=10)
    wait_until(lambda: len(collector.spans) >= 4 and len(collector.logs) >= 4, timeout=10, message="4 spans")
    assert len(collector.spans) == 4 and len(collector.logs) == 4
    ids = {(r["trace_id"], r["span_id"]) for r in rows}
    assert len({trace for trace, _ in ids}) == 1  # one run, one trace
    assert {(s.trace_id.hex(), s.span_id.hex()) for s in collector.spans} == ids
    assert {(x.trace_id.hex(), x.span_id.hex()) for x in collector.logs} == ids
    outcomes = sorted(
        a.value.string_value for s in collector.spans for a in s.attributes if a.key == "harness.outcome"
    )
    assert outcomes == sorted(r["outcome"] for r in rows)
    assert all(s.end_time_unix_nano >= s.start_time_unix_nano > 0 for s in collector.spans)
    assert SECRET_TEXT.encode() not in collector.raw


def test_a_collector_that_is_down_costs_the_calls_nothing_one_warning_line_and_a_prompt_stop(
    start_daemon, tmp_path
):
    echo = {"op": "call", "name": "demo__echo", "arguments": {"text": "x"}}
    repeat = {"op": "repeat", "times": 50, "step": echo}
    daemon = _daemon_exporting_to(start_daemon, tmp_path, free_port(), repeat)  # nobody listens there
    assert [r["outcome"] for r in daemon.calls()] == ["ok"] * 50
    wait_until(lambda: any("telemetry export failed" in line for line in daemon.stderr_lines), timeout=10)
    started = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - started < 5.0
    failures = [
        line for line in daemon.stderr_lines if "telemetry" in line or "opentelemetry" in line.lower()
    ]
    # How many calls the one line counts depends on when the worker's first batch was cut (30 of 50
    # in one run): the warning is said once a minute, so later failures are counted, not said.
    assert len(failures) == 1 and re.search(r"\b([1-9]|[1-4][0-9]|50) calls not exported", failures[0]), (
        failures
    )
    assert not any("Transient error" in line for line in daemon.stderr_lines)
