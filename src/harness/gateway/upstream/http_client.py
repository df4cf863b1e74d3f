"""A Streamable HTTP upstream, spoken directly (handshake era, 2025-03-26 and later, and 2026-07-28).

One POST per message; a request's answer is read from a JSON body or from the POST's SSE stream,
where the server may also send requests and notifications of its own before it; the session id and
the negotiated revision go on every later request; a GET stream carries what the server says outside
any request; DELETE ends the session on close. A request carrying the 2026-07-28 envelope goes
without a session, its version, method and name repeated in headers; a cancellation of one closes
its POST (that revision has no notifications from client to server).

Written here rather than taken from the SDK's client because a server request that arrives on a
POST's stream is delivered with the id of that POST's request: the one thing on the wire that ties a
handshake-era elicitation to the call that caused it (the link routes it to that call's session).
It also keeps the per-call path to one POST and one parse, on the hand-written HTTP/1.1 client of
``http11.py`` (httpx2 only when the environment names a proxy: ``http_proxied.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from harness.config import UpstreamConfig, resolve_upstream_headers
from harness.gateway.upstream.http11 import HttpClient, HttpError, HttpExchange, HttpResponse
from harness.gateway.upstream.http_proxied import http_client
from harness.gateway.upstream.modern import HeaderParams, header_params, modern_headers
from harness.gateway.upstream.sse import SseParser
from harness.gateway.wire import jsonrpc

if TYPE_CHECKING:
    from harness.gateway.upstream.delivery import OnClosed, OnMessage

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
LISTEN_RETRY_S = 1.0
"""Pause before the GET stream is opened again after it ended."""
MAX_ERROR_BODY = 300
DELETE_TIMEOUT_S = 2.0
"""How long closing waits for the upstream to answer the session's DELETE."""


