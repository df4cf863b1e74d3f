"""``harness mcp``: the stdio bridge an agent CLI launches. Standard library only; copies bytes.

It connects to the daemon's control socket (``HARNESS_SOCKET``), sends one preamble line with the
bridge protocol version and ``HARNESS_MCP_TOKEN``, then relays stdin → socket and socket → stdout
unchanged until either side ends. A daemon that refuses the session (the socket is full, a bad
preamble) answers one line ``{"harness_error": "…"}`` first: the bridge prints it on stderr, never
on the agent's stdout, and exits 1.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

BRIDGE_PROTOCOL = 1
CHUNK = 1 << 16
REFUSAL = b'{"harness_error"'
MAX_REFUSAL_BYTES = 1 << 16


def _socket_path(state_dir: str | None) -> str:
    explicit = os.environ.get("HARNESS_SOCKET")
    if explicit:
        return explicit
    if state_dir:
        return os.path.join(state_dir, "harness.sock")
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "harness", "harness.sock")


def _refusal(first: bytes) -> str | None:
    """The daemon's refusal in its first line (None: the line is not one)."""
    line = first.split(b"\n", 1)[0]
    try:
        reason = json.loads(line)["harness_error"]
    except (ValueError, KeyError, TypeError):
        return line.decode(errors="replace")
    return str(reason)


def _pump_to_stdout(sock: socket.socket) -> str | None:
    """Copy the socket to stdout; returns the daemon's refusal instead when its first line is one."""
    out = sys.stdout.buffer.raw if hasattr(sys.stdout.buffer, "raw") else sys.stdout.buffer
    fd = out.fileno()
    first: bytes | None = b""  # held back while it may still turn out to be a refusal
    try:
        while data := sock.recv(CHUNK):
            if first is not None:
                first += data
                if first.startswith(REFUSAL) or REFUSAL.startswith(first):
                    if b"\n" in first or len(first) > MAX_REFUSAL_BYTES:
                        return _refusal(first)
                    continue
                data, first = first, None
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    except OSError:
        pass
    if first and (first.startswith(REFUSAL) or REFUSAL.startswith(first)):
        return _refusal(first)
    return None


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
    try:
        sock.sendall(json.dumps(preamble).encode() + b"\n")
    except OSError:
        pass  # a refusal may have closed the connection already: its line is still to be read
    stdin_closed = threading.Event()
    threading.Thread(target=_pump_from_stdin, args=(sock, stdin_closed), daemon=True).start()
    refusal = _pump_to_stdout(sock)
    sock.close()
    if refusal is not None:
        print(f"harness mcp: the daemon refused the session: {refusal}", file=sys.stderr)
        return 1
    if stdin_closed.is_set():
        return 0
    print("harness mcp: the daemon closed the connection", file=sys.stderr)
    return 1
