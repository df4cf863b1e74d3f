"""The HTTP pass-through between the MCP conformance suite and the gateway's loopback endpoint
(tests/acceptance/test_conformance.py; docs/conformance.md). The suite cannot send a header of its
own, and it calls bare tool and prompt names (``test_simple_text``) where the gateway exposes
``NAME__test_simple_text``; :class:`PassThrough` adds a harness's bearer token and maps those names,
and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

UPSTREAM = "everything"
"""The gateway's name for the upstream the suite tests (the python-sdk everything server)."""
PREFIX = f"{UPSTREAM}__"
NAMED_METHODS = ("tools/call", "prompts/get")
"""The methods whose ``params.name`` (and ``Mcp-Name`` header, in the 2026-07-28 revision) get the prefix."""

Headers = list[tuple[str, str]]
DROPPED = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
"""Hop-by-hop headers, and the length: each hop's framing is the pass-through's own."""


class PassThrough:
    """What stands between the suite and the gateway's endpoint, because the suite can neither send
    a bearer token nor call a namespaced name. It listens on ``127.0.0.1:PORT`` while the gateway
    listens on ``[::1]:PORT`` (the same port), so the ``Host`` and ``Origin`` the suite sends for its
    URL, ``http://127.0.0.1:PORT/mcp``, are one of the gateway's own loopback names: they are
    forwarded exactly as sent and the gateway's DNS-rebinding checks (421/403) judge the suite's own
    requests. (Not the other way round: the 0.2.x suite's header scenarios cannot reach ``[::1]``.)

    Each request goes to the gateway on a connection of its own, unchanged but for:

    * ``Authorization: Bearer <token>`` added (and ``Connection: close``, ``Content-Length`` set
      for the forwarded body: the framing of this hop is the pass-through's own). The suite opens a
      session per scenario (up to 40) and never ends one (no ``DELETE``); past 16 open sessions of one
      token the gateway ends the least recently used idle one for each new one
      (docs/configuration.md), so one token serves the whole run;
    * in the JSON-RPC body, ``params.name`` of ``tools/call`` and ``prompts/get``, and the ``ref``
      name of a ``ref/prompt`` in ``completion/complete``, get the ``everything__`` prefix, and so
      does the ``Mcp-Name`` header of a ``tools/call`` or ``prompts/get`` (a mismatch stays one);
    * in the answers to the ``tools/list`` and ``prompts/list`` requests of that body, the prefix is
      taken off the names that have it (the gateway's own tools, ``harness_*``, have none).

    Everything else, status, headers, SSE events (progress, log messages, elicitation requests and
    their answers), refusals, resource URIs, is relayed as it comes. It answers nothing itself.
    """

    def __init__(self, listener: socket.socket, token: str) -> None:
        self._listener = listener
        self._port = int(listener.getsockname()[1])
        self._token = token
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> PassThrough:
        self._server = await asyncio.start_server(self._connected, sock=self._listener)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while (head := await _read_head(reader)) is not None:
                body = b"".join([chunk async for chunk in _body(reader, head[1], request=True)])
                if not await self._relay(head, body, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _relay(
        self,
        head: tuple[str, Headers],
        body: bytes,
        client: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Forward one request and relay its answer; False when the client connection must close."""
        start, headers = head
        body, listings = _to_gateway(body)
        forwarded = [(k, _to_gateway_header(k, v, headers)) for k, v in headers if k.lower() not in DROPPED]
        forwarded += [("Authorization", f"Bearer {self._token}"), ("Connection", "close")]
        forwarded.append(("Content-Length", str(len(body))))
        g_reader, g_writer = await asyncio.open_connection("::1", self._port)
        try:
            g_writer.write(_head(start, forwarded) + body)
            await g_writer.drain()
            answer = await _read_head(g_reader)
            if answer is None:
                return False
            status, answer_headers = answer
            kept = [(k, v) for k, v in answer_headers if k.lower() not in DROPPED]
            chunks = _body(g_reader, answer_headers, request=False)
            content_type = _header(answer_headers, "content-type") or ""
            if "text/event-stream" not in content_type:
                data = _from_gateway(b"".join([c async for c in chunks]), listings)
                writer.write(_head(status, [*kept, ("Content-Length", str(len(data)))]) + data)
                await writer.drain()
                return True
            writer.write(_head(status, [*kept, ("Transfer-Encoding", "chunked")]))
            relay = asyncio.ensure_future(_relay_events(chunks, listings, writer))
            gone = asyncio.ensure_future(client.read(1))  # no pipelining: only EOF can come now
            try:
                await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                relay.cancel()  # (a finished task stays as it finished)
                gone.cancel()
                relayed, _ = await asyncio.gather(relay, gone, return_exceptions=True)
            if relay.cancelled():
                return False  # the client went away first
            if isinstance(relayed, BaseException):
                raise relayed
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return gone.cancelled()
        finally:
            g_writer.close()


def loopback_listener() -> socket.socket:
    """A listening socket on ``127.0.0.1`` at a free port: the pass-through's, held from before the
    gateway starts (it then listens on ``[::1]`` at the same port)."""
    sock = socket.create_server(("127.0.0.1", 0), backlog=64)
    sock.setblocking(False)
    return sock


async def _relay_events(
    chunks: AsyncIterator[bytes], listings: set[str], writer: asyncio.StreamWriter
) -> None:
    """An SSE body, line by line, each ``data:`` line's JSON-RPC message mapped back."""
    pending = b""
    async for chunk in chunks:
        *lines, pending = (pending + chunk).split(b"\n")
        if not lines:
            continue
        out = b"".join(_event_line(line, listings) + b"\n" for line in lines)
        writer.write(b"%x\r\n%s\r\n" % (len(out), out))
        await writer.drain()
    if pending:
        writer.write(b"%x\r\n%s\r\n" % (len(pending), pending))


def _event_line(line: bytes, listings: set[str]) -> bytes:
    """One SSE line; a ``data:`` line rewritten only if its message is an answer to map back."""
    if not line.startswith(b"data:"):
        return line
    data = line[5:].strip()
    mapped = _from_gateway(data, listings)
    return line if mapped is data else b"data: " + mapped


def _to_gateway(body: bytes) -> tuple[bytes, set[str]]:
    """The body with bare names namespaced, and the ids of its ``tools/list``/``prompts/list``."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body, set()
    listings: set[str] = set()
    changed = False
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict):
            continue
        method, params = message.get("method"), message.get("params")
        if method in ("tools/list", "prompts/list") and "id" in message:
            listings.add(json.dumps(message["id"]))
        if not isinstance(params, dict):
            continue
        named = params if method in NAMED_METHODS else None
        if method == "completion/complete" and isinstance(params.get("ref"), dict):
            named = params["ref"] if params["ref"].get("type") == "ref/prompt" else None
        if named is not None and isinstance(named.get("name"), str):
            named["name"] = PREFIX + named["name"]
            changed = True
    return (json.dumps(parsed).encode() if changed else body), listings


def _to_gateway_header(name: str, value: str, headers: Headers) -> str:
    """A request header's value, the ``Mcp-Name`` of a named method with the prefix."""
    if name.lower() == "mcp-name" and _header(headers, "mcp-method") in NAMED_METHODS:
        return PREFIX + value
    return value


def _from_gateway(data: bytes, listings: set[str]) -> bytes:
    """``data`` with the prefix taken off the names in answers to the listings ``listings`` names."""
    if not listings:
        return data
    try:
        parsed = json.loads(data)
    except ValueError:
        return data
    changed = False
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict) or json.dumps(message.get("id")) not in listings:
            continue
        result = message.get("result")
        for key in ("tools", "prompts"):
            for item in result.get(key, []) if isinstance(result, dict) else []:
                if isinstance(item, dict) and str(item.get("name", "")).startswith(PREFIX):
                    item["name"] = item["name"][len(PREFIX) :]
                    changed = True
    return json.dumps(parsed).encode() if changed else data


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, Headers] | None:
    """A request or status line and its headers; None at a clean end of the connection."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise
    start, *lines = raw.decode("latin-1").split("\r\n")
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines if line)]
    return start, headers


def _header(headers: Headers, name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


async def _body(reader: asyncio.StreamReader, headers: Headers, *, request: bool) -> AsyncIterator[bytes]:
    """A message body as it arrives: by Content-Length, chunked, or (an answer) until the end."""
    if (_header(headers, "transfer-encoding") or "").lower() == "chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            yield await reader.readexactly(size)
            await reader.readexactly(2)
        while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
            pass
    elif (length := _header(headers, "content-length")) is not None:
        if int(length):
            yield await reader.readexactly(int(length))
    elif not request:
        while chunk := await reader.read(65536):
            yield chunk


def _head(start: str, headers: Headers) -> bytes:
    return (start + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")
