"""Listener problems are said, never hidden (second trial N10): a taken ``listen`` or
``metrics_listen`` port stops the start with one line naming the setting and address; a reload that
cannot bind reports it and applies the rest; ``harness doctor`` checks that the endpoint answers."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest
from daemon_support import PY, running, toml_list, wait_until

from support import DEMO_UPSTREAM, clean_env, free_port


def _config(listen: str) -> str:
    return (
        f"[mcp]\n{listen}\n\n[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n"
        '[mcp_policy.p]\nservers = ["demo"]\n\n'
        '[harness.a]\nargv = ["sleep", "600"]\nmcp_policy = "p"\n'
    )


def _taken() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


@pytest.mark.parametrize("key", ["listen", "metrics_listen"])
def test_a_taken_port_stops_the_start_with_one_line_naming_the_setting_and_address(tmp_path, key):
    blocker, port = _taken()
    with blocker:
        config = tmp_path / "harness.toml"
        config.write_text(_config(f'{key} = "127.0.0.1:{port}"'))
        done = subprocess.run(
            [PY, "-m", "harness", "daemon", "--config", str(config), "--state-dir", str(tmp_path / "state")],
            capture_output=True,
            text=True,
            timeout=120,
            env=clean_env(),
        )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert f"harness daemon: [mcp] {key} 127.0.0.1:{port}: address already in use" in lines, done.stderr
    assert "ready" not in lines and "Traceback" not in done.stderr


def _doctor(daemon) -> dict[str, str]:
    done = daemon.harness_cli("doctor", "--json", check=False)
    return {f["text"]: f["status"] for f in json.loads(done.stdout)["findings"]}


@pytest.mark.slow  # a daemon, doctor twice and a reload: about 6 s
def test_doctor_checks_the_endpoint_and_a_reload_onto_a_taken_port_is_reported_and_applies_the_rest(tmp_path):
    port = free_port()
    with running(tmp_path, _config(f'listen = "127.0.0.1:{port}"')) as daemon:
        assert (
            _doctor(daemon)[f"[mcp] listen 127.0.0.1:{port}: answers (POST /mcp without a token: 401)"]
            == "ok"
        )

        blocker, taken = _taken()
        with blocker:
            text = _config(f'listen = "127.0.0.1:{taken}"') + '\n[harness.b]\nargv = ["sleep", "600"]\n'
            Path(daemon.config).write_text(text)
            done = daemon.harness_cli("reload", "--json", check=False)
            answer = json.loads(done.stdout)
            assert answer["failed"] == [f"[mcp] listen 127.0.0.1:{taken}: address already in use"]
            human = daemon.harness_cli("reload", check=False)
            assert human.returncode == 1
            assert f"failed: [mcp] listen 127.0.0.1:{taken}: address already in use" in human.stderr
            rows = wait_until(
                lambda: (r := json.loads(daemon.harness_cli("list", "--json").stdout)) and len(r) == 2 and r,
                timeout=30,
            )
            assert {r["name"] for r in rows} == {"a", "b"}  # the rest of the reload applied

            findings = _doctor(daemon)
            [problem] = [t for t, s in findings.items() if s == "problem" and "[mcp] listen" in t]
            assert problem.startswith(f"[mcp] listen 127.0.0.1:{taken}: ")
