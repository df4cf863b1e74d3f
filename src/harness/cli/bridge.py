"""``harness mcp``: the stdio bridge an agent CLI launches. Standard library only; copies bytes.

It connects to the daemon's control socket (``HARNESS_SOCKET``), sends one preamble line with the
bridge protocol version and ``HARNESS_MCP_TOKEN``, then relays stdin → socket and socket → stdout
unchanged until either side ends.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

BRIDGE_PROTOCOL = 1
CHUNK = 1 << 16


def _socket_path(state_dir: str | None) -> str:
    explicit = os.environ.get("HARNESS_SOCKET")
    if explicit:
        return explicit
    if state_dir:
        return os.path.join(state_dir, "harness.sock")
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "harness", "harness.sock")


def _pump_to_stdout(sock: socket.socket) -> None:
    out = sys.stdout.buffer.raw if hasattr(sys.stdout.buffer, "raw") else sys.stdout.buffer
    fd = out.fileno()
    try:
        while data := sock.recv(CHUNK):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    except OSError:
        pass


def _pump_from_stdin(sock: socket.socket, stdin_closed: threading.Event) -> None:
    fd = sys.stdin.fileno()
    try:
        while data := os.read(fd, CHUNK):
            sock.sendall(data)
    except OSError:
        pass
    stdin_closed.set()
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def run(state_dir: str | None = None) -> int:
    """Relay until the daemon closes the connection (after stdin closed, or on its own)."""
    path = _socket_path(state_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        print(
            f"harness mcp: no Harness daemon is listening at {path} ({exc.strerror or exc})", file=sys.stderr
        )
        return 1
    preamble = {
        "harness_bridge": BRIDGE_PROTOCOL,
        "kind": "mcp",
        "token": os.environ.get("HARNESS_MCP_TOKEN", ""),
    }
    sock.sendall(json.dumps(preamble).encode() + b"\n")
    stdin_closed = threading.Event()
    threading.Thread(target=_pump_from_stdin, args=(sock, stdin_closed), daemon=True).start()
    _pump_to_stdout(sock)
    sock.close()
    if stdin_closed.is_set():
        return 0
    print("harness mcp: the daemon closed the connection", file=sys.stderr)
    return 1
