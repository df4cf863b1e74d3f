"""A small HTTP/1.1 client on asyncio streams: what a Streamable HTTP upstream needs, and no more.

One origin per client; a request takes an idle keep-alive connection (and is written on it at once)
or opens one (so there is one connection per request in flight), and gives it back once its
response was read to the end; a response left unread (a cancelled request, an error) closes its
connection. Bodies are framed by
``Content-Length``, chunked, or end with the connection. ``https`` goes through ``ssl`` with the same
trust as httpx2 (``SSL_CERT_FILE``/``SSL_CERT_DIR``, else the system's certificates), hostname checked.
Redirects are not followed; 1xx answers are read past. The connect timeout covers TCP and TLS; a
request that cannot be written within it fails too; reads wait as long as the upstream takes.

Written by hand for the per-call cost: httpx2 spends far more Python per request (a pool, header
objects, event hooks); the daemon's own endpoint frames HTTP by hand for the same reason
(docs/architecture.md, "The HTTP endpoint"). A proxy named in the environment is httpx2's to use
(``http_proxied.py``).
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from harness import __version__

MAX_HEAD: Final = 64 << 10
"""The longest response head (and chunk-size line) read."""
READ_SIZE: Final = 1 << 16
_FIELD_SAFE: Final = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
"""What a header value may hold: no control character but tab, nothing past Latin-1."""
_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
USER_AGENT: Final = f"harness-gateway/{__version__}"
T = TypeVar("T")


class HttpError(Exception):
    """An exchange that failed below the HTTP status: no connection, a malformed or cut response."""


class HttpResponse(Protocol):
    """A response whose head has arrived; its body is read with :meth:`read` or :meth:`chunks`."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """By lower-case name."""
        ...

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...


class HttpExchange(Protocol):
    """One request; entering it gives the response once its head has arrived."""

    async def __aenter__(self) -> HttpResponse: ...

    async def __aexit__(self, *exc_info: Any) -> bool | None: ...

    def abandon(self) -> None:
        """It will never be entered (its task was cancelled before it began): free what it holds."""
        ...


class HttpClient(Protocol):
    """Requests to one URL with a fixed set of headers (the configured ones)."""

    def stream(self, method: str, headers: Mapping[str, str], body: bytes = b"") -> HttpExchange: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a URL's requests go, and the parts of their head the URL decides."""

    tls: bool
    host: str
    port: int
    target: str
    host_header: str
    authorization: str | None
    """``Basic …`` from the URL's user info (as httpx2 sends it), if it has any."""

    @classmethod
    def of(cls, url: str) -> Origin:
        parts = urlsplit(url)
        tls = parts.scheme.lower() == "https"
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise HttpError(f"not an http:// or https:// URL: {url!r}")
        try:
            port = parts.port or (443 if tls else 80)
        except ValueError as exc:
            raise HttpError(f"bad port in {url!r}") from exc
        host = parts.hostname
        shown = f"[{host}]" if ":" in host else host
        authority = shown if port == (443 if tls else 80) else f"{shown}:{port}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authorization = None
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            authorization = f"Basic {base64.b64encode(pair.encode()).decode()}"
        return cls(tls, host, port, target, authority, authorization)


def tls_context() -> ssl.SSLContext:
    """Certificate-verifying TLS, trusting what httpx2 trusts."""
    import httpx2  # only an https upstream needs it

    return httpx2.create_ssl_context()


