"""The metrics listener over a real loopback socket: the exposition format the scraper asks for, the
process's own series, and ``/healthz`` behind the same ``Host`` check as every other path."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from harness.gateway.evidence.metrics import MetricsListener
from support import free_port


@pytest.fixture
def port() -> Iterator[int]:
    listener = MetricsListener()
    chosen = free_port()
    listener.serve(("127.0.0.1", chosen))
    try:
        yield chosen
    finally:
        listener.close()


def _get(port: int, path: str, **headers: str) -> tuple[int, str, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, refused.headers["Content-Type"], refused.read().decode()


def test_metrics_answer_the_prometheus_text_format_when_the_scraper_asks_for_nothing_else(port):
    status, content_type, body = _get(port, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=")
    assert "harness_mcp_calls" in {f.name for f in text_string_to_metric_families(body)}


def test_metrics_answer_openmetrics_when_the_scraper_asks_for_it(port):
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    status, content_type, body = _get(port, "/metrics", Accept=accept)
    assert status == 200
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert body.endswith("# EOF\n")
    assert "harness_mcp_calls" in {f.name for f in openmetrics_families(body)}  # raises on invalid text


def test_metrics_carry_the_process_and_platform_series(port):
    _, _, body = _get(port, "/metrics")
    names = {f.name for f in text_string_to_metric_families(body)}
    assert {
        "process_cpu_seconds",
        "process_resident_memory_bytes",
        "process_open_fds",
        "python_info",
    } <= names


def test_healthz_answers_ok_while_the_listener_runs(port):
    assert _get(port, "/healthz") == (200, "text/plain; charset=utf-8", "ok\n")


def test_healthz_answers_421_to_a_foreign_host_like_every_other_path(port):
    status, _, body = _get(port, "/healthz", Host=f"evil.example:{port}")
    assert status == 421
    assert "DNS rebinding" in body