class HttpUpstream:
    """One Streamable HTTP session with an upstream (a link's transport)."""

    pid = 0
    _loop: asyncio.AbstractEventLoop
    """Set by :meth:`open`."""

    def __init__(self, config: UpstreamConfig, on_message: OnMessage, on_closed: OnClosed) -> None:
        self.config = config
        self.url = str(config.url)
        self.garbled = ""
        """Why the last message that was not JSON was dropped ("" if none was)."""
        self._on_message = on_message
        self._on_closed = on_closed
        self._client: HttpClient | None = None
        self._session_id: str | None = None
        self._version: str | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._requests: dict[Any, asyncio.Task[None]] = {}
        """POSTs of 2026-07-28 requests by id (a cancellation closes one)."""
        self._modern = False
        self._header_params: dict[str, HeaderParams] = {}
        """What each tool mirrors into headers, read from the 2026-07-28 ``tools/list`` answers."""
        self._listings: set[Any] = set()
        """Ids of 2026-07-28 ``tools/list`` requests not answered yet."""
        self._closed = False

    async def open(self) -> None:
        """Make the HTTP client; the first POST (initialize) connects."""
        self._loop = asyncio.get_running_loop()  # looked up once (each lookup is a getpid on 3.11)
        self._client = http_client(self.url, resolve_upstream_headers(self.config), CONNECT_TIMEOUT_S)

    def send(self, message: dict[str, Any]) -> None:
        """POST one message (written now on an idle connection; a task of its own waits for the answer,
        whose messages are delivered as they come)."""
        if self._closed or self._client is None:
            return
        headers = modern_headers(message, self._header_params)
        if headers is not None:
            self._modern = True
            if message.get("method") == "tools/list":
                self._listings.add(message.get("id"))
        elif self._modern and "id" not in message:
            self._cancel_post(message)  # no notification goes to a 2026-07-28 server over HTTP
            return
        body = jsonrpc.encode_ascii(message)
        exchange = self._client.stream("POST", self._headers(headers), body)  # written now if it can be
        task = self._spawn(self._post(message, exchange), exchange.abandon)
        if headers is not None and "id" in message:
            request_id = message["id"]
            self._requests[request_id] = task
            task.add_done_callback(lambda _t: self._requests.pop(request_id, None))
        if message.get("method") == "notifications/initialized":
            self._spawn(self._listen())

    def _cancel_post(self, notification: dict[str, Any]) -> None:
        """A ``notifications/cancelled``: close the POST of the request it names (if still open)."""
        params = notification.get("params")
        cancelled = params.get("requestId") if isinstance(params, dict) else None
        if notification.get("method") == "notifications/cancelled" and type(cancelled) is int:
            task = self._requests.pop(cancelled, None)
            if task is not None:
                task.cancel()

    def _spawn(
        self, work: Coroutine[Any, Any, None], abandon: Callable[[], None] | None = None
    ) -> asyncio.Task[None]:
        """A task of the session's; ``abandon`` frees what ``work`` was given if it never ran."""
        task = self._loop.create_task(work)
        self._tasks.add(task)

        def done(task: asyncio.Task[None]) -> None:
            self._tasks.discard(task)
            if abandon is not None:
                abandon()

        task.add_done_callback(done)
        return task

    def _headers(self, modern: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if modern is not None:
            return headers | modern
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._version is not None:
            headers["MCP-Protocol-Version"] = self._version
        return headers

    async def _post(self, message: dict[str, Any], exchange: HttpExchange) -> None:
        request_id = message.get("id") if "method" in message else None
        initialize = message.get("method") == "initialize"
        try:
            async with exchange as response:
                if initialize and (session_id := response.headers.get("mcp-session-id")):
                    self._session_id = session_id
                if response.status == 202:
                    return
                if response.status >= 400:
                    await self._refused(response, request_id, initialize)
                    return
                await self._read(response, request_id)
        except (HttpError, OSError) as exc:
            self._end(f"transport error: {_described(exc)}"[:MAX_ERROR_BODY])

    async def _refused(self, response: HttpResponse, request_id: Any, initialize: bool) -> None:
        body = (await response.read()).decode(errors="replace").strip()
        answer = _error_answer(body, request_id)
        gone = response.status == 404 and self._session_id is not None  # the session expired
        if answer is not None and not gone:
            self._on_message(answer, None)  # a JSON-RPC error (how a 2026-only server refuses initialize)
            return
        detail = body[:MAX_ERROR_BODY]
        reason = f"HTTP {response.status}" + (f": {detail}" if detail else "")
        if initialize or gone:
            self._end(f"the upstream refused the session: {reason}")
            return
        if request_id is not None:
            error = {"code": jsonrpc.INTERNAL_ERROR, "message": f"the upstream answered {reason}"}
            self._on_message({"jsonrpc": "2.0", "id": request_id, "error": error}, None)

    async def _read(self, response: HttpResponse, request_id: Any) -> None:
        """Deliver what a response carries: one JSON message, or the messages of an SSE stream."""
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("text/event-stream"):
            events = SseParser()
            async for chunk in response.chunks():
                for kind, data in events.feed(chunk):
                    if kind == "message" and data:
                        self._deliver(data, request_id)
        elif content_type.startswith("application/json"):
            self._deliver((await response.read()).decode(errors="replace"), request_id)

    def _deliver(self, data: str, request_id: Any) -> None:
        try:
            message = json.loads(data)
        except ValueError as exc:
            log.warning("upstream %s: dropped a message that is not JSON", self.config.name)
            self.garbled = str(exc)
            return
        for one in message if isinstance(message, list) else (message,):
            if not isinstance(one, dict):
                continue
            result = one.get("result")
            if self._listings and type(answered := one.get("id")) is int and answered in self._listings:
                self._listings.discard(answered)
                self._learn(result)
            if self._version is None and isinstance(result, dict) and "protocolVersion" in result:
                self._version = str(result["protocolVersion"])
            self._on_message(one, request_id if type(request_id) is int else None)

    def _learn(self, listing: Any) -> None:
        """Keep what each tool of a 2026-07-28 ``tools/list`` page mirrors into headers."""
        tools = listing.get("tools") if isinstance(listing, dict) else None
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._header_params[tool["name"]] = header_params(tool.get("inputSchema"))

    async def _listen(self) -> None:
        """The GET stream, kept open while the session lives (a server may not offer one: 405)."""
        assert self._client is not None
        headers = {**self._headers(), "Accept": "text/event-stream"}
        del headers["Content-Type"]
        while not self._closed:
            try:
                async with self._client.stream("GET", headers) as response:
                    if response.status != 200:
                        return
                    await self._read(response, None)
            except (HttpError, OSError):
                pass
            await asyncio.sleep(LISTEN_RETRY_S)

    def _end(self, reason: str) -> None:
        """The session is over (once): its tasks stop and the link hears why."""
        if self._closed:
            return
        self._closed = True
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        self._on_closed(None, reason)

    def abort(self) -> None:
        """Drop the session at once."""
        self._end("aborted")

    async def close(self) -> None:
        """End the session politely (DELETE), then drop it."""
        client, session_id = self._client, self._session_id
        self._end("closed")
        if client is None:
            return
        if session_id is not None:
            with contextlib.suppress(HttpError, OSError, TimeoutError):
                await asyncio.wait_for(_delete(client, session_id), DELETE_TIMEOUT_S)
        await client.aclose()


async def _delete(client: HttpClient, session_id: str) -> None:
    async with client.stream("DELETE", {"Mcp-Session-Id": session_id}) as response:
        await response.read()


def _described(exc: Exception) -> str:
    """A transport error as its reason names it (an ``HttpError`` says what happened itself)."""
    return str(exc) if isinstance(exc, HttpError) else f"{type(exc).__name__}: {exc}"


def _error_answer(body: str, request_id: Any) -> dict[str, Any] | None:
    """A refused POST's body when it is the JSON-RPC error answering ``request_id``."""
    if request_id is None or not body.startswith("{"):
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if (
        isinstance(message, dict)
        and message.get("id") == request_id
        and isinstance(message.get("error"), dict)
    ):
        return message
    return None