def _checked(name: str, value: str) -> str:
    if not _NAME.fullmatch(name) or not _FIELD_SAFE.fullmatch(value):
        why = "a bad name, or a control character or non-Latin-1 text in its value"
        raise HttpError(f"refusing to send the header {name!r}: {why}")
    return f"{name}: {value}\r\n"


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def reusable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Response:
    """One response on a connection of :class:`Http11Client`."""

    __slots__ = ("_chunked", "_length", "_reader", "complete", "headers", "keep_alive", "status")

    def __init__(self, reader: asyncio.StreamReader, head: bytes, method: str) -> None:
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not (code.isascii() and code.isdigit()):
            raise HttpError(f"not an HTTP/1.1 response: {lines[0][:80]!r}")
        self.status = int(code)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                continue
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        self.headers = headers
        self._reader = reader
        connection = headers.get("connection", "").lower()
        self.keep_alive = "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
        self._chunked = False
        self._length: int | None = None
        if method == "HEAD" or self.status in (204, 304):
            self._length = 0
        elif "transfer-encoding" in headers:
            self._chunked = headers["transfer-encoding"].lower().rstrip().endswith("chunked")
        elif "content-length" in headers:
            length = headers["content-length"]
            if not (length.isascii() and length.isdigit()):
                raise HttpError(f"bad Content-Length {length[:40]!r}")
            self._length = int(length)
        if not self._chunked and self._length is None:
            self.keep_alive = False  # the body ends with the connection
        self.complete = self._length == 0

    async def read(self) -> bytes:
        """The whole body."""
        if self._length is not None and not self.complete:
            try:
                body = await self._reader.readexactly(self._length)
            except asyncio.IncompleteReadError:
                raise HttpError("the upstream closed the connection in the middle of a body") from None
            self.complete = True
            return body
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        if self.complete:
            return
        try:
            if self._chunked:
                while size := await self._chunk_size():
                    async for data in self._exactly(size):
                        yield data
                    if await self._reader.readexactly(2) != b"\r\n":
                        raise HttpError("a chunk of the body does not end with CRLF")
                while await self._reader.readuntil(b"\r\n") != b"\r\n":
                    pass  # trailers
            elif self._length is not None:
                async for data in self._exactly(self._length):
                    yield data
            else:
                while data := await self._reader.read(READ_SIZE):
                    yield data
        except asyncio.IncompleteReadError:
            raise HttpError("the upstream closed the connection in the middle of a body") from None
        except asyncio.LimitOverrunError:
            raise HttpError(f"a chunk-size or trailer line longer than {MAX_HEAD} bytes") from None
        self.complete = True

    async def _chunk_size(self) -> int:
        line = await self._reader.readuntil(b"\r\n")
        digits = line.split(b";", 1)[0].strip()
        if not digits or len(digits) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in digits):
            raise HttpError(f"bad chunk size {digits[:20]!r}")
        return int(digits, 16)

    async def _exactly(self, size: int) -> AsyncIterator[bytes]:
        while size:
            data = await self._reader.read(min(size, READ_SIZE))
            if not data:
                raise asyncio.IncompleteReadError(b"", size)
            size -= len(data)
            yield data


