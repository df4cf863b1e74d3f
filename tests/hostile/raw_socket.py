"""One raw exchange with a real daemon's control socket (standard library only)."""

from __future__ import annotations

import socket


def raw_exchange(sock_path: str, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection to a real daemon's socket in one write; read its first
    line (or what it sent before closing)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(sock_path)
        sock.sendall(data)
        received = b""
        while b"\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received
