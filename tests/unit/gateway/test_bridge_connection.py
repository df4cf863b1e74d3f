"""A control-socket connection in memory: the preamble (its limit applies to its own line, m3; its
parsing, m4), the preamble deadline (M6), sessions and control requests."""

from __future__ import annotations

import asyncio
import json

import pytest
from connection_support import FakeDoor, FakeTransport, connect, run

from harness.gateway.downstream.connection import PreambleError, parse_preamble
from harness.gateway.wire import jsonrpc

PREAMBLE = b'{"harness_bridge": 1, "kind": "mcp", "token": ""}\n'


def _big_initialize() -> bytes:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "padding": "x" * 200_000}
    return json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode() + b"\n"


def test_a_first_read_with_the_preamble_and_part_of_a_200_kb_message_opens_the_session():
    async def scenario() -> tuple[FakeDoor, bytes]:
        door = FakeDoor()
        connection, transport = connect(door)
        message = _big_initialize()
        connection.data_received(PREAMBLE + message[:10_000])  # one read: preamble + a partial line
        connection.data_received(message[10_000:])
        return door, transport.written

    door, written = run(scenario())
    assert b"harness_error" not in written
    assert len(door.sessions) == 1
    assert [m["method"] for m in door.messages] == ["initialize"]
    assert json.loads(written.splitlines()[0])["result"]["protocolVersion"] == "2025-11-25"


def test_the_preamble_and_a_whole_message_in_one_read_are_both_handled():
    async def scenario() -> FakeDoor:
        door = FakeDoor()
        connection, _ = connect(door)
        connection.data_received(PREAMBLE + _big_initialize())
        return door

    assert [m["method"] for m in run(scenario()).messages] == ["initialize"]


def test_a_preamble_split_over_many_reads_is_still_one_preamble():
    async def scenario() -> FakeDoor:
        door = FakeDoor()
        connection, _ = connect(door)
        for byte in PREAMBLE:
            connection.data_received(bytes([byte]))
        connection.data_received(_big_initialize())
        return door

    door = run(scenario())
    assert len(door.sessions) == 1 and len(door.messages) == 1


def test_a_preamble_line_itself_longer_than_4096_bytes_is_refused():
    async def scenario() -> tuple[FakeDoor, bytes, bool]:
        door = FakeDoor()
        connection, transport = connect(door)
        connection.data_received(b'{"harness_bridge": 1, "pad": "' + b"x" * 5000)
        return door, transport.written, transport.is_closing()

    door, written, closing = run(scenario())
    assert json.loads(written)["harness_error"] == "a preamble longer than 4096 bytes"
    assert closing and door.sessions == []


def test_a_message_past_the_16_mib_limit_is_answered_as_invalid_and_the_session_goes_on():
    async def scenario() -> tuple[FakeDoor, FakeTransport]:
        door = FakeDoor()
        connection, transport = connect(door)
        connection.data_received(PREAMBLE + b"x" * ((16 << 20) + 1))
        connection.data_received(b"y" * (1 << 20) + b'"}\n' + _big_initialize())
        return door, transport

    door, transport = run(scenario())
    refusal, answer = transport.lines()
    assert refusal["id"] is None and refusal["error"]["code"] == -32600
    assert "longer than 16777216 bytes" in refusal["error"]["message"]
    assert answer["result"]["protocolVersion"] == "2025-11-25" and not transport.is_closing()
    assert [m["method"] for m in door.messages] == ["initialize"]


def test_a_line_past_the_limit_is_reported_once_and_never_buffered_whole():
    lines = jsonrpc.LineBuffer(10)
    assert lines.feed(b"12345678901") == [None]
    assert lines.feed(b"x" * 1000) == ()
    assert lines.feed(b'x\n{"a":1}\n0123456789012\n{') == [b'{"a":1}', None]
    assert lines.feed(b"}\n") == [b"{}"]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'{"harness_bridge": [1]}', "must be an integer"),
        (b'{"harness_bridge": {"v": 1}}', "must be an integer"),
        (b'{"harness_bridge": 1.0}', "must be an integer"),
        (b'{"harness_bridge": true}', "must be an integer"),
        (b'{"harness_bridge": "1"}', "must be an integer"),
        (b'{"harness_bridge": 3}', "bridge protocol 3 is not supported"),
        (b'{"harness_bridge": 2, "fds": "yes"}', "fds must be true or false"),
        (b'{"harness_bridge": 1, "kind": "weird"}', 'kind must be "mcp" or "control"'),
        (b'{"harness_bridge": 1, "kind": ["mcp"]}', 'kind must be "mcp" or "control"'),
        (b'{"harness_bridge": 1, "token": 7}', "token must be a string"),
        (b'{"harness_bridge": 1, "kind": "control"}', "needs a command"),
        (
            b'{"harness_bridge": 1, "kind": "control", "command": "list", "args": []}',
            "args must be an object",
        ),
        (b"[1]", "must be the bridge preamble"),
        (b'"harness_bridge"', "must be the bridge preamble"),
        (b"hello", "must be the bridge preamble"),
        (b"[" * 100_000, "must be the bridge preamble"),
    ],
)
def test_a_bad_preamble_is_refused_with_what_is_wrong(line, says):
    with pytest.raises(PreambleError, match=says):
        parse_preamble(line)