class Http11Client:
    """Keep-alive HTTP/1.1 to the origin of ``url``, every request carrying ``headers``."""

    def __init__(self, url: str, headers: Mapping[str, str], connect_timeout: float) -> None:
        self.origin = origin = Origin.of(url)
        self._connect_timeout = connect_timeout
        self._tls = tls_context() if origin.tls else None
        base = {"host": ("Host", origin.host_header), "user-agent": ("User-Agent", USER_AGENT)}
        if origin.authorization is not None:
            base["authorization"] = ("Authorization", origin.authorization)
        base |= {name.lower(): (name, value) for name, value in headers.items()}
        for name, value in base.values():
            _checked(name, value)
        self._base = base
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._closed = False

    def _head(self, method: str, headers: Mapping[str, str], body: bytes) -> bytes:
        fields = dict(self._base)
        for name, value in headers.items():
            fields[name.lower()] = (name, value)
        if body or method in ("POST", "PUT", "PATCH"):
            fields["content-length"] = ("Content-Length", str(len(body)))
        lines = [f"{method} {self.origin.target} HTTP/1.1\r\n"]
        lines += [_checked(name, value) for name, value in fields.values()]
        return "".join(lines).encode("latin-1") + b"\r\n"

    def stream(self, method: str, headers: Mapping[str, str], body: bytes = b"") -> Exchange:
        """A request: written at once if a keep-alive connection is idle (in the caller's step, not
        a loop turn later), else when entered; see :class:`Exchange`."""
        return Exchange(self, method, headers, body)

    def _idle_connection(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable():
                return connection
            self._open.discard(connection)
            connection.close()
        return None

    def _release(self, connection: _Connection, response: Response | None) -> None:
        """Keep a connection for another request if its response was read to the end, else close it."""
        if response is not None and response.complete and response.keep_alive and not self._closed:
            self._idle.append(connection)
        else:
            self._open.discard(connection)
            connection.close()

    async def _connection(self) -> _Connection:
        if (connection := self._idle_connection()) is not None:
            return connection
        if self._closed:
            raise HttpError("the client is closed")
        origin = self.origin
        opening = asyncio.open_connection(
            origin.host,
            origin.port,
            ssl=self._tls,
            server_hostname=origin.host if self._tls is not None else None,
            limit=MAX_HEAD,
        )
        reader, writer = await self._bounded(opening, f"connecting to {origin.host}:{origin.port}")
        opened = _Connection(reader, writer)
        self._open.add(opened)
        return opened

    async def _bounded(self, step: Awaitable[T], what: str) -> T:
        try:
            return await asyncio.wait_for(step, self._connect_timeout)
        except TimeoutError:
            raise HttpError(f"{what} took longer than {self._connect_timeout:g} s") from None
        except ssl.SSLError as exc:
            raise HttpError(f"TLS: {exc}") from None

    async def _response(self, reader: asyncio.StreamReader, method: str) -> Response:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                cut = "in the middle of its response head" if exc.partial else "without a response"
                raise HttpError(f"the upstream closed the connection {cut}") from None
            except asyncio.LimitOverrunError:
                raise HttpError(f"a response head longer than {MAX_HEAD} bytes") from None
            response = Response(reader, head, method)
            if not 100 <= response.status < 200:
                return response
            if response.status == 101:
                raise HttpError("the upstream switched protocols")

    async def aclose(self) -> None:
        """Close every connection, idle or in use; later requests fail."""
        self._closed = True
        self._idle.clear()
        for connection in list(self._open):
            connection.close()
        self._open.clear()


class Exchange:
    """One request of :class:`Http11Client`. Entering it sends the request (unless it went at once
    on an idle connection) and waits for the response's head; leaving it keeps the connection for
    another request if the body was read to the end, else closes it. An error in the request's own
    head is raised on entering, as every other one is."""

    __slots__ = ("_client", "_connection", "_error", "_method", "_request", "_response")

    def __init__(self, client: Http11Client, method: str, headers: Mapping[str, str], body: bytes) -> None:
        self._client = client
        self._method = method
        self._connection: _Connection | None = None
        self._response: Response | None = None
        self._error: HttpError | None = None
        try:
            self._request = client._head(method, headers, body) + body
        except HttpError as exc:
            self._error = exc
            return
        if (connection := client._idle_connection()) is not None:
            connection.writer.write(self._request)
            self._connection = connection

    async def __aenter__(self) -> Response:
        if self._error is not None:
            raise self._error
        client, connection = self._client, self._connection
        try:
            if connection is None:
                connection = self._connection = await client._connection()
                connection.writer.write(self._request)
            writer = connection.writer
            if writer.transport.get_write_buffer_size():
                await client._bounded(writer.drain(), "writing the request")
            response = self._response = await client._response(connection.reader, self._method)
        except BaseException:
            self.abandon()
            raise
        return response

    async def __aexit__(self, *exc_info: object) -> None:
        self.abandon()

    def abandon(self) -> None:
        """Give the connection back (kept if the response was read to the end); once."""
        if self._connection is not None:
            self._client._release(self._connection, self._response)
            self._connection = None
