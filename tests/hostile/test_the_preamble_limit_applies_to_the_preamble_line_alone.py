"""m3: the daemon's first read may hold the preamble and the start of a long message; the 4096-byte
preamble limit applies to the preamble line alone (the trial's 200 KB ``initialize`` sent at once
failed 1 time in 4 with "a message longer than 4096 bytes"). In-memory cases:
tests/unit/gateway/test_bridge_connection.py."""

from __future__ import annotations

import json
import select
import socket

from daemon_support import faulty, running, toml_list
from raw_socket import raw_exchange

PREAMBLE = b'{"harness_bridge": 1, "kind": "mcp", "token": ""}\n'


def _big_initialize() -> bytes:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "padding": "x" * 200_000}
    return json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode() + b"\n"


def test_a_200_kb_initialize_sent_in_the_same_write_as_the_preamble_is_answered(tmp_path):
    with running(tmp_path, f"[mcp.up]\nargv = {toml_list(faulty())}\n") as daemon:
        answer = raw_exchange(str(daemon.state / "harness.sock"), PREAMBLE + _big_initialize())
        assert json.loads(answer)["result"]["protocolVersion"] == "2025-11-25"


def test_a_first_read_that_ends_inside_a_long_message_does_not_trip_the_preamble_limit(tmp_path):
    message = _big_initialize()
    with (
        running(tmp_path, f"[mcp.up]\nargv = {toml_list(faulty())}\n") as daemon,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock,
    ):
        sock.settimeout(10)
        sock.connect(str(daemon.state / "harness.sock"))
        sock.sendall(PREAMBLE + message[:10_000])  # the daemon's first read: preamble + a partial line
        refused, _, _ = select.select([sock], [], [], 0.5)  # the old daemon refused it at once
        assert not refused, sock.recv(4096)
        sock.sendall(message[10_000:])
        answer = b""
        while not answer.endswith(b"\n"):
            answer += sock.recv(65536)
        assert json.loads(answer)["result"]["protocolVersion"] == "2025-11-25"
