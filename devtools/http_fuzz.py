"""Hostile HTTP/1.1 for the loopback endpoint (``[mcp] listen``), from any local user with no token.

:func:`hostile_request` builds a seeded request with every part of the framing mutated: the request
line, header names and values (``Content-Length: ²`` and other digits that are not ASCII, duplicates,
overflows, bare LF, NUL), bodies shorter or longer than announced, HTTP/2 prefaces, raw garbage.
:func:`send` writes one on a fresh connection and reads what comes back: the status of a well-formed
response, 0 for a close without one, -1 for anything else (bytes that are not an HTTP response, or
no close within the timeout). :func:`hold` opens half-open connections (a request head that never
ends, a byte a second) and counts how the endpoint ends them. ``python -m devtools.http_fuzz
hold PORT COUNT SECONDS`` runs :func:`hold` in a process of its own (bench/http_load.py).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import socket
import sys
import threading
import time
from collections import Counter
from typing import Any

GOOD_CONTENT_LENGTHS = ("0", "2", "17")
BAD_CONTENT_LENGTHS = (
    "²",
    "٣",
    "\uff11",  # FULLWIDTH DIGIT ONE
    "-1",
    "+5",
    "1e3",
    "0x10",
    " ",
    "",
    "1 2",
    "9" * 30,
    "0" * 5000 + "1",
    "4294967296",
    "18446744073709551617",
)
METHODS = ("POST", "POST", "GET", "DELETE", "PUT", "OPTIONS", "", "P\x00ST", "GET\xff", "PRI")
TARGETS = ("/mcp", "/mcp", "/", "*", "/mcp?x=1", "http://127.0.0.1/mcp", "/" + "a" * 3000, "/\xe9")
VERSIONS = ("HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2", "HTTP/9.9", "", "HTTP/1.1 extra", "http/1.1")
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _header_lines(rng: random.Random, port: int, token: str | None) -> list[str]:
    host = rng.choice((f"127.0.0.1:{port}", f"localhost:{port}", f"evil.example:{port}", "", "\x00"))
    lines = [f"Host: {host}"] if rng.random() < 0.9 else []
    if rng.random() < 0.1:
        lines.append(f"Host: {host}")
    length = rng.choice(GOOD_CONTENT_LENGTHS if rng.random() < 0.5 else BAD_CONTENT_LENGTHS)
    if rng.random() < 0.85:
        lines.append(f"Content-Length: {length}")
    if rng.random() < 0.1:
        lines.append(f"content-length: {rng.choice(GOOD_CONTENT_LENGTHS)}")
    if rng.random() < 0.1:
        lines.append("Transfer-Encoding: chunked")
    if rng.random() < 0.7:
        lines += ["Content-Type: application/json", "Accept: application/json, text/event-stream"]
    if rng.random() < 0.5:
        bearer = token if token and rng.random() < 0.5 else rng.choice(("x", "", "\xff" * 20, "a" * 500))
        lines.append(f"Authorization: {rng.choice(('Bearer', 'bearer', 'Basic', ''))} {bearer}")
    if rng.random() < 0.2:
        lines.append(f"Origin: {rng.choice(('null', 'http://evil.example', f'http://127.0.0.1:{port}'))}")
    if rng.random() < 0.2:
        lines.append(f"Mcp-Session-Id: {rng.choice(('', 'x' * 200, 'nope', chr(0)))}")
    if rng.random() < 0.2:
        lines.append(f"MCP-Protocol-Version: {rng.choice(('2025-11-25', '1999-01-01', '', 'x' * 100))}")
    if rng.random() < 0.15:
        lines.append(
            rng.choice(("no colon", ": empty name", " folded: line", "X-\x00: nul", "X: " + "y" * 9000))
        )
    rng.shuffle(lines)
    return lines


def hostile_request(rng: random.Random, port: int, token: str | None = None) -> bytes:
    """One seeded hostile request (``token``, when given, is sometimes presented)."""
    roll = rng.random()
    if roll < 0.04:
        return H2_PREFACE
    if roll < 0.08:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
    line = f"{rng.choice(METHODS)} {rng.choice(TARGETS)} {rng.choice(VERSIONS)}"
    if rng.random() < 0.05:
        line = line.replace(" ", rng.choice(("  ", "\t", "")), 1)
    eol = "\r\n" if rng.random() < 0.9 else rng.choice(("\n", "\r", "\n\r"))
    head = eol.join([line, *_header_lines(rng, port, token)]) + eol + eol
    body = rng.choice((b"{}", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', b"\xff\xfe", b"[" * 200, b""))
    if rng.random() < 0.1:
        body = body[: rng.randint(0, len(body))]
    return head.encode("utf-8", errors="surrogateescape") + body


def fuzz(
    port: int,
    count: int,
    seed: int,
    token: str | None = None,
    threads: int = 8,
    seconds: float = 3600.0,
) -> Counter[int]:
    """Send ``count`` hostile requests (seeded) from ``threads`` threads, for at most ``seconds``;
    the outcomes of :func:`send` counted."""
    outcomes: Counter[int] = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        mine: Counter[int] = Counter()
        for _ in range(count // threads + (index < count % threads)):
            if time.monotonic() > deadline:
                break
            try:
                mine[send(port, hostile_request(rng, port, token))] += 1
            except OSError:
                mine[-2] += 1  # no connection at all
        with lock:
            outcomes.update(mine)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return outcomes


def send(port: int, data: bytes, timeout: float = 10.0) -> int:
    """Write ``data`` on a new connection, end the write side, read to the close: the response's
    status, 0 for a close with no response, -1 for anything else."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the endpoint may answer and close before reading all of it
        received = b""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
            else:
                return -1
        except ConnectionResetError:
            pass
        except TimeoutError:
            return -1
    if not received:
        return 0
    status_line = received.split(b"\r\n", 1)[0].split(b" ")
    if len(status_line) >= 2 and status_line[0] == b"HTTP/1.1" and status_line[1].isdigit():
        return int(status_line[1])
    return -1


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "h", "version": "0"},
    },
}


