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
def stand_in_daemon(path: Path, serve: Callable[[socket.socket, Any], None]) -> Iterator[dict[str, Any]]:
    """A unix socket at ``path`` serving one connection on a thread: ``serve(conn, reader)`` after
    the preamble line, which is kept in the yielded dict."""
    seen: dict[str, Any] = {}
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(WAIT)

    def run() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as reader:
            conn.settimeout(WAIT)
            seen["preamble"] = json.loads(reader.readline())
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
        seen_line = reader.readline()
        conn.sendall(answer)
        assert reader.read() == b""  # the bridge closed its side after stdin ended
        assert seen_line == request

    sock = tmp_path / "d.sock"
    monkeypatch.setenv("HARNESS_SOCKET", str(sock))
    monkeypatch.setenv("HARNESS_MCP_TOKEN", "the-token")
    with stand_in_daemon(sock, serve) as seen:
        code, written = run_bridge(monkeypatch, request)
    assert seen["preamble"] == {"harness_bridge": bridge.BRIDGE_PROTOCOL, "kind": "mcp", "token": "the-token"}
    assert (code, written) == (0, answer)


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
