"""m4: preamble parsing. ``{"harness_bridge": [1]}`` raised an unhandled TypeError (bare EOF for the
client, a traceback for the daemon); ``1.0`` and ``true`` were accepted as version 1; an unknown
``kind`` was treated as ``mcp``. In-memory cases: tests/unit/gateway/test_bridge_connection.py."""

from __future__ import annotations

import json

from daemon_support import faulty, running, toml_list, wait_until
from raw_socket import raw_exchange


def test_each_bad_preamble_gets_an_error_line_and_the_daemon_logs_no_traceback(tmp_path):
    bad = [
        b'{"harness_bridge": [1]}\n',
        b'{"harness_bridge": 1.0, "kind": "control", "command": "list"}\n',
        b'{"harness_bridge": true, "kind": "control", "command": "list"}\n',
        b'{"harness_bridge": 1, "kind": "weird", "command": "list"}\n',
    ]
    with running(tmp_path, f"[mcp.up]\nargv = {toml_list(faulty())}\n") as daemon:
        sock = str(daemon.state / "harness.sock")
        answers = [json.loads(raw_exchange(sock, line) or b"null") for line in bad]
        assert all(isinstance(a, dict) and set(a) == {"harness_error"} for a in answers), answers
        good = json.loads(
            raw_exchange(sock, b'{"harness_bridge": 1, "kind": "control", "command": "list"}\n')
        )
        assert good["ok"] is True
        wait_until(
            lambda: (
                sum("harness_bridge" in line or "kind must be" in line for line in daemon.stderr_lines) >= 1
            ),
            5,
        )
    assert not any("Traceback" in line for line in daemon.stderr_lines)
