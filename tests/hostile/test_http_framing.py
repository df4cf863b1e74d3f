"""Hostile HTTP framing on the loopback endpoint, from a local process with no token (second trial
N4, N3, N13): every request gets an HTTP answer or a close, never a traceback on the daemon's stderr;
a request head must arrive within 5 s; one process cannot hold every connection; the status page
and /metrics answer only their own loopback Host."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from daemon_support import PY, DaemonProcess, running, toml_list, wait_until

from devtools.http_fuzz import fuzz, post, send
from support import DEMO_UPSTREAM, INITIALIZE, free_port, holds_for

ROOT = Path(__file__).resolve().parents[2]


def _config(port: int, tmp_path: Path, metrics_port: int | None = None) -> str:
    metrics = f'metrics_listen = "127.0.0.1:{metrics_port}"\n' if metrics_port else ""
    dump = tmp_path / "a.env"
    return (
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n{metrics}\n[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n'
        f'[mcp_policy.p]\nservers = ["demo"]\n\n[harness.a]\nargv = {toml_list(_env_dumper(dump))}\n'
        'mcp_policy = "p"\n'
    )


def _env_dumper(out: Path) -> list[str]:
    code = (
        "import json,os,sys,time; open(sys.argv[1],'w').write(json.dumps(dict(os.environ))); time.sleep(600)"
    )
    return [PY, "-c", code, str(out)]


def _token(tmp_path: Path) -> str:
    dump = tmp_path / "a.env"
    wait_until(lambda: dump.exists() and dump.stat().st_size > 0, timeout=30)
    return json.loads(dump.read_text())["HARNESS_MCP_TOKEN"]


def _tracebacks(daemon: DaemonProcess) -> list[str]:
    return [line for line in daemon.stderr_lines if "Traceback" in line or "Unhandled exception" in line]


def test_a_content_length_of_non_ascii_digits_is_a_400_and_never_a_traceback(tmp_path):
    port = free_port()
    with running(tmp_path, _config(port, tmp_path)) as daemon:
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: ".encode()
        for digits in ("²".encode("latin-1"), "٣".encode(), b"0" * 5000 + b"1"):
            assert send(port, head + digits + b"\r\n\r\n{}") in (400, 413)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(head + "²".encode("latin-1") + b"\r\n\r\n")
            assert b"bad Content-Length" in sock.recv(4096)
        assert post(port, _token(tmp_path), INITIALIZE)["status"] == 200
        holds_for(lambda: _tracebacks(daemon) == [], 0.5, message="no traceback")


@pytest.mark.slow  # 3,000 requests on fresh connections: about 10 s
def test_3000_fuzzed_requests_each_get_an_http_answer_or_a_close_and_the_daemon_prints_no_traceback(tmp_path):
    port = free_port()
    with running(tmp_path, _config(port, tmp_path)) as daemon:
        token = _token(tmp_path)
        before = sum(map(len, daemon.stderr_lines))
        outcomes = fuzz(port, 3000, seed=7, token=token)
        assert sum(outcomes.values()) == 3000
        assert outcomes[-1] == 0 and outcomes[-2] == 0, outcomes  # no garbage, no hang, no refused connect
        assert all(status == 0 or 200 <= status < 600 for status in outcomes), outcomes
        assert post(port, token, INITIALIZE)["status"] == 200
        assert daemon.proc.poll() is None and _tracebacks(daemon) == []
        assert sum(map(len, daemon.stderr_lines)) - before < 10_000


def test_a_request_head_that_never_ends_is_answered_408_within_the_head_deadline(tmp_path):
    port = free_port()
    with running(tmp_path, _config(port, tmp_path)):
        with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
            started = time.monotonic()
            sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
            answer = sock.recv(4096)
            took = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408") and 4.0 < took < 10.0, (answer, took)


@pytest.mark.slow  # a few seconds of held connections
def test_one_process_cannot_hold_every_connection_its_extra_ones_get_503_and_another_client_gets_through(
    tmp_path,
):
    port = free_port()
    with running(tmp_path, _config(port, tmp_path)) as daemon:
        token = _token(tmp_path)
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
        held = []
        for _ in range(16):  # the per-process cap
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(head)
            held.append(sock)
        try:
            extra = socket.create_connection(("127.0.0.1", port), timeout=10)
            with extra:
                answer = extra.recv(4096)
            assert answer.startswith(b"HTTP/1.1 503"), answer
            assert b"already has 16 connections open" in answer
            # A client in another process still gets through at once.
            code = (
                "import sys, time; from devtools.http_fuzz import post; "
                "t = time.monotonic(); r = post(int(sys.argv[1]), sys.argv[2], "
                f"{INITIALIZE!r}); print(r['status'], time.monotonic() - t)"
            )
            done = subprocess.run(
                [PY, "-c", code, str(port), token], capture_output=True, text=True, timeout=30, cwd=ROOT
            )
            status, took = done.stdout.split()
            assert status == "200" and float(took) < 1.0, done
        finally:
            for sock in held:
                sock.close()
        wait_until(
            lambda: any("refusing an HTTP connection" in line for line in daemon.stderr_lines), timeout=30
        )
        assert sum("refusing an HTTP connection" in line for line in daemon.stderr_lines) == 1  # rate-limited


def test_the_status_page_and_metrics_answer_421_to_a_foreign_host(tmp_path):
    port, metrics = free_port(), free_port()
    with running(tmp_path, _config(port, tmp_path, metrics)):
        for path in ("/", "/metrics", "/healthz"):
            url = f"http://127.0.0.1:{metrics}{path}"
            foreign = urllib.request.Request(url, headers={"Host": f"evil.example:{metrics}"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(foreign, timeout=10)
            assert refused.value.code == 421
            refused.value.close()
            for host in (f"127.0.0.1:{metrics}", f"localhost:{metrics}"):
                own = urllib.request.Request(url, headers={"Host": host})
                with urllib.request.urlopen(own, timeout=10) as response:
                    assert response.status == 200
