"""HTTP/1.1 framing for the loopback endpoint: one request read from a stream, a response or an SSE
stream (chunked) written back. Only what ``/mcp`` needs: ``Content-Length`` bodies, keep-alive."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.gateway.downstream.http_lines import ClientGone, ClientReader, Lines

MAX_BODY = 4 << 20
"""Bytes of one POST body (the bridge's line limit is of the same order)."""
MAX_HEAD = 16 << 10
"""Bytes of a request line and its headers."""
HEAD_TIMEOUT_S = 5.0
"""A request head must arrive within this long (of the connection, or of its first byte)."""
BODY_TIMEOUT_S = 30.0
"""A body must arrive within this long of its head."""

_REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    408: "Request Timeout",
    409: "Conflict",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    421: "Misdirected Request",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    503: "Service Unavailable",
}


class HttpRefusal(Exception):
    """A request answered with an HTTP error status and a one-line reason."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = dict(headers or {})


def loopback_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` values a loopback listener on ``host:port`` answers (DNS rebinding protection)."""
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    return frozenset(f"{name}:{port}" for name in names)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


async def read_request(
    reader: asyncio.StreamReader,
    task: asyncio.Task[Any],
    head_timeout: float = HEAD_TIMEOUT_S,
    idle_timeout: float | None = None,
) -> Request | None:
    """One request, or None at a clean end of the connection; ``task`` is the one reading it. With
    ``idle_timeout`` (a keep-alive connection between requests) the first byte may take that long
    (TimeoutError otherwise); the rest of the head must come within ``head_timeout`` (408 otherwise),
    the body within ``BODY_TIMEOUT_S``."""
    deadline = _Deadline(task, head_timeout, idle_timeout)
    try:
        return await _request(reader, deadline)
    except asyncio.CancelledError:
        if not deadline.expired or task.uncancel() > deadline.cancelling:
            raise
        raise deadline.passed() from None
    finally:
        deadline.cancel()


async def _request(reader: asyncio.StreamReader, deadline: _Deadline) -> Request | None:
    first = b""
    if deadline.part == "idle":
        first = await reader.read(1)
        if not first:
            return None
        deadline.begin("head")
    try:
        head = first + await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not first and not exc.partial.strip():
            return None
        raise HttpRefusal(400, "incomplete request head") from None
    except asyncio.LimitOverrunError:
        raise HttpRefusal(431, f"request head larger than {MAX_HEAD} bytes") from None
    method, target, headers = parse_head(head)
    length = headers.get("content-length")
    if method == "POST" and length is None:
        raise HttpRefusal(411, "a POST needs Content-Length")
    if not length:
        return Request(method, target, headers, b"")
    deadline.begin("body")
    return Request(method, target, headers, await reader.readexactly(int(length)))


class _Deadline:
    """The deadlines of reading one request (its first byte when ``idle``, its head, its body) on one
    timer; when one passes, the reading task is cancelled, as ``asyncio.timeout`` would (which cost
    a timer and three loop lookups per part). The timer is set once, at the earliest the first
    deadline can be: a later part's deadline is never earlier, and the timer, firing before it, sets
    itself again for it."""

    __slots__ = ("_handle", "_head_timeout", "_loop", "_task", "cancelling", "due", "expired", "part")

    def __init__(self, task: asyncio.Task[Any], head_timeout: float, idle_timeout: float | None) -> None:
        self._task = task
        self.cancelling = task.cancelling()
        loop = self._loop = task.get_loop()
        now = loop.time()
        self._head_timeout = head_timeout
        self.part = "head" if idle_timeout is None else "idle"
        self.due = now + (head_timeout if idle_timeout is None else idle_timeout)
        self.expired = False
        self._handle = loop.call_at(min(now + head_timeout, self.due), self._fire)

    def begin(self, part: str) -> None:
        """``part`` ("head" or "body") is due from now."""
        self.part = part
        self.due = self._loop.time() + (self._head_timeout if part == "head" else BODY_TIMEOUT_S)
        if self.due < self._handle.when():
            self._handle.cancel()
            self._handle = self._loop.call_at(self.due, self._fire)

    def _fire(self) -> None:
        if self.due > self._handle.when():
            self._handle = self._loop.call_at(self.due, self._fire)
            return
        self.expired = True
        self._task.cancel()

    def passed(self) -> Exception:
        """What the request ends with now that its part's deadline passed: TimeoutError while idle
        (the connection just closes), else a 408."""
        if self.part == "idle":
            return TimeoutError()
        if self.part == "head":
            return HttpRefusal(408, f"the request head did not arrive within {self._head_timeout:g} s")
        return HttpRefusal(408, f"the body did not arrive within {BODY_TIMEOUT_S:g} s")

    def cancel(self) -> None:
        self._handle.cancel()


def parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """(method, target, headers by lower-case name) of a request head; :class:`HttpRefusal` if it
    is malformed. ``content-length``, when present, is ASCII digits and at most ``MAX_BODY``."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not all(parts):
        raise HttpRefusal(400, "malformed request line")
    method, target, version = parts
    if not version.startswith("HTTP/1."):
        raise HttpRefusal(400, f"unsupported protocol {version[:40]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        key = name.strip().lower()
        if not sep or not key or (key in ("host", "content-length") and key in headers):
            raise HttpRefusal(400, "malformed header")
        headers[key] = value.strip()
    if "transfer-encoding" in headers:
        raise HttpRefusal(501, "chunked request bodies are not supported; send Content-Length")
    length = headers.get("content-length")
    if length is not None:
        # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
        if not (length.isascii() and length.isdigit()):
            raise HttpRefusal(400, "bad Content-Length")
        if len(length) > len(str(MAX_BODY)) or int(length) > MAX_BODY:
            raise HttpRefusal(413, f"a body is at most {MAX_BODY} bytes")
    return method, target, headers


def response(status: int, body: bytes, headers: Mapping[str, str]) -> bytes:
    """A whole response with a ``Content-Length`` body: one write."""
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def respond(writer: asyncio.StreamWriter, status: int, body: bytes, headers: Mapping[str, str]) -> None:
    writer.write(response(status, body, headers))
    await writer.drain()


async def respond_refusal(writer: asyncio.StreamWriter, refusal: HttpRefusal, *, close: bool = False) -> None:
    body = json.dumps({"error": refusal.reason}).encode()
    headers = {**refusal.headers, "Content-Type": "application/json"}
    if close:
        headers["Connection"] = "close"
    with contextlib.suppress(ConnectionError):
        await respond(writer, refusal.status, body, headers)


async def stream(
    writer: asyncio.StreamWriter,
    reader: ClientReader,
    lines: Lines,
    headers: Mapping[str, str],
) -> bool:
    """An SSE response (chunked) of ``lines`` until None; False if the client went away first.
    Whatever is there at once goes in one write: the head with the first events, the last event
    with the stream's end."""
    head = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-cache"]
    head += ["Transfer-Encoding: chunked", *(f"{k}: {v}" for k, v in headers.items())]
    out = [("\r\n".join(head) + "\r\n\r\n").encode("latin-1")]
    ready = lines.ready()
    while True:
        for line in ready:
            if line is None:
                out.append(b"0\r\n\r\n")
                writer.write(b"".join(out))
                await writer.drain()
                return True
            event = b"event: message\r\ndata: " + line.rstrip(b"\n") + b"\r\n\r\n"
            out += (f"{len(event):x}\r\n".encode(), event, b"\r\n")
        if out:
            writer.write(b"".join(out))
            out.clear()
            await writer.drain()
        try:
            await lines.wait(reader)
        except ClientGone:
            return False
        ready = lines.ready()