def post(port: int, token: str, body: dict[str, Any], session: str | None = None) -> dict[str, Any]:
    """One well-formed POST /mcp with ``token`` on a new connection: status, session id and body."""
    headers = {
        "Host": f"127.0.0.1:{port}",
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if session:
        headers["Mcp-Session-Id"] = session
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        return {
            "status": response.status,
            "session": response.getheader("Mcp-Session-Id"),
            "body": response.read().decode(errors="replace"),
        }
    finally:
        conn.close()


def probe(port: int, out: str, seconds: float, tool: str) -> None:
    """A client with its own token (HARNESS_MCP_TOKEN): every 0.2 s for ``seconds``, initialize a
    session and call ``tool`` on fresh connections; one JSON line per try in ``out`` (the HTTP status
    of the call, or 0 on a connection error; the seconds both took)."""
    token = os.environ["HARNESS_MCP_TOKEN"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
    end = time.monotonic() + seconds
    with open(out, "a") as log:
        while time.monotonic() < end:
            started = time.monotonic()
            try:
                opened = post(port, token, INITIALIZE)
                status = post(port, token, call, opened["session"])["status"] if opened["session"] else 0
            except (OSError, http.client.HTTPException):
                status = 0
            took = time.monotonic() - started
            log.write(json.dumps({"at": time.time(), "status": status, "seconds": round(took, 4)}) + "\n")
            log.flush()
            time.sleep(0.2)


def hold(port: int, count: int, seconds: float) -> Counter[str]:
    """Open ``count`` connections that send a request head's start and then a byte a second, for at
    most ``seconds``; how each ended: ``"<status>"`` answered, ``"closed"``, ``"held"`` (still open at
    the end), ``"refused"`` (connect failed)."""
    ends: Counter[str] = Counter()
    open_socks: list[socket.socket] = []
    start = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(start)
            sock.setblocking(False)
            open_socks.append(sock)
        except OSError:
            ends["refused"] += 1
    deadline = time.monotonic() + seconds
    while open_socks and time.monotonic() < deadline:
        time.sleep(1.0)
        for sock in list(open_socks):
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                with contextlib.suppress(OSError):
                    sock.send(b"X")
                continue
            except OSError:
                data = b""
            parts = data.split(b" ")
            ends[parts[1].decode() if len(parts) > 1 and parts[1].isdigit() else "closed"] += 1
            open_socks.remove(sock)
            sock.close()
    ends["held"] += len(open_socks)
    for sock in open_socks:
        sock.close()
    return ends


if __name__ == "__main__":
    if sys.argv[1:2] == ["hold"]:  # hold PORT COUNT SECONDS: starts on a line on stdin
        print("ready", flush=True)
        sys.stdin.readline()
        print(json.dumps(hold(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))))
    elif sys.argv[1:2] == ["probe"]:
        probe(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5])
