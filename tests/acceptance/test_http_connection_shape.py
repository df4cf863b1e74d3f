"""The HTTP endpoint's connection, byte for byte, through a real daemon and a raw socket: a request
is answered however its bytes are split, a request pipelined behind a call in flight is answered
after it, a batch whose answers come apart is one JSON array, and a 2026-07-28 client that closes its
connection during a call gets the call cancelled."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from support import DEMO_UPSTREAM, INITIALIZE, free_port, idle_harnesses, toml_list, wait_until

pytestmark = pytest.mark.acceptance

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _daemon(start_daemon) -> tuple[int, str, object]:
    port = free_port()
    daemon = start_daemon(
        f'[mcp]\nlisten = "127.0.0.1:{port}"\n\n[mcp.demo]\nargv = {toml_list(DEMO_UPSTREAM)}\n\n'
        '[mcp_policy.p]\nservers = ["demo"]\n\n' + idle_harnesses({"a": "p"})
    )
    return port, daemon.harness_envs()["a"]["HARNESS_MCP_TOKEN"], daemon


def _call(port: int, token: str, request_id: int, tool: str, arguments: dict) -> bytes:
    """A 2026-07-28 ``tools/call`` POST, whole."""
    name = f"demo__{tool}"
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": ENVELOPE},
        }
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _post(port: int, token: str, body: object, session: str | None = None) -> bytes:
    """A handshake-era POST, whole."""
    data = json.dumps(body).encode()
    extra = f"Mcp-Session-Id: {session}\r\n" if session else ""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


class _Responses:
    """HTTP/1.1 responses with ``Content-Length`` read off one socket, in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""
        self.headers: dict[str, str] = {}
        """The last response's headers, by lower-case name."""

    def _more(self) -> None:
        data = self.sock.recv(65536)
        assert data, "the endpoint closed the connection"
        self.buffer += data

    def next(self) -> tuple[int, Any]:
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        self.headers = headers
        return int(lines[0].split()[1]), json.loads(body)


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _text(answer: dict) -> str:
    return str(answer["result"]["content"][0]["text"])


@pytest.mark.slow
def test_a_request_sent_in_one_segment_or_byte_by_byte_is_answered_alike(start_daemon):
    port, token, _ = _daemon(start_daemon)
    with _connect(port) as sock:
        responses = _Responses(sock)
        sock.sendall(_call(port, token, 1, "echo", {"text": "whole"}))
        status, answer = responses.next()
        assert (status, answer["id"], _text(answer)) == (200, 1, "whole")
        for byte in _call(port, token, 2, "echo", {"text": "in pieces"}):  # one send a byte
            sock.send(bytes([byte]))
        status, answer = responses.next()
        assert (status, answer["id"], _text(answer)) == (200, 2, "in pieces")


@pytest.mark.slow
def test_a_request_pipelined_behind_a_call_in_flight_is_answered_after_it(start_daemon):
    """A client may send its next request before the answer to the one in flight: the endpoint
    answers both, in order, on the same connection (reading the next one is not the client going
    away)."""
    port, token, _ = _daemon(start_daemon)
    with _connect(port) as sock:
        responses = _Responses(sock)
        sock.sendall(
            _call(port, token, 1, "sleep", {"ms": 300}) + _call(port, token, 2, "echo", {"text": "next"})
        )
        first, second = responses.next(), responses.next()
        assert (first[0], first[1]["id"]) == (200, 1)
        assert (second[0], second[1]["id"], _text(second[1])) == (200, 2, "next")


@pytest.mark.slow
def test_a_batch_whose_answers_come_apart_is_answered_with_one_json_array_of_both(start_daemon):
    port, token, _ = _daemon(start_daemon)
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-03-26"}}
    with _connect(port) as sock:
        responses = _Responses(sock)
        sock.sendall(_post(port, token, initialize))
        assert responses.next()[0] == 200
        session = responses.headers["mcp-session-id"]
        calls = [
            {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}}
            for n, name, args in [(1, "demo__sleep", {"ms": 300}), (2, "demo__echo", {"text": "soon"})]
        ]
        sock.sendall(_post(port, token, calls, session))
        status, answers = responses.next()
        assert status == 200 and sorted(answer["id"] for answer in answers) == [1, 2]


@pytest.mark.slow
def test_a_2026_client_that_closes_its_connection_during_a_call_gets_the_upstream_call_cancelled(
    start_daemon,
):
    port, token, daemon = _daemon(start_daemon)

    def in_flight() -> int:
        return int(
            json.loads(daemon.harness_cli("status", "--json").stdout)["upstreams"]["demo"]["in_flight"]
        )

    with _connect(port) as sock:
        sock.sendall(_call(port, token, 1, "sleep", {"ms": 20000}))
        wait_until(lambda: in_flight() == 1, timeout=15)
    rows = wait_until(lambda: [r for r in daemon.calls() if r["tool"] == "sleep"], timeout=15)
    assert [r["outcome"] for r in rows] == ["cancelled"] and in_flight() == 0
