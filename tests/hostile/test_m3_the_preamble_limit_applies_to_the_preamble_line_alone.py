"""m3: the daemon's first read may hold the preamble and the start of a long message; the 4096-byte
preamble limit applies to the preamble line alone (the trial's 200 KB ``initialize`` sent at once
failed 1 time in 4 with "a message longer than 4096 bytes"). In-memory cases:
tests/unit/gateway/test_bridge_connection.py."""

from __future__ import annotations

import json

from daemon_support import faulty, running, toml_list
from raw_socket import raw_exchange

PREAMBLE = b'{"harness_bridge": 1, "kind": "mcp", "token": ""}\n'


def _big_initialize() -> bytes:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "padding": "x" * 200_000}
    return json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode() + b"\n"


def test_a_200_kb_initialize_sent_in_the_same_write_as_the_preamble_is_answered(tmp_path):
    with running(tmp_path, f"[mcp.up]\nargv = {toml_list(faulty())}\n") as daemon:
        for _ in range(4):  # the trial saw 1 failure in 4
            answer = raw_exchange(str(daemon.state / "harness.sock"), PREAMBLE + _big_initialize())
            assert json.loads(answer)["result"]["protocolVersion"] == "2025-11-25"
