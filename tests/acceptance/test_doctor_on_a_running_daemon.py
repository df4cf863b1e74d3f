"""`harness doctor` against a real running daemon: upstream states and breakers from `status`, the
shared upstreams, the socket and the metrics listener, and exit 1 naming an upstream that is down."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support import free_port

pytestmark = pytest.mark.acceptance

PY = sys.executable
FAULTY = str(Path(__file__).parents[1] / "fixtures" / "faulty_upstream.py")


def config(port: int, *, broken: bool = False) -> str:
    text = f"""
[mcp]
metrics_listen = "127.0.0.1:{port}"

[mcp.tools]
argv = [{json.dumps(PY)}, {json.dumps(FAULTY)}]

[mcp_policy.all]
servers = ["tools"]

[harness.idle]
argv = [{json.dumps(PY)}, "-c", "import time; time.sleep(3600)"]
mcp_policy = "all"
"""
    if broken:
        text += '\n[mcp.gone]\nargv = ["/nonexistent/mcp-server"]\n'
    return text


@pytest.mark.slow
def test_doctor_on_a_healthy_running_daemon_reports_it_and_exits_0(start_daemon):
    port = free_port()
    daemon = start_daemon(config(port))
    done = daemon.harness_cli("doctor", "--json", check=False)
    assert done.returncode == 0, done.stdout
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["daemon"]["pid"] == daemon.proc.pid
    texts = {f["text"]: f["status"] for f in report["findings"]}
    [upstream] = [t for t in texts if t.startswith("upstream tools: ")]
    assert upstream.startswith("upstream tools: up, breaker closed, ") and texts[upstream] == "ok"
    assert texts["harness idle: running"] == "ok"
    assert texts[f"control socket {daemon.state / 'harness.sock'} accepts connections"] == "ok"
    assert texts[f"[mcp] metrics_listen 127.0.0.1:{port}: accepts (/metrics)"] == "ok"
    assert report["shared_upstreams"] == [{"upstream": "tools", "project": None, "reached_by": ["idle"]}]
    human = daemon.harness_cli("doctor")
    assert "no problems found" in human.stdout and "running: pid" in human.stdout


@pytest.mark.slow
def test_doctor_exits_1_naming_an_upstream_that_is_not_up(start_daemon):
    daemon = start_daemon(config(free_port(), broken=True))
    done = daemon.harness_cli("doctor", "--json", check=False)
    assert done.returncode == 1, done.stdout
    report = json.loads(done.stdout)
    down, missing = report["problems"]
    assert down.startswith("upstream gone: ") and "breaker" in down
    assert "mcp.gone.argv: argv[0] '/nonexistent/mcp-server' is not an executable" in missing
    human = daemon.harness_cli("doctor", check=False)
    assert human.returncode == 1 and f"2 problems:\n  - {down}\n  - {missing}" in human.stdout