def test_a_good_preamble_reads_as_its_parts():
    pre = parse_preamble(b'{"harness_bridge": 1, "kind": "control", "command": "list", "token": "t"}')
    assert (pre.version, pre.kind, pre.command, pre.args, pre.token) == (1, "control", "list", {}, "t")
    assert parse_preamble(b'{"harness_bridge": 1}').kind == "mcp"  # kind defaults to mcp
    assert parse_preamble(b'{"harness_bridge": 1, "token": ""}').token is None


def test_a_protocol_2_bridge_that_offers_no_descriptors_is_told_to_copy_first():
    assert parse_preamble(b'{"harness_bridge": 2, "fds": true}').fds is True
    assert parse_preamble(b'{"harness_bridge": 1, "fds": true}').fds is False  # protocol 1 never passes

    async def scenario() -> tuple[FakeDoor, bytes]:
        door = FakeDoor()
        connection, transport = connect(door)
        connection.data_received(b'{"harness_bridge": 2, "fds": false}\n' + _big_initialize())
        return door, transport.written

    door, written = run(scenario())
    assert written.startswith(b'{"harness_fds":"copy"}\n')  # before any answer of the session's
    assert [m["method"] for m in door.messages] == ["initialize"]


@pytest.mark.parametrize("line", [b'{"harness_bridge": [1]}\n', b'{"harness_bridge": 1, "kind": "weird"}\n'])
def test_a_bad_preamble_gets_one_error_line_and_the_connection_closes(line):
    async def scenario() -> tuple[FakeDoor, bytes, bool]:
        door = FakeDoor()
        connection, transport = connect(door)
        connection.data_received(line)
        return door, transport.written, transport.is_closing()

    door, written, closing = run(scenario())
    assert set(json.loads(written)) == {"harness_error"}
    assert closing and door.sessions == [] and door.requests == []
    assert [reason for reason, _ in door.refusals] == ["preamble"]


def test_a_connection_without_a_preamble_line_is_closed_at_the_deadline():
    async def scenario() -> tuple[FakeDoor, bytes, int]:
        door = FakeDoor(preamble_timeout=0.05)
        connection, transport = connect(door)
        connection.data_received(b"hello")  # no newline, ever
        await transport.closed.wait()
        connection.connection_lost(None)
        return door, transport.written, door.released

    door, written, released = run(scenario(), timeout=5)
    assert json.loads(written) == {"harness_error": "no preamble line within 0.05s"}
    assert [reason for reason, _ in door.refusals] == ["preamble timeout"]
    assert released == 1


def test_a_connection_that_sent_its_preamble_in_time_is_not_closed_by_the_deadline():
    async def scenario() -> bool:
        door = FakeDoor(preamble_timeout=0.01)
        connection, transport = connect(door)
        connection.data_received(PREAMBLE)
        await asyncio.sleep(0.05)  # past the deadline: the timer must have been cancelled
        return transport.is_closing()

    assert run(scenario()) is False


def test_a_refused_connection_gets_the_reason_and_is_never_counted():
    async def scenario() -> tuple[bytes, int]:
        door = FakeDoor(refuse="the control socket is full (64 connections); try again later")
        connection, transport = connect(door)
        connection.connection_lost(None)
        return transport.written, door.released

    written, released = run(scenario())
    assert json.loads(written) == {
        "harness_error": "the control socket is full (64 connections); try again later"
    }
    assert released == 0


def test_a_control_request_is_answered_once_with_its_token_and_the_connection_closed():
    async def scenario() -> tuple[FakeDoor, FakeTransport]:
        door = FakeDoor()
        connection, transport = connect(door)
        connection.data_received(
            b'{"harness_bridge": 1, "kind": "control", "command": "status", "token": "tk"}\n'
        )
        await transport.closed.wait()
        return door, transport

    door, transport = run(scenario())
    assert door.requests == [("status", {}, "tk")]
    assert transport.lines() == [{"ok": True, "result": {"echo": "status"}}]
