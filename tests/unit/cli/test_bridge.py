"""`harness mcp`, the stdio bridge, in this process against a stand-in daemon socket: where it
connects, its preamble, bytes relayed unchanged both ways, and a refusal kept off the agent's stdout."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import bridge
from harness.gateway.downstream.agent_pipes import received_fds

WAIT = 10.0


def test_the_socket_is_harness_socket_else_the_state_dirs_else_the_xdg_default(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_SOCKET", "/run/explicit.sock")
    assert bridge._socket_path("/state") == "/run/explicit.sock"
    monkeypatch.delenv("HARNESS_SOCKET")
    assert bridge._socket_path("/state") == "/state/harness.sock"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert bridge._socket_path(None) == str(tmp_path / "harness" / "harness.sock")


def test_without_a_daemon_the_bridge_says_so_on_one_stderr_line_and_exits_1(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HARNESS_SOCKET", str(tmp_path / "nothing.sock"))
    with warnings.catch_warnings():
        # bridge.run() does not close its socket when connect() fails (harmless in a process that
        # exits at once; a ResourceWarning in this one)
        warnings.simplefilter("ignore", ResourceWarning)
        assert bridge.run() == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "no Harness daemon is listening at" in err


@contextlib.contextmanager
def stand_in_daemon(
    path: Path, serve: Callable[[socket.socket, Any], None], connections: int = 1
) -> Iterator[dict[str, Any]]:
    """A unix socket at ``path`` serving ``connections`` connections in turn on a thread:
    ``serve(conn, reader)`` after each preamble line (kept in the yielded dict, the last under
    ``preamble``, all under ``preambles``). ``reader`` is None for a ``serve`` marked ``raw``, which
    reads the socket itself (a buffered reader could swallow passed descriptors)."""
    seen: dict[str, Any] = {"preambles": []}
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(WAIT)

    def run() -> None:
        for _ in range(connections):
            conn, _ = server.accept()
            with conn:
                conn.settimeout(WAIT)
                line = b""
                while not line.endswith(b"\n"):
                    line += conn.recv(1)
                seen["preamble"] = json.loads(line)
                seen["preambles"].append(seen["preamble"])
                if getattr(serve, "raw", False):
                    serve(conn, None)
                    continue
                with conn.makefile("rb") as reader:
                    serve(conn, reader)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        thread.join(WAIT)
        server.close()
        assert not thread.is_alive()


def run_bridge(monkeypatch, stdin_bytes: bytes) -> tuple[int, bytes]:
    """``bridge.run()`` on a thread with pipes for stdin and stdout; its exit code and what it wrote."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, stdin_bytes)
    os.close(in_w)
    result: dict[str, int] = {}
    with open(in_r) as stdin, open(out_w, "w") as stdout:
        monkeypatch.setattr("sys.stdin", stdin)
        monkeypatch.setattr("sys.stdout", stdout)
        thread = threading.Thread(target=lambda: result.setdefault("code", bridge.run()), daemon=True)
        thread.start()
        thread.join(WAIT)
        assert not thread.is_alive(), "the bridge did not finish"
    with open(out_r, "rb") as written:
        return result["code"], written.read()


def test_the_bridge_sends_its_preamble_and_relays_lines_both_ways_unchanged(monkeypatch, tmp_path):
    request = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'

    def serve(conn: socket.socket, reader: Any) -> None:
        conn.sendall(b'{"harness_fds":"copy"}\n')  # a daemon that declines the descriptors
        seen_line = reader.readline()
        conn.sendall(answer)
        assert reader.read() == b""  # the bridge closed its side after stdin ended
        assert seen_line == request

    sock = tmp_path / "d.sock"
    monkeypatch.setenv("HARNESS_SOCKET", str(sock))
    monkeypatch.setenv("HARNESS_MCP_TOKEN", "the-token")
    with stand_in_daemon(sock, serve) as seen:
        code, written = run_bridge(monkeypatch, request)
    assert seen["preamble"] == {"harness_bridge": 2, "kind": "mcp", "token": "the-token", "fds": True}
    assert (code, written) == (0, answer)


REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def test_a_daemon_that_takes_the_descriptors_serves_the_agents_pipes_itself(monkeypatch, tmp_path):
    def serve(conn: socket.socket, _reader: Any) -> None:
        conn.sendall(b'{"harness_fds":"send"}\n')
        data, fds = received_fds(conn)
        assert data == b"F" and len(fds) == 2
        stdin, stdout = fds
        with open(stdin, "rb", buffering=0) as agent_in, open(stdout, "wb", buffering=0) as agent_out:
            assert agent_in.readline() == REQUEST  # read from the agent's own stdin
            agent_out.write(ANSWER)
            assert agent_in.read() == b""  # the agent closed it: the session is over
        conn.sendall(b'{"harness_exit":0}\n')

    serve.raw = True  # type: ignore[attr-defined]
    sock = tmp_path / "d.sock"
    monkeypatch.setenv("HARNESS_SOCKET", str(sock))
    with stand_in_daemon(sock, serve):
        code, written = run_bridge(monkeypatch, REQUEST)
    assert (code, written) == (0, ANSWER)


def test_with_copying_asked_or_a_protocol_1_daemon_the_bridge_copies(monkeypatch, tmp_path):
    def serve(conn: socket.socket, reader: Any) -> None:
        if seen["preamble"]["harness_bridge"] == 2:  # an older daemon
            conn.sendall(b'{"harness_error": "bridge protocol 2 is not supported (the daemon speaks [1])"}\n')
            return
        assert reader.readline() == REQUEST
        conn.sendall(ANSWER)
        assert reader.read() == b""  # as the daemon does: the session ends with the bridge's EOF

    sock = tmp_path / "d.sock"
    monkeypatch.setenv("HARNESS_SOCKET", str(sock))
    monkeypatch.setenv(bridge.COPY_ENV, "1")
    with stand_in_daemon(sock, serve, connections=2) as seen:
        code, written = run_bridge(monkeypatch, REQUEST)
    assert [p["harness_bridge"] for p in seen["preambles"]] == [2, 1]
    assert seen["preambles"][0]["fds"] is False  # HARNESS_BRIDGE_COPY=1: no offer
    assert (code, written) == (0, ANSWER)


def test_a_refusal_goes_to_stderr_never_to_the_agents_stdout_and_exits_1(monkeypatch, tmp_path, capsys):
    def serve(conn: socket.socket, reader: Any) -> None:
        conn.sendall(b'{"harness_error": "the socket is full"}\n')

    sock = tmp_path / "d.sock"
    monkeypatch.setenv("HARNESS_SOCKET", str(sock))
    with stand_in_daemon(sock, serve):
        code, written = run_bridge(monkeypatch, b"")
    assert (code, written) == (1, b"")
    assert "the daemon refused the session: the socket is full" in capsys.readouterr().err


@pytest.mark.parametrize("first", [b'{"harness_error": "x"}\n', b"not json at all\n"])
def test_a_first_line_is_read_as_a_refusal_only_when_it_is_one(first):
    assert bridge._refusal(first) == ("x" if first.startswith(b"{") else "not json at all")
